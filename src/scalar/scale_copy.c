// scale_copy.c — scalar row copy with scale (the row of the split/merge
// permute, src/attn/permute.c).
#include "kernels/kernels.h"
#include "scalar/scalar.h"

void mhsa_scale_copy__scalar(size_t n, const float *src, float *dst,
                             float scale)
{
    if (scale == 1.0f)
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    else
        for (size_t i = 0; i < n; i++)
            dst[i] = scale * src[i];
}
