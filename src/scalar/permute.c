// permute.c — scalar strided 4-D copy with scale (split/merge heads).
#include "kernels/kernels.h"
#include "scalar/scalar.h"

void mhsa_permute_4d__scalar(const mhsa_permute_args *a)
{
    for (size_t i0 = 0; i0 < a->n0; i0++)
        for (size_t i1 = 0; i1 < a->n1; i1++)
            for (size_t i2 = 0; i2 < a->n2; i2++) {
                const float *s = a->src + i0 * a->src_s0 + i1 * a->src_s1
                               + i2 * a->src_s2;
                float *d = a->dst + i0 * a->dst_s0 + i1 * a->dst_s1
                         + i2 * a->dst_s2;
                if (a->scale == 1.0f)
                    for (size_t i3 = 0; i3 < a->n3; i3++)
                        d[i3] = s[i3];
                else
                    for (size_t i3 = 0; i3 < a->n3; i3++)
                        d[i3] = a->scale * s[i3];
            }
}
