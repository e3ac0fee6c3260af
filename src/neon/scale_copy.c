// scale_copy.c — NEON row copy with scale (the row of the split/merge
// permute, src/attn/permute.c; contract in kernels.h): 16 floats at a
// time, then 4, then a scalar tail that stops at n. scale == 1 moves bits
// without arithmetic (NaN payloads and signs of zero survive), as the
// scalar copy does.
#include <arm_neon.h>

#include "kernels/kernels.h"
#include "neon/neon.h"

static void copy_row(float *d, const float *s, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        float32x4x4_t v = vld1q_f32_x4(s + i);
        vst1q_f32_x4(d + i, v);
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(d + i, vld1q_f32(s + i));
    for (; i < n; i++)
        d[i] = s[i];
}

static void scale_row(float *d, const float *s, size_t n, float scale)
{
    float32x4_t k = vdupq_n_f32(scale);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        float32x4_t v0 = vld1q_f32(s + i), v1 = vld1q_f32(s + i + 4);
        float32x4_t v2 = vld1q_f32(s + i + 8), v3 = vld1q_f32(s + i + 12);
        vst1q_f32(d + i, vmulq_f32(v0, k));
        vst1q_f32(d + i + 4, vmulq_f32(v1, k));
        vst1q_f32(d + i + 8, vmulq_f32(v2, k));
        vst1q_f32(d + i + 12, vmulq_f32(v3, k));
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(d + i, vmulq_f32(vld1q_f32(s + i), k));
    for (; i < n; i++)
        d[i] = scale * s[i];
}

void mhsa_scale_copy__neon(size_t n, const float *src, float *dst,
                           float scale)
{
    if (scale == 1.0f)
        copy_row(dst, src, n);
    else
        scale_row(dst, src, n, scale);
}
