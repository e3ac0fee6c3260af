// permute.c — the strided 4-D copy's loop nest (permute.h); the ISA tables
// hold only the contiguous row (scale_copy).
#include "permute.h"

// Rows this short (heads of dh <= 16) are copied by the loop nest itself:
// at dh = 8 one indirect scale_copy call per row cost more than its copy
// (11% of the instructions of the B8 T12 D32 H4 forward). The same bits:
// scale_copy is a plain copy when scale == 1 and one IEEE multiply per
// element otherwise, which is what these loops do.
enum { SHORT_ROW = 16 };

// The arguments in locals: stores through the rows might alias *a, and
// the compiler would reload every field on every row.
static void short_rows(const mhsa_permute_args *a)
{
    const mhsa_permute_args c = *a;
    size_t n3 = c.n3;
    float scale = c.scale;
    for (size_t i0 = 0; i0 < c.n0; i0++)
        for (size_t i1 = 0; i1 < c.n1; i1++)
            for (size_t i2 = 0; i2 < c.n2; i2++) {
                const float *s = c.src + i0 * c.src_s0 + i1 * c.src_s1
                                 + i2 * c.src_s2;
                float *d = c.dst + i0 * c.dst_s0 + i1 * c.dst_s1
                           + i2 * c.dst_s2;
                if (scale == 1.0f)
                    for (size_t i = 0; i < n3; i++)
                        d[i] = s[i];
                else
                    for (size_t i = 0; i < n3; i++)
                        d[i] = scale * s[i];
            }
}

void mhsa__permute_4d(const mhsa_kernels *k, const mhsa_permute_args *a)
{
    if (a->n3 <= SHORT_ROW) {
        short_rows(a);
        return;
    }
    for (size_t i0 = 0; i0 < a->n0; i0++)
        for (size_t i1 = 0; i1 < a->n1; i1++)
            for (size_t i2 = 0; i2 < a->n2; i2++)
                k->scale_copy(a->n3,
                              a->src + i0 * a->src_s0 + i1 * a->src_s1
                                  + i2 * a->src_s2,
                              a->dst + i0 * a->dst_s0 + i1 * a->dst_s1
                                  + i2 * a->dst_s2,
                              a->scale);
}
