// permute.c — the strided 4-D copy's loop nest (permute.h); the ISA tables
// hold only the contiguous row (scale_copy).
#include "permute.h"

void mhsa__permute_4d(const mhsa_kernels *k, const mhsa_permute_args *a)
{
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
