// permute.c — the strided 4-D copy's loop nest (permute.h); the ISA tables
// hold only the contiguous row (scale_copy).
#include "permute.h"

// Rows this short (heads of dh <= 16) are copied by the loop nest itself:
// at dh = 8 one indirect scale_copy call per row cost more than its copy
// (docs/performance.md, "Measurements behind the code"). The same bits:
// scale_copy is a plain copy when scale == 1 and one IEEE multiply per
// element otherwise, which is what these loops do.
enum { SHORT_ROW = 16 };

// A row of n floats, n a constant where it is inlined into the nests
// below: the compiler then makes it a few vector moves or multiplies,
// where a loop of unknown length cost many more instructions a row of 8
// (docs/performance.md, "Measurements behind the code"). restrict: the
// rows never overlap, so no runtime check for it either.
static inline void row(const float *restrict s, float *restrict d, size_t n,
                       float scale)
{
    if (scale == 1.0f)
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    else
        for (size_t i = 0; i < n; i++)
            d[i] = scale * s[i];
}

// The loop nest for rows of N floats (0: c.n3). The arguments are in
// locals (stores through the rows might alias *a, and the compiler would
// reload every field on every row); the innermost loop runs over the
// longer of the two row dimensions (a split hands one head at a time:
// n2 = 1), and the pointers step by the strides, four rows a step (the
// loop's own counter and branch were a third of a row of 8's 9
// instructions).
#define SHORT_ROWS(NAME, N)                                               \
    static void NAME(const mhsa_permute_args *a)                          \
    {                                                                     \
        mhsa_permute_args c = *a;                                         \
        if (c.n2 == 1) {                                                  \
            c.n2 = c.n1;                                                  \
            c.src_s2 = c.src_s1;                                          \
            c.dst_s2 = c.dst_s1;                                          \
            c.n1 = 1;                                                     \
        }                                                                 \
        size_t n3 = (N) ? (size_t)(N) : c.n3;                             \
        for (size_t i0 = 0; i0 < c.n0; i0++)                              \
            for (size_t i1 = 0; i1 < c.n1; i1++) {                        \
                const float *s = c.src + i0 * c.src_s0 + i1 * c.src_s1;   \
                float *d = c.dst + i0 * c.dst_s0 + i1 * c.dst_s1;         \
                _Pragma("GCC unroll 4")                                   \
                for (size_t i2 = 0; i2 < c.n2;                            \
                     i2++, s += c.src_s2, d += c.dst_s2)                  \
                    row(s, d, n3, c.scale);                               \
            }                                                             \
    }
SHORT_ROWS(rows_8, 8)
SHORT_ROWS(rows_16, 16)
SHORT_ROWS(rows_any, 0)

static void short_rows(const mhsa_permute_args *a)
{
    if (a->n3 == 8)
        rows_8(a);
    else if (a->n3 == 16)
        rows_16(a);
    else
        rows_any(a);
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
