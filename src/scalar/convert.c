// convert.c — scalar conversions between fp32 and the KV cache's storage
// types: the bit-exact software versions of half.h, the reference for the
// SIMD ones.
#include <string.h>

#include "kernels/half.h"
#include "scalar/scalar.h"

void mhsa_cvt_from_f32__scalar(size_t n, const float *src, void *dst,
                               mhsa_dtype dt)
{
    uint16_t *h = dst;
    switch (dt) {
    case MHSA_F16:
        for (size_t i = 0; i < n; i++)
            h[i] = mhsa_f32_to_f16(src[i]);
        return;
    case MHSA_BF16:
        for (size_t i = 0; i < n; i++)
            h[i] = mhsa_f32_to_bf16(src[i]);
        return;
    case MHSA_F32:
        break;
    }
    memcpy(dst, src, n * sizeof(float));
}

void mhsa_cvt_to_f32__scalar(size_t n, const void *src, mhsa_dtype dt,
                             float *dst)
{
    const uint16_t *h = src;
    switch (dt) {
    case MHSA_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = mhsa_f16_to_f32(h[i]);
        return;
    case MHSA_BF16:
        for (size_t i = 0; i < n; i++)
            dst[i] = mhsa_bf16_to_f32(h[i]);
        return;
    case MHSA_F32:
        break;
    }
    memcpy(dst, src, n * sizeof(float));
}
