// half.h — bit-exact software conversions between fp32 and the KV cache's
// 16-bit storage types (IEEE binary16 "F16" and bfloat16 "BF16").
//
// The reference the SIMD conversions are tested against bit for bit, and
// the tails of SIMD loops. Integer arithmetic only, so the result does not
// depend on the FP control state (FTZ/DAZ) or on the compiler contracting
// anything. Rounding is to nearest, ties to even. NaN keeps its sign and
// top payload bits and is made quiet, as F16C's vcvtps2ph and AArch64's
// fcvtn do (kernels.h).
#ifndef MHSA_HALF_H
#define MHSA_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mhsa.h"

static inline uint32_t mhsa_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float mhsa_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t mhsa_f32_to_f16(float f)
{
    uint32_t u = mhsa_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t x = u & 0x7fffffffu;
    if (x > 0x7f800000u)                      // NaN: quiet, payload top bits
        return (uint16_t)(sign | 0x7e00u | ((x & 0x7fffffu) >> 13));
    if (x >= 0x477ff000u)                     // >= 65520 rounds to inf
        return (uint16_t)(sign | 0x7c00u);
    if (x >= 0x38800000u) {                   // normal in F16 (>= 2^-14)
        // Round the 23-bit mantissa to 10 bits, ties to even; a carry into
        // the exponent is the right result. Then rebias 127 -> 15.
        uint32_t r = x + 0xfffu + ((x >> 13) & 1u);
        return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
    }
    if (x < 0x33000000u)                      // below 2^-25: rounds to 0
        return sign;
    // Subnormal in F16: value = m * 2^-24 with m = mant >> (126 - e).
    uint32_t e = x >> 23, mant = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                 // 14 .. 24
    uint32_t m = mant >> shift, rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (m & 1u)))
        m++;                                  // may become 0x400: 2^-14
    return (uint16_t)(sign | m);
}

static inline float mhsa_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)                            // inf or NaN, payload kept
        return mhsa_bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0)
            return mhsa_bits_f32(sign);
        int ex = 1;                           // normalise the subnormal
        while (!(m & 0x400u)) {
            m <<= 1;
            ex--;
        }
        return mhsa_bits_f32(sign | ((uint32_t)(ex + 112) << 23) |
                             ((m & 0x3ffu) << 13));
    }
    return mhsa_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

static inline uint16_t mhsa_f32_to_bf16(float f)
{
    uint32_t u = mhsa_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)      // NaN: quiet, sign and payload
        return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float mhsa_bf16_to_f32(uint16_t h)
{
    return mhsa_bits_f32((uint32_t)h << 16);
}

// Element i of a row stored as dt, as fp32.
static inline float mhsa_load_as_f32(const void *row, size_t i, mhsa_dtype dt)
{
    if (dt == MHSA_F32)
        return ((const float *)row)[i];
    uint16_t h = ((const uint16_t *)row)[i];
    return dt == MHSA_F16 ? mhsa_f16_to_f32(h) : mhsa_bf16_to_f32(h);
}

#endif
