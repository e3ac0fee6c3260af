// log_f32.h — the natural logarithm the attention's log-sum-exp takes
// (lse = max + log(sum)), the one every path and ISA computes: the scalar
// reference here, and the vector kernels (kernels.h: lse_add_log) that give
// its bits lane by lane. libm's logf cannot be vectorised to its own bits,
// and its 384 calls a step were a visible part of the tiny forward+backward
// (docs/performance.md, "Measurements behind the code").
//
// In double: x = 2^e * m with m in [0.75, 1.5), log m = 2 atanh(s) with
// s = (m - 1) / (m + 1), |s| < 0.2, as the odd series 2s (1 + s^2/3 +
// s^4/5 + ... + s^10/11); the first term left out, 2 s^13 / 13, is below
// 2e-10 of the result, so the float rounding of e ln 2 + log m is the
// correctly rounded log(x) but for rare ties within that distance. Every
// step is one IEEE double operation in a fixed order (a multiply, then an
// add; no fused multiply-add), m - 1 is exact (Sterbenz), e and 2^e are
// exact: a vector lane doing the same operations gets the same bits.
//
// x converted to double first, so subnormal x count as 0 where DAZ is on
// (the library's calls run with it on) in scalar and vector code alike.
// Special values: log(+-0) = -inf, log(+inf) = +inf, log(NaN) = the NaN
// made quiet (x + x), log(x < 0) = the quiet NaN MHSA_LOG_NAN_BITS.
#ifndef MHSA_LOG_F32_H
#define MHSA_LOG_F32_H

#include <math.h>
#include <stdint.h>
#include <string.h>

// 1/11, 1/9, 1/7, 1/5, 1/3 (the series' coefficients, as double constant
// expressions, rounded once) and ln 2.
#define MHSA_LOG_C11 (1.0 / 11.0)
#define MHSA_LOG_C9 (1.0 / 9.0)
#define MHSA_LOG_C7 (1.0 / 7.0)
#define MHSA_LOG_C5 (1.0 / 5.0)
#define MHSA_LOG_C3 (1.0 / 3.0)
#define MHSA_LOG_LN2 0.69314718055994530942
#define MHSA_LOG_NAN_BITS 0x7fc00000u

// log m + e ln 2 for a positive finite normal double d (the main path).
static inline double mhsa_log_f64_core(double d)
{
    uint64_t u, mu;
    memcpy(&u, &d, sizeof u);
    double be = (double)(u >> 52);   // the biased exponent, exact
    mu = (u & 0x000fffffffffffffu) | 0x3ff0000000000000u;
    double m;
    memcpy(&m, &mu, sizeof m);       // [1, 2)
    if (m >= 1.5) {                  // to [0.75, 1.5), exactly
        m = m * 0.5;
        be = be + 1.0;
    }
    double e = be - 1023.0;
    double s = (m - 1.0) / (m + 1.0), s2 = s * s, t = s + s;
    double p = MHSA_LOG_C11;
    p = p * s2 + MHSA_LOG_C9;
    p = p * s2 + MHSA_LOG_C7;
    p = p * s2 + MHSA_LOG_C5;
    p = p * s2 + MHSA_LOG_C3;
    double lm = t + t * (s2 * p);
    return e * MHSA_LOG_LN2 + lm;
}

static inline float mhsa_log_f32(float x)
{
    double d = (double)x;
    if (d > 0.0 && d < INFINITY)
        return (float)mhsa_log_f64_core(d);
    if (d == 0.0)
        return -INFINITY;
    if (d == INFINITY)
        return INFINITY;
    if (d != d)
        return x + x;
    uint32_t nan_bits = MHSA_LOG_NAN_BITS;
    float nan;
    memcpy(&nan, &nan_bits, sizeof nan);
    return nan;
}

#endif
