// vgemv.h — the NEON register tile of the one-row products gemv_n (fp32
// rows) and gemv_n16 (F16 / BF16 rows), run by the streaming plan of
// src/kernels/gemv_plan.h (measured on Zen 3 with the AVX2 tile only: no
// Arm hardware at hand; checked for its bits under qemu). Included only by
// src/neon/gemv_n.c and gemv_n16.c.
//
// Bits: each row is one 4-lane accumulator over i in steps of 4, reduced
// by FADDP (vaddvq_f32), then the d % 4 last elements added one by one
// (multiply, then add: no contraction): kv_dot's chain (src/neon/kv_dot.c),
// so fp32 rows give its bits, and a 16-bit row, widened exactly (FCVTL;
// BF16 by a widening shift), the bits of the fp32 row holding its values.
#ifndef MHSA_NEON_VGEMV_H
#define MHSA_NEON_VGEMV_H

#include <arm_neon.h>

#include "kernels/gemv_plan.h"
#include "kernels/half.h"
#include "neon/vhalf.h"

#define MHSA_NEON_UNROLL _Pragma("GCC unroll 32")

// The plan's tile: R (<= MHSA_GEMV_STREAMS) rows `stride` bytes apart, one
// chain each, 16 elements of every row a step (unrolled so that the loads
// of the R streams interleave).
MHSA_NEON_INLINE void mhsa_gemv_rows__neon(size_t R, size_t d, const char *a,
                                           size_t stride, mhsa_dtype dt,
                                           const float *x, float *y,
                                           size_t ys, float beta)
{
    float32x4_t acc[MHSA_GEMV_STREAMS];
    for (size_t r = 0; r < R; r++)
        acc[r] = vdupq_n_f32(0.0f);
    size_t d4 = d & ~(size_t)3, i = 0;
    for (; i + 16 <= d4; i += 16)
        MHSA_NEON_UNROLL for (size_t q = 0; q < 16; q += 8) {
            float32x4_t x0 = vld1q_f32(x + i + q);
            float32x4_t x1 = vld1q_f32(x + i + q + 4);
            MHSA_NEON_UNROLL for (size_t r = 0; r < R; r++) {
                float32x4_t lo, hi;
                mhsa_neon_load8_as_f32(a + r * stride, i + q, dt, &lo, &hi);
                acc[r] = vfmaq_f32(acc[r], lo, x0);
                acc[r] = vfmaq_f32(acc[r], hi, x1);
            }
        }
    for (; i < d4; i += 4) {
        float32x4_t xv = vld1q_f32(x + i);
        for (size_t r = 0; r < R; r++)
            acc[r] = vfmaq_f32(acc[r],
                               mhsa_neon_load4_as_f32(a + r * stride, i, dt),
                               xv);
    }
    for (size_t r = 0; r < R; r++) {
        float s = vaddvq_f32(acc[r]);
        for (size_t t = d4; t < d; t++)   // scalar tail: never past d
            s += mhsa_load_as_f32(a + r * stride, t, dt) * x[t];
        y[r * ys] = beta == 0.0f ? s : beta * y[r * ys] + s;
    }
}

#endif
