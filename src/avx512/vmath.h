// vmath.h — static inline AVX-512 helpers shared by the src/avx512/ files:
// tail masks, horizontal reductions, a vectorised expf and loads of K/V
// rows stored as fp32, f16 or bf16. Included only by files compiled for
// AVX-512 (static inline, so no AVX-512 body can be picked up by a
// baseline caller through the linker).
#ifndef MHSA_AVX512_VMATH_H
#define MHSA_AVX512_VMATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "avx512/intrin.h"
#include "kernels/x86_htree.h"

#define MHSA_AVX512_INLINE static inline __attribute__((always_inline))

// Lane mask with the first n lanes set (all 16 for n >= 16). Masked-off
// lanes of a load or store are neither read nor written (AVX-512 fault
// suppression), so tails never touch memory past n.
MHSA_AVX512_INLINE __mmask16 mhsa_mask16__avx512(size_t n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

// Upper 256 bits of v (vextractf64x4 is AVX512F; vextractf32x8 needs DQ
// and has no SIMDe alias).
MHSA_AVX512_INLINE __m256 mhsa_hi256__avx512(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// Horizontal sum and max by halving: a fixed tree, so the bits depend only
// on v (written out rather than _mm512_reduce_add_ps, whose tree is the
// compiler's): the two 256-bit halves, then kernels/x86_htree.h's tree.
MHSA_AVX512_INLINE float mhsa_hsum__avx512(__m512 v)
{
    return mhsa_htree_add8(_mm256_add_ps(_mm512_castps512_ps256(v),
                                         mhsa_hi256__avx512(v)));
}

// Max of 16 lanes that hold no NaN (callers keep NaN out: max_ps(x, acc)
// returns acc when x is NaN).
MHSA_AVX512_INLINE float mhsa_hmax__avx512(__m512 v)
{
    return mhsa_htree_max8(_mm256_max_ps(_mm512_castps512_ps256(v),
                                         mhsa_hi256__avx512(v)));
}

// Lane by lane, the max of the 16 key vectors x[0 .. 16) of a transposed
// small tile in mhsa_hmax__avx512's order (x[t] against x[t + 8], then
// t + 4, t + 2, 0 and 1), then against -inf as the online softmax takes a
// new max (if (!(m_new > m_old)) m_new = m_old, with m_old = -inf): the
// row maxima of the fused small views, which must give the tiled path's
// bits. x holds no NaN (the callers decline such tiles first).
MHSA_AVX512_INLINE __m512 mhsa_keys_max16__avx512(const __m512 x[16])
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 y[8];
    for (size_t t = 0; t < 8; t++)
        y[t] = _mm512_max_ps(x[t], x[t + 8]);
    for (size_t t = 0; t < 4; t++)
        y[t] = _mm512_max_ps(y[t], y[t + 4]);
    for (size_t t = 0; t < 2; t++)
        y[t] = _mm512_max_ps(y[t], y[t + 2]);
    __m512 mx = _mm512_max_ps(y[0], y[1]);
    return _mm512_mask_mov_ps(ninf, _mm512_cmp_ps_mask(mx, ninf, _CMP_GT_OQ),
                              mx);
}

// The sum of eight vectors as the small views close their weight sums:
// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)), lane by lane.
MHSA_AVX512_INLINE __m512 mhsa_sum8_tree__avx512(const __m512 s[8])
{
    __m512 h[4];
    for (size_t t = 0; t < 4; t++)
        h[t] = _mm512_add_ps(s[t], s[t + 4]);
    return _mm512_add_ps(_mm512_add_ps(h[0], h[2]), _mm512_add_ps(h[1], h[3]));
}

// The trees of mhsa_hmax__avx512 (max != 0) or mhsa_hsum__avx512 over 16
// vectors at once: lane i of the result is hmax(v[i]) or hsum(v[i]), bit
// for bit. Each level of the tree pairs the same lanes (t and t + 8, then
// t and t + 4, t and t + 2, 0 and 1) with the same operand first, which
// matters for max (maxps returns its second operand on a +0/-0 tie or a
// NaN); for add only the payload kept from two different NaNs could
// depend on it, and compilers commute adds anyway. All 16 vectors take
// two shuffles and one operation per pair of vectors a level: 45
// instructions where 16 calls take 128. Rows are paired (i, i + 4) in
// 0..3 and 8..11 so that the result comes out in order, with no permute.
MHSA_AVX512_INLINE __m512 mhsa_tree_op__avx512(__m512 a, __m512 b, int max)
{
    return max ? _mm512_max_ps(a, b) : _mm512_add_ps(a, b);
}

MHSA_AVX512_INLINE __m512 mhsa_tree16_lanes__avx512(const __m512 v[16],
                                                   int max)
{
    // Per row, lanes t vs t + 8: rows (i, i + 4) share a vector, row i in
    // its low 256 bits.
    __m512 h[8];
    for (int e = 0; e < 8; e++) {
        __m512 a = v[e < 4 ? e : e + 4], b = v[e < 4 ? e + 4 : e + 8];
        h[e] = mhsa_tree_op__avx512(_mm512_shuffle_f32x4(a, b, 0x44),
                                    _mm512_shuffle_f32x4(a, b, 0xEE), max);
    }
    // t vs t + 4: q[e] holds rows e, e + 4, e + 8, e + 12, one per 128
    // bits.
    __m512 q[4];
    for (int e = 0; e < 4; e++)
        q[e] = mhsa_tree_op__avx512(
            _mm512_shuffle_f32x4(h[e], h[e + 4], 0x88),
            _mm512_shuffle_f32x4(h[e], h[e + 4], 0xDD), max);
    // t vs t + 2 (movehl), two rows per 128 bits; then 0 vs 1 (movehdup),
    // four rows per 128 bits: rows 4k .. 4k + 3 in the lanes 4k ...
    __m512 u0 = mhsa_tree_op__avx512(_mm512_shuffle_ps(q[0], q[1], 0x44),
                                     _mm512_shuffle_ps(q[0], q[1], 0xEE),
                                     max);
    __m512 u1 = mhsa_tree_op__avx512(_mm512_shuffle_ps(q[2], q[3], 0x44),
                                     _mm512_shuffle_ps(q[2], q[3], 0xEE),
                                     max);
    return mhsa_tree_op__avx512(_mm512_shuffle_ps(u0, u1, 0x88),
                                _mm512_shuffle_ps(u0, u1, 0xDD), max);
}

// exp(x) for 16 floats. Range reduction x = n ln2 + r, |r| <= ln2/2, with
// n = rint(x / ln2) (vrndscaleps) and ln2 split in two (Cody-Waite, the low
// part through FMA); exp(r) = 1 + r P(r) with P of degree 5, a minimax fit
// of the relative error on [-ln2/2, ln2/2] (tools/fit-exp-poly.py: 2.0e-9
// before rounding, one degree more than the AVX2 exp's, whose fit error is
// 9.2e-8); then vscalefps multiplies by 2^n with a single rounding, for
// every n in [-126, 128] (no split of the scale as in the AVX2 exp).
// The special values are the AVX2 exp's (src/avx2/vmath.h):
//  - x < -87.33654 (just above ln FLT_MIN, and -inf) gives an exact +0: no
//    result is denormal, so softmax never feeds denormals to P.V;
//  - x > ln(FLT_MAX) = 88.72283 (and +inf) gives +inf;
//  - NaN gives NaN (each step keeps its NaN operand).
// Arguments outside [-87.33654, 88.72283] are not clamped first: whatever
// the reduction and vscalefps make of them is replaced by the masked moves
// (+0, +inf), and inside the range a clamp is the identity, so the bits are
// a clamped version's (which spent a min and a max of ~17 operations).
// check_over: 0 where the caller knows x <= 0 or NaN (softmax's x - max,
// rescale factors), which drops the +inf test.
// Accuracy against double exp over a dense sweep of [-87.3, 88.7]: see
// tests/test_avx512_emul.c (avx512_exp_accuracy; measured on the emulated
// build, whose arithmetic is the hardware's bit for bit).
MHSA_AVX512_INLINE __m512 mhsa_exp_core__avx512(__m512 x, int check_over)
{
    const __m512 lo = _mm512_set1_ps(-87.33654f);
    const __m512 hi = _mm512_set1_ps(88.72283172607421875f);
    const __m512 log2e = _mm512_set1_ps(0x1.715476p+0f);
    const __m512 minus_ln2_hi = _mm512_set1_ps(-0x1.62E43p-1f);
    const __m512 minus_ln2_lo = _mm512_set1_ps(0x1.05C61p-29f);
    const __m512 c5 = _mm512_set1_ps(0x1.6ae6e0p-10f);
    const __m512 c4 = _mm512_set1_ps(0x1.1267d8p-7f);
    const __m512 c3 = _mm512_set1_ps(0x1.555824p-5f);
    const __m512 c2 = _mm512_set1_ps(0x1.555418p-3f);
    const __m512 c1 = _mm512_set1_ps(0x1.fffffcp-2f);
    const __m512 one = _mm512_set1_ps(1.0f);

    __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);

    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e),
                                    _MM_FROUND_TO_NEAREST_INT |
                                    _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(n, minus_ln2_hi, x);
    r = _mm512_fmadd_ps(n, minus_ln2_lo, r);

    __m512 p = _mm512_fmadd_ps(c5, r, c4);
    p = _mm512_fmadd_ps(p, r, c3);
    p = _mm512_fmadd_ps(p, r, c2);
    p = _mm512_fmadd_ps(p, r, c1);
    p = _mm512_fmadd_ps(p, r, one);
    __m512 e = _mm512_scalef_ps(_mm512_fmadd_ps(p, r, one), n);

    e = _mm512_mask_mov_ps(e, under, _mm512_setzero_ps());
    if (!check_over)
        return e;
    __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
    return _mm512_mask_mov_ps(e, over, _mm512_set1_ps(__builtin_inff()));
}

