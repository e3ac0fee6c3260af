// permute.c — NEON strided 4-D copy with scale (split/merge heads; contract
// in kernels.h). The innermost dimension is contiguous on both sides, so
// each (i0, i1, i2) row is a run of n3 floats: 16 at a time, then 4, then
// a scalar tail that stops at n3. scale == 1 moves bits without arithmetic
// (NaN payloads and signs of zero survive), as the scalar copy does.
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

void mhsa_permute_4d__neon(const mhsa_permute_args *a)
{
    for (size_t i0 = 0; i0 < a->n0; i0++)
        for (size_t i1 = 0; i1 < a->n1; i1++)
            for (size_t i2 = 0; i2 < a->n2; i2++) {
                const float *s = a->src + i0 * a->src_s0 + i1 * a->src_s1
                               + i2 * a->src_s2;
                float *d = a->dst + i0 * a->dst_s0 + i1 * a->dst_s1
                         + i2 * a->dst_s2;
                if (a->scale == 1.0f)
                    copy_row(d, s, a->n3);
                else
                    scale_row(d, s, a->n3, a->scale);
            }
}
