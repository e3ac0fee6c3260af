// vmath.h — NEON helpers shared by the src/neon/ kernels: a vectorised expf,
// horizontal reductions and partial (tail) loads and stores.
//
// Everything here is `static inline` and included only by src/neon/ files,
// so no NEON helper body can end up in another ISA's objects.
#ifndef MHSA_NEON_VMATH_H
#define MHSA_NEON_VMATH_H

#include <arm_neon.h>
#include <stddef.h>

// e^x for four floats, Cephes-style: x = n ln2 + r with n = round(x / ln2)
// and |r| <= ln2/2, e^r from a degree-6 polynomial (Cephes expf
// coefficients, Horner with explicit FMA), then a scale by 2^n.
//  - The reduction subtracts n ln2 in two pieces (Cody-Waite): ln2_hi has 9
//    significant bits, so n * ln2_hi is exact for every n reached here.
//  - 2^n is applied as 2^(n/2) * 2^(n - n/2): both factors are normal for
//    n in [-150, 128], so results down to the subnormal range round once,
//    as libm's do, in the default FP state; in the library's (FPCR.FZ,
//    fpenv.h) a result below FLT_MIN is flushed to +0 by the last multiply,
//    as the AVX2 and AVX-512 exps give +0 there.
//  - x is clamped to [-104, 88.72283]: large inputs give a finite value
//    just below FLT_MAX (clamped, never +inf); inputs below -103.97 (where
//    e^x rounds to 0 in fp32), including -INFINITY, give an exact +0.
//  - NaN gives NaN: FMAX/FMIN (vmaxq/vminq) propagate NaN, unlike
//    vmaxnmq, and the final select keeps it.
// Measured against double exp under qemu-aarch64, on every 13th float of
// [-87.34, 88.72] (1.7e8 inputs, all results normal): max relative error
// 1.19e-7, about 1 ulp (glibc expf: 6.0e-8). Subnormal results (x in
// [-103.9, -87.34], sampled every 1e-4) are off by at most 0.77 of the
// smallest subnormal, 2^-149.
static inline float32x4_t mhsa_neon_expf(float32x4_t x)
{
    const float32x4_t hi = vdupq_n_f32(88.72283f);
    const float32x4_t lo = vdupq_n_f32(-104.0f);
    const float32x4_t zero_below = vdupq_n_f32(-103.972076f);
    const float32x4_t log2e = vdupq_n_f32(1.44269504088896341f);
    const float32x4_t ln2_hi = vdupq_n_f32(0.693359375f);
    const float32x4_t ln2_lo = vdupq_n_f32(-2.12194440e-4f);

    float32x4_t xc = vmaxq_f32(vminq_f32(x, hi), lo);
    float32x4_t fn = vrndnq_f32(vmulq_f32(xc, log2e));
    float32x4_t r = vfmsq_f32(xc, fn, ln2_hi);   // xc - fn * ln2_hi
    r = vfmsq_f32(r, fn, ln2_lo);

    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    float32x4_t r2 = vmulq_f32(r, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, r2);   // 1 + r + p r^2

    // NaN converts to 0 here; p is already NaN, so the result stays NaN.
    int32x4_t n = vcvtq_s32_f32(fn);
    int32x4_t n1 = vshrq_n_s32(n, 1);
    int32x4_t n2 = vsubq_s32(n, n1);
    const int32x4_t bias = vdupq_n_s32(127);
    float32x4_t s1 =
        vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    float32x4_t s2 =
        vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
    float32x4_t y = vmulq_f32(vmulq_f32(p, s1), s2);

    uint32x4_t under = vcltq_f32(x, zero_below);   // false for NaN
    return vbslq_f32(under, vdupq_n_f32(0.0f), y);
}

// Loads x[0..n) (n < 4) into the low lanes; the other lanes get `fill`.
// Never touches memory past x[n-1].
static inline float32x4_t mhsa_neon_load_tail(const float *x, size_t n,
                                              float fill)
{
    float t[4] = { fill, fill, fill, fill };
    for (size_t i = 0; i < n; i++)
        t[i] = x[i];
    return vld1q_f32(t);
}

// Stores the low n lanes (n < 4) of v to y[0..n).
static inline void mhsa_neon_store_tail(float *y, size_t n, float32x4_t v)
{
    float t[4];
    vst1q_f32(t, v);
    for (size_t i = 0; i < n; i++)
        y[i] = t[i];
}

// All-ones in lanes i >= k (k <= 4): the lanes of a 4-key chunk past a
// limit. Compares small lane numbers, so no key index can overflow.
static inline uint32x4_t mhsa_neon_lanes_from(size_t k)
{
    static const uint32_t lane[4] = { 0, 1, 2, 3 };
    return vcgeq_u32(vld1q_u32(lane), vdupq_n_u32((uint32_t)k));
}

#endif
