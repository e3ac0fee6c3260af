// convert.c — NEON conversions between fp32 and the KV cache's storage
// types (contract in kernels.h), bit for bit the scalar versions of half.h
// (test_kernel_convert.c checks every rounding class):
//  - to F16: FCVTN, rounding as FPCR says (nearest even: the Linux default
//    the library runs under); it overflows to inf and keeps NaN sign and
//    top payload bits, made quiet (FPCR.DN clear), exactly as half.h;
//  - from F16: FCVTL, exact, except that it makes a signalling NaN quiet
//    where half.h keeps the value as stored: such lanes (only an F16
//    signalling NaN written by someone else) get the quiet bit cleared;
//  - BF16 both ways in integer lanes: half.h's add of 0x7fff plus the
//    lowest kept bit, then a narrowing shift; NaN made quiet instead;
//  - 8 values per step, the last n % 8 through half.h, so nothing past n
//    is read or written.
#include <arm_neon.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "neon/neon.h"
#include "neon/vhalf.h"

// Four fp32 to BF16 (nearest even; NaN quiet with sign and payload top).
MHSA_NEON_INLINE uint16x4_t f32x4_to_bf16(float32x4_t v)
{
    uint32x4_t u = vreinterpretq_u32_f32(v);
    uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    uint32x4_t r = vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7fff)), lsb);
    uint16x4_t rounded = vshrn_n_u32(r, 16);
    uint16x4_t quiet = vorr_u16(vshrn_n_u32(u, 16), vdup_n_u16(0x0040));
    uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffff)),
                               vdupq_n_u32(0x7f800000));
    return vbsl_u16(vmovn_u32(nan), quiet, rounded);
}

// Eight F16 values to fp32 exactly as half.h: FCVTL, then signalling NaNs
// (exponent all ones, quiet bit clear, payload not 0) made signalling
// again.
MHSA_NEON_INLINE void f16x8_to_f32_exact(uint16x8_t h, float *dst)
{
    float16x8_t f = vreinterpretq_f16_u16(h);
    float32x4_t lo = vcvt_f32_f16(vget_low_f16(f));
    float32x4_t hi = vcvt_high_f32_f16(f);
    uint16x8_t a = vandq_u16(h, vdupq_n_u16(0x7fff));
    uint16x8_t snan = vandq_u16(vcgtq_u16(a, vdupq_n_u16(0x7c00)),
                                vcltq_u16(a, vdupq_n_u16(0x7e00)));
    if (vmaxvq_u16(snan)) {
        // widen the 16-bit lane masks to 32 bits, keep only the quiet bit
        uint32x4_t mlo = vmovl_u16(vget_low_u16(snan));
        uint32x4_t mhi = vmovl_high_u16(snan);
        uint32x4_t qb = vdupq_n_u32(0x00400000);
        lo = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(lo),
                                             vandq_u32(vshlq_n_u32(mlo, 16),
                                                       qb)));
        hi = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(hi),
                                             vandq_u32(vshlq_n_u32(mhi, 16),
                                                       qb)));
    }
    vst1q_f32(dst, lo);
    vst1q_f32(dst + 4, hi);
}

MHSA_NEON_INLINE size_t cvt_f16_from_f32(size_t n, const float *src,
                                         uint16_t *h)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float16x4_t lo = vcvt_f16_f32(vld1q_f32(src + i));
        float16x8_t f = vcvt_high_f16_f32(lo, vld1q_f32(src + i + 4));
        vst1q_u16(h + i, vreinterpretq_u16_f16(f));
    }
    return i;
}

MHSA_NEON_INLINE size_t cvt_bf16_from_f32(size_t n, const float *src,
                                          uint16_t *h)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x4_t lo = f32x4_to_bf16(vld1q_f32(src + i));
        uint16x4_t hi = f32x4_to_bf16(vld1q_f32(src + i + 4));
        vst1q_u16(h + i, vcombine_u16(lo, hi));
    }
    return i;
}

MHSA_NEON_INLINE size_t cvt_f16_to_f32(size_t n, const uint16_t *h,
                                       float *dst)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        f16x8_to_f32_exact(vld1q_u16(h + i), dst + i);
    return i;
}

MHSA_NEON_INLINE size_t cvt_bf16_to_f32(size_t n, const uint16_t *h,
                                        float *dst)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x8_t v = vld1q_u16(h + i);
        vst1q_f32(dst + i, mhsa_neon_bf16x4_to_f32(vget_low_u16(v)));
        vst1q_f32(dst + i + 4,
                  vreinterpretq_f32_u32(vshll_high_n_u16(v, 16)));
    }
    return i;
}

#include "kernels/convert_body.h"

MHSA_CVT_DEFINE(neon)
