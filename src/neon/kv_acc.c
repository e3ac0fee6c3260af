// kv_acc.c — NEON: m output rows += p V over n cached rows stored as
// fp32, F16 or BF16 (contract in kernels.h), in the decode streaming plan
// of src/kernels/kv_plan.h (measured on Zen 3 with the AVX2 tiles, not on
// Arm: see there); this file holds the register tiles: query rows x column
// vectors 4x4, 3x4, 2x8 and 1x8.
// Bits: every output element is one chain over j in order from its old
// value, fused for the columns below d & ~3 and a multiply and an add for
// the last d % 4, as in gemv_t; grouping and blocking do not change it, so
// a row's result has the same bits for any m, and F32 rows give gemv_t's
// bits (test_kernel_gemv.c checks both).
#include <arm_neon.h>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "kernels/kv_plan.h"
#include "neon/neon.h"
#include "neon/vhalf.h"

// o[r*ldo + i + 4*v] += sum_j p[r*ldp + j] * V[j][i + 4*v] for r < RB,
// v < NV (NV even, or 1), j < jn: RB*NV fused chains, each over j in order.
MHSA_NEON_INLINE void acc_tile(size_t RB, size_t NV, size_t jn,
                               const float *p, size_t ldp, const char *v,
                               size_t row_bytes, size_t i, mhsa_dtype dt,
                               float *o, size_t ldo)
{
    float32x4_t acc[4][8];
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t nv = 0; nv < NV; nv++)
            acc[rb][nv] = vld1q_f32(o + rb * ldo + i + 4 * nv);
    for (size_t j = 0; j < jn; j++) {
        const char *row = v + j * row_bytes;
        float32x4_t pb[4];
        for (size_t rb = 0; rb < RB; rb++)
            pb[rb] = vld1q_dup_f32(p + rb * ldp + j);
        if (NV == 1) {
            float32x4_t x = mhsa_neon_load4_as_f32(row, i, dt);
            for (size_t rb = 0; rb < RB; rb++)
                acc[rb][0] = vfmaq_f32(acc[rb][0], pb[rb], x);
            continue;
        }
        for (size_t nv = 0; nv < NV; nv += 2) {
            float32x4_t lo, hi;
            mhsa_neon_load8_as_f32(row, i + 4 * nv, dt, &lo, &hi);
            for (size_t rb = 0; rb < RB; rb++) {
                acc[rb][nv] = vfmaq_f32(acc[rb][nv], pb[rb], lo);
                acc[rb][nv + 1] = vfmaq_f32(acc[rb][nv + 1], pb[rb], hi);
            }
        }
    }
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t nv = 0; nv < NV; nv++)
            vst1q_f32(o + rb * ldo + i + 4 * nv, acc[rb][nv]);
}

// Rows [0, jn) of a block for RB output rows, all d columns: NV vectors at
// a time, then single vectors, then the last d % 4 columns one by one
// (multiply, then add, as gemv_t).
MHSA_NEON_INLINE void acc_rows(size_t RB, size_t NV, size_t jn, size_t d,
                               const float *p, size_t ldp, const char *v,
                               size_t row_bytes, mhsa_dtype dt, float *o,
                               size_t ldo)
{
    size_t i = 0;
    for (; i + 4 * NV <= d; i += 4 * NV)
        acc_tile(RB, NV, jn, p, ldp, v, row_bytes, i, dt, o, ldo);
    for (; i + 4 <= d; i += 4)
        acc_tile(RB, 1, jn, p, ldp, v, row_bytes, i, dt, o, ldo);
    for (; i < d; i++)
        for (size_t rb = 0; rb < RB; rb++) {
            float acc = o[rb * ldo + i];
            for (size_t j = 0; j < jn; j++)
                acc += p[rb * ldp + j]
                     * mhsa_load_as_f32(v + j * row_bytes, i, dt);
            o[rb * ldo + i] = acc;
        }
}

// The plan's group (kv_plan.h).
MHSA_NEON_INLINE void acc_group(size_t rows, size_t jn, size_t d,
                                const float *p, size_t ldp, const char *v,
                                size_t row_bytes, mhsa_dtype dt, float *o,
                                size_t ldo)
{
    // column vectors per tile: 8, 8, 4, 4 for 1 to 4 rows
    acc_rows(rows, rows <= 2 ? 8 : 4, jn, d, p, ldp, v, row_bytes, dt, o,
             ldo);
}

void mhsa_kv_acc__neon(size_t m, size_t n, size_t d, const float *p,
                       size_t ldp, const void *v, size_t ldv, mhsa_dtype dt,
                       float *o, size_t ldo)
{
    mhsa_kv_acc_plan_dt(acc_group, m, n, d, p, ldp, v, ldv, dt, o, ldo);
}
