// vhalf.h — static inline NEON helpers that read rows stored as fp32, F16
// or BF16 (the KV cache's dtypes), converting in registers: F16 by FCVTL
// (exact), BF16 by a widening shift. Shared by src/neon/kv_dot.c, kv_acc.c
// and src/neon/convert.c; included only by src/neon/ files.
#ifndef MHSA_NEON_VHALF_H
#define MHSA_NEON_VHALF_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>

#include "mhsa.h"

// Forced inline: the callers pass dt as a constant, so each dtype gets its
// own loop with no dtype test inside.
#define MHSA_NEON_INLINE static inline __attribute__((always_inline))

// Four F16 / BF16 values to fp32.
MHSA_NEON_INLINE float32x4_t mhsa_neon_f16x4_to_f32(uint16x4_t h)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

MHSA_NEON_INLINE float32x4_t mhsa_neon_bf16x4_to_f32(uint16x4_t h)
{
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

// Elements i..i+3 of a row stored as dt, as fp32.
MHSA_NEON_INLINE float32x4_t mhsa_neon_load4_as_f32(const void *row,
                                                    size_t i, mhsa_dtype dt)
{
    if (dt == MHSA_F32)
        return vld1q_f32((const float *)row + i);
    uint16x4_t h = vld1_u16((const uint16_t *)row + i);
    return dt == MHSA_F16 ? mhsa_neon_f16x4_to_f32(h)
                          : mhsa_neon_bf16x4_to_f32(h);
}

// Elements i..i+7 as two vectors (one 128-bit load for 16-bit rows).
MHSA_NEON_INLINE void mhsa_neon_load8_as_f32(const void *row, size_t i,
                                             mhsa_dtype dt, float32x4_t *lo,
                                             float32x4_t *hi)
{
    if (dt == MHSA_F32) {
        *lo = vld1q_f32((const float *)row + i);
        *hi = vld1q_f32((const float *)row + i + 4);
        return;
    }
    uint16x8_t h = vld1q_u16((const uint16_t *)row + i);
    if (dt == MHSA_F16) {
        float16x8_t f = vreinterpretq_f16_u16(h);
        *lo = vcvt_f32_f16(vget_low_f16(f));
        *hi = vcvt_high_f32_f16(f);
    } else {
        *lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
        *hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
    }
}

#endif
