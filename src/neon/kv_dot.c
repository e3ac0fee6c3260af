// kv_dot.c — NEON scores of m query rows against n cached keys stored as
// fp32, F16 or BF16 (contract in kernels.h), in the decode streaming plan
// of src/kernels/kv_plan.h (measured on Zen 3 with the AVX2 tiles, not on
// Arm: see there); this file holds the register tiles: keys x query rows
// accumulators 4x4, 4x3, 8x2 and 8x1, 8 to 16 independent chains (AArch64
// has 32 vector registers), F16 converted by FCVTL and BF16 by a widening
// shift in registers.
// Bits: every (query row, key) dot product is one 4-lane chain over i in
// steps of 4, reduced by FADDP (vaddvq_f32), then the d % 4 last elements
// added one by one (multiply, then add: no contraction), exactly as
// gemv_n; grouping and blocking do not change it, so a row's result has
// the same bits for any m, and F32 rows give gemv_n's bits
// (test_kernel_gemv.c checks both).
#include <arm_neon.h>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "kernels/kv_plan.h"
#include "neon/neon.h"
#include "neon/vhalf.h"

// s[r*lds + jb] = q_r . K_{jb} for jb < JB keys and r < RB query rows.
MHSA_NEON_INLINE void dot_tile(size_t JB, size_t RB, size_t d,
                               const float *q, size_t ldq, const char *k,
                               size_t row_bytes, mhsa_dtype dt, float *s,
                               size_t lds)
{
    float32x4_t acc[8][4];
    for (size_t jb = 0; jb < JB; jb++)
        for (size_t rb = 0; rb < RB; rb++)
            acc[jb][rb] = vdupq_n_f32(0.0f);
    size_t d4 = d & ~(size_t)3, i = 0;
    for (; i + 8 <= d4; i += 8) {
        float32x4_t q0[4], q1[4];
        for (size_t rb = 0; rb < RB; rb++) {
            q0[rb] = vld1q_f32(q + rb * ldq + i);
            q1[rb] = vld1q_f32(q + rb * ldq + i + 4);
        }
        for (size_t jb = 0; jb < JB; jb++) {
            float32x4_t lo, hi;
            mhsa_neon_load8_as_f32(k + jb * row_bytes, i, dt, &lo, &hi);
            for (size_t rb = 0; rb < RB; rb++) {
                acc[jb][rb] = vfmaq_f32(acc[jb][rb], lo, q0[rb]);
                acc[jb][rb] = vfmaq_f32(acc[jb][rb], hi, q1[rb]);
            }
        }
    }
    if (i < d4) {   // one block of 4 left
        float32x4_t q0[4];
        for (size_t rb = 0; rb < RB; rb++)
            q0[rb] = vld1q_f32(q + rb * ldq + i);
        for (size_t jb = 0; jb < JB; jb++) {
            float32x4_t x = mhsa_neon_load4_as_f32(k + jb * row_bytes, i, dt);
            for (size_t rb = 0; rb < RB; rb++)
                acc[jb][rb] = vfmaq_f32(acc[jb][rb], x, q0[rb]);
        }
    }
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t jb = 0; jb < JB; jb++) {
            float t = vaddvq_f32(acc[jb][rb]);
            for (size_t ii = d4; ii < d; ii++)   // scalar tail, as gemv_n
                t += mhsa_load_as_f32(k + jb * row_bytes, ii, dt)
                   * q[rb * ldq + ii];
            s[rb * lds + jb] = t;
        }
}

// Keys [0, jn) of a block for RB query rows, JB keys at a time.
MHSA_NEON_INLINE void dot_rows(size_t JB, size_t RB, size_t jn, size_t d,
                               const float *q, size_t ldq, const char *k,
                               size_t row_bytes, mhsa_dtype dt, float *s,
                               size_t lds)
{
    size_t j = 0;
    for (; j + JB <= jn; j += JB)
        dot_tile(JB, RB, d, q, ldq, k + j * row_bytes, row_bytes, dt, s + j,
                 lds);
    for (; j < jn; j++)
        dot_tile(1, RB, d, q, ldq, k + j * row_bytes, row_bytes, dt, s + j,
                 lds);
}

// The plan's group (kv_plan.h); variant is unused on NEON.
MHSA_NEON_INLINE void dot_group(size_t rows, int variant, size_t jn,
                                size_t d, const float *q, size_t ldq,
                                const char *k, size_t row_bytes,
                                mhsa_dtype dt, float *s, size_t lds)
{
    (void)variant;
    // keys per tile: 8, 8, 4, 4 for 1 to 4 rows
    dot_rows(rows <= 2 ? 8 : 4, rows, jn, d, q, ldq, k, row_bytes, dt, s,
             lds);
}

void mhsa_kv_dot__neon(size_t m, size_t n, size_t d, const float *q,
                       size_t ldq, const void *k, size_t ldk, mhsa_dtype dt,
                       float *s, size_t lds)
{
    mhsa_kv_dot_plan_dt(dot_group, m, n, d, q, ldq, k, ldk, dt, s, lds);
}