MHSA_AVX512_INLINE __m512 mhsa_exp__avx512(__m512 x)
{
    return mhsa_exp_core__avx512(x, 1);
}

// exp(x) for x <= 0 or NaN (mhsa_exp_core__avx512's check_over).
MHSA_AVX512_INLINE __m512 mhsa_exp_nonpos__avx512(__m512 x)
{
    return mhsa_exp_core__avx512(x, 0);
}

// ---- rows of a K/V cache in any storage type -----------------------------

// 16 elements i.. of a row stored as dt, as fp32 (exact); lanes outside mk
// are 0 and not read. dt is a constant wherever this is inlined.
MHSA_AVX512_INLINE __m512 mhsa_load_as_f32__avx512(const void *row, size_t i,
                                                  mhsa_dtype dt, __mmask16 mk)
{
    if (dt == MHSA_F32)
        return _mm512_maskz_loadu_ps(mk, (const float *)row + i);
    __m256i h = _mm256_maskz_loadu_epi16(mk, (const uint16_t *)row + i);
    if (dt == MHSA_F16)
        return _mm512_cvtph_ps(h);
    // bf16 is the top half of an fp32
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h),
                                                 16));
}

// The same for 16 whole elements (no mask).
MHSA_AVX512_INLINE __m512 mhsa_load16_as_f32__avx512(const void *row,
                                                    size_t i, mhsa_dtype dt)
{
    if (dt == MHSA_F32)
        return _mm512_loadu_ps((const float *)row + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)row
                                                     + i));
    if (dt == MHSA_F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h),
                                                 16));
}

#endif
