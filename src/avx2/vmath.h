// vmath.h — static inline AVX2/FMA helpers shared by the src/avx2/ files:
// tail masks, horizontal reductions, the short rows' lane max and a
// vectorised expf. Included only by
// files compiled with -mavx2 -mfma (static inline, so no AVX2 body can be
// picked up by a baseline caller through the linker).
#ifndef MHSA_AVX2_VMATH_H
#define MHSA_AVX2_VMATH_H

#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#include "kernels/x86_htree.h"

// Lane mask with the first n (0..8) lanes set, for _mm256_mask{load,store}_ps:
// masked-off lanes are neither read nor written, so tails never touch memory
// past n (the kernel contract in kernels.h).
static inline __m256i mhsa_tail_mask__avx2(size_t n)
{
    static const int lanes[16] = { -1, -1, -1, -1, -1, -1, -1, -1,
                                   0,  0,  0,  0,  0,  0,  0,  0 };
    return _mm256_loadu_si256((const __m256i *)(lanes + 8 - (n > 8 ? 8 : n)));
}

// Horizontal max and sum: the fixed trees of kernels/x86_htree.h.
static inline float mhsa_hmax_ps__avx2(__m256 v)
{
    return mhsa_htree_max8(v);
}

// Lane i: the max of lane i over the vectors s[0 .. n), n <= 16 (-inf
// when n == 0), taken in the one-row softmax's order: s[j] against
// s[8 + j] (each against -inf first), then a tree over the eight. The
// online softmax's eight-rows path and the fused small view both take it,
// since their bits must agree with that one-row path and with each other.
static inline __m256 mhsa_lane_max16__avx2(const __m256 *s, size_t n)
{
    __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 v[8];
    for (size_t j = 0; j < 8; j++) {
        v[j] = j < n ? _mm256_max_ps(s[j], ninf) : ninf;
        if (8 + j < n)
            v[j] = _mm256_max_ps(s[8 + j], v[j]);
    }
    for (size_t j = 0; j < 4; j++)
        v[j] = _mm256_max_ps(v[j], v[j + 4]);
    for (size_t j = 0; j < 2; j++)
        v[j] = _mm256_max_ps(v[j], v[j + 2]);
    return _mm256_max_ps(v[0], v[1]);
}

static inline float mhsa_hsum_ps__avx2(__m256 v)
{
    return mhsa_htree_add8(v);
}

// exp(x) for 8 floats. Range reduction x = n ln2 + r, |r| <= ln2/2, with
// n = rint(x / ln2) and ln2 split in two (Cody–Waite, the low part through
// FMA), then a degree-5 minimax polynomial for exp(r) (the coefficients of
// XNNPACK's "rr2_p5" kernels) and the scale 2^n applied as 2^n1 * 2^n2 with
// n1 = n >> 1, so that n = 128 (x just below ln FLT_MAX) needs no special
// case.
//  - x < ln(FLT_MIN) = -87.3365 (and -inf) gives an exact +0: results that
//    would be denormal are flushed, so softmax never feeds denormals to P·V;
//  - x > ln(FLT_MAX) = 88.7228 (and +inf) gives +inf;
//  - NaN gives NaN (each step keeps its NaN operand; the integer scale of a
//    NaN is finite).
// Arguments outside [-87.3365, 88.7228] are not clamped first: whatever the
// reduction and the integer scale make of them is replaced by the masks
// (+0, +inf), and inside the range a clamp is the identity, so the bits are
// a clamped version's. check_over: 0 where the caller knows x <= 0 or NaN
// (softmax's x - max, rescale factors), which drops the +inf blend.
// Measured max relative error vs double exp over a dense sweep of
// [-87, 88] (test_kernel_softmax.c, avx2_exp_accuracy, 2^22 points):
// 1.62e-7, i.e. under 2 ulp; exp(0) is exactly 1.
static inline __m256 mhsa_exp_core_ps__avx2(__m256 x, int check_over)
{
    const __m256 lo = _mm256_set1_ps(-87.33654f);
    const __m256 hi = _mm256_set1_ps(88.72283172607421875f);
    const __m256 log2e = _mm256_set1_ps(0x1.715476p+0f);
    const __m256 minus_ln2_hi = _mm256_set1_ps(-0x1.62E43p-1f);
    const __m256 minus_ln2_lo = _mm256_set1_ps(0x1.05C61p-29f);
    const __m256 c5 = _mm256_set1_ps(0x1.0F9F9Cp-7f);
    const __m256 c4 = _mm256_set1_ps(0x1.573A1Ap-5f);
    const __m256 c3 = _mm256_set1_ps(0x1.555A80p-3f);
    const __m256 c2 = _mm256_set1_ps(0x1.FFFDC6p-2f);
    const __m256 c1 = _mm256_set1_ps(0x1.FFFFF6p-1f);

    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);

    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, log2e),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fmadd_ps(n, minus_ln2_hi, x);
    r = _mm256_fmadd_ps(n, minus_ln2_lo, r);

    __m256 p = _mm256_fmadd_ps(c5, r, c4);
    p = _mm256_fmadd_ps(p, r, c3);
    p = _mm256_fmadd_ps(p, r, c2);
    p = _mm256_fmadd_ps(p, r, c1);

    // n in [-126, 128]: n1, n2 in [-63, 64], both 2^n1 and 2^n2 normal.
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));

    // exp(r) = 1 + r p(r); scaled by 2^n1 first so that the FMA rounds once.
    __m256 t = _mm256_mul_ps(r, s1);
    __m256 e = _mm256_mul_ps(_mm256_fmadd_ps(t, p, s1), s2);

    e = _mm256_andnot_ps(under, e);
    if (!check_over)
        return e;
    __m256 over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
    return _mm256_blendv_ps(e, _mm256_set1_ps(__builtin_inff()), over);
}

static inline __m256 mhsa_exp_ps__avx2(__m256 x)
{
    return mhsa_exp_core_ps__avx2(x, 1);
}

// exp(x) for x <= 0 or NaN (mhsa_exp_core_ps__avx2's check_over).
static inline __m256 mhsa_exp_nonpos_ps__avx2(__m256 x)
{
    return mhsa_exp_core_ps__avx2(x, 0);
}

#endif
