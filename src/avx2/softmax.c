// softmax.c — AVX2 online softmax (forward step, backward, whole row).
//
// Same rules as the scalar reference (kernels.h, src/scalar/softmax.c),
// 8 keys per step with masked tails, and the vectorised exp of vmath.h
// (max relative error 1.62e-7, results below FLT_MIN flushed to +0).
// Blocked keys are decided before a score is used: the causal rule cuts the
// row to its first n_vis keys (the rest are written as 0 without being
// read), and a -INFINITY mask entry replaces the score by -INFINITY through
// a blend, so a NaN score under a blocked key never reaches max, p or sum.
// Online normaliser: Milakov & Gimelshein 2018; FlashAttention.
#include <math.h>
#include <immintrin.h>

#include "kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"

// Keys j < n_vis of row r are not blocked by the causal rule.
static size_t visible(const mhsa_mask_view *mv, size_t r, size_t n)
{
    if (!mv->causal)
        return n;
    size_t q = mv->q0 + r;
    if (q < mv->k0)
        return 0;
    size_t v = q - mv->k0 + 1;   // k0 + j <= q0 + r  <=>  j < v
    return v < n ? v : n;
}

// cnt (1..8) values at p; lanes >= cnt are -INFINITY, never loaded.
static inline __m256 load_ninf(const float *p, size_t cnt)
{
    if (cnt >= 8)
        return _mm256_loadu_ps(p);
    __m256i mk = mhsa_tail_mask__avx2(cnt);
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
                            _mm256_maskload_ps(p, mk),
                            _mm256_castsi256_ps(mk));
}

static inline void store_n(float *p, size_t cnt, __m256 v)
{
    if (cnt >= 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, mhsa_tail_mask__avx2(cnt), v);
}

// Score plus mask for keys j..j+cnt-1 of one row, -INFINITY where the mask
// blocks the key (whatever the score holds) and in lanes >= cnt.
static inline __m256 masked_scores(const float *s, const float *mrow,
                                   size_t j, size_t cnt)
{
    __m256 x = load_ninf(s + j, cnt);
    if (mrow) {
        __m256 add = load_ninf(mrow + j, cnt);
        __m256 ninf = _mm256_set1_ps(-INFINITY);
        __m256 blocked = _mm256_cmp_ps(add, ninf, _CMP_EQ_OQ);
        x = _mm256_blendv_ps(_mm256_add_ps(x, add), ninf, blocked);
    }
    return x;
}

static void zero_n(float *p, size_t n)
{
    for (size_t j = 0; j < n; j += 8)
        store_n(p + j, n - j, _mm256_setzero_ps());
}

static inline size_t min8(size_t n) { return n < 8 ? n : 8; }

void mhsa_softmax_online__avx2(const mhsa_softmax_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    for (size_t r = 0; r < a->rows; r++) {
        float *s = a->s + r * a->lds;
        const float *mrow = mv->mask ? mv->mask + r * mv->ldmask : NULL;
        size_t nv = visible(mv, r, a->n);

        // Pass 1: masked scores back into s, and their max. max_ps(x, m)
        // returns m when x is NaN, so NaN never wins (as in scalar).
        __m256 vmax = _mm256_set1_ps(-INFINITY);
        for (size_t j = 0; j < nv; j += 8) {
            size_t cnt = min8(nv - j);
            __m256 x = masked_scores(s, mrow, j, cnt);
            store_n(s + j, cnt, x);
            vmax = _mm256_max_ps(x, vmax);
        }
        float m_old = a->m[r], m_new = mhsa_hmax_ps__avx2(vmax);
        if (!(m_new > m_old))
            m_new = m_old;
        if (m_new == -INFINITY) {   // nothing unblocked and finite yet
            // Unblocked NaN scores still poison the row (NaN weights, l).
            int nan_seen = 0;
            for (size_t j = 0; j < nv; j++)
                nan_seen |= s[j] != s[j];
            if (nan_seen) {
                for (size_t j = 0; j < nv; j++)
                    s[j] = s[j] != s[j] ? s[j] : 0.0f;
                zero_n(s + nv, a->n - nv);
                a->l[r] = NAN;
            } else {
                zero_n(s, a->n);
            }
            continue;
        }

        // Pass 2: p = exp(x - m_new); -INFINITY gives an exact 0.
        __m256 vm = _mm256_set1_ps(m_new), vsum = _mm256_setzero_ps();
        for (size_t j = 0; j < nv; j += 8) {
            size_t cnt = min8(nv - j);
            __m256 p = mhsa_exp_ps__avx2(
                _mm256_sub_ps(load_ninf(s + j, cnt), vm));
            store_n(s + j, cnt, p);
            vsum = _mm256_add_ps(vsum, p);
        }
        zero_n(s + nv, a->n - nv);

        // exp(-inf) = 0 on the first unblocked tile; exp(0) = 1 exactly.
        float alpha = _mm256_cvtss_f32(
            mhsa_exp_ps__avx2(_mm256_set1_ps(m_old - m_new)));
        a->m[r] = m_new;
        a->l[r] = a->l[r] * alpha + mhsa_hsum_ps__avx2(vsum);
        if (alpha != 1.0f) {
            float *o = a->o + r * a->ldo;
            __m256 va = _mm256_set1_ps(alpha);
            for (size_t d = 0; d < a->dv; d += 8) {
                size_t cnt = min8(a->dv - d);
                if (cnt == 8) {
                    _mm256_storeu_ps(o + d,
                                     _mm256_mul_ps(va, _mm256_loadu_ps(o + d)));
                } else {
                    __m256i mk = mhsa_tail_mask__avx2(cnt);
                    _mm256_maskstore_ps(o + d, mk, _mm256_mul_ps(
                        va, _mm256_maskload_ps(o + d, mk)));
                }
            }
        }
    }
}

void mhsa_softmax_grad__avx2(const mhsa_softmax_grad_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    for (size_t r = 0; r < a->rows; r++) {
        float *s = a->s + r * a->lds, *dp = a->dp + r * a->lddp;
        const float *mrow = mv->mask ? mv->mask + r * mv->ldmask : NULL;
        float lse = a->lse[r];
        size_t nv = lse == -INFINITY ? 0 : visible(mv, r, a->n);
        __m256 vlse = _mm256_set1_ps(lse), vdelta = _mm256_set1_ps(a->delta[r]);
        __m256 ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
        for (size_t j = 0; j < nv; j += 8) {
            size_t cnt = min8(nv - j);
            __m256 x = masked_scores(s, mrow, j, cnt);
            // Blocked keys are cleared explicitly: exp(-inf - lse) would be
            // NaN for a NaN lse.
            __m256 blocked = _mm256_cmp_ps(x, ninf, _CMP_EQ_OQ);
            __m256 p = _mm256_andnot_ps(
                blocked, mhsa_exp_ps__avx2(_mm256_sub_ps(x, vlse)));
            __m256 g = cnt == 8 ? _mm256_loadu_ps(dp + j)
                     : _mm256_maskload_ps(dp + j, mhsa_tail_mask__avx2(cnt));
            __m256 ds = _mm256_mul_ps(p, _mm256_sub_ps(g, vdelta));
            ds = _mm256_andnot_ps(_mm256_cmp_ps(p, zero, _CMP_EQ_OQ), ds);
            store_n(s + j, cnt, p);
            store_n(dp + j, cnt, ds);
        }
        zero_n(s + nv, a->n - nv);
        zero_n(dp + nv, a->n - nv);
    }
}

void mhsa_softmax_row__avx2(size_t n, const float *x, float *y)
{
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    for (size_t j = 0; j < n; j += 8)
        vmax = _mm256_max_ps(load_ninf(x + j, min8(n - j)), vmax);
    float m = mhsa_hmax_ps__avx2(vmax);
    if (m == -INFINITY) {   // all blocked (zeros), or NaN: all NaN
        int nan_seen = 0;
        for (size_t j = 0; j < n; j++)
            nan_seen |= x[j] != x[j];
        for (size_t j = 0; j < n; j++)
            y[j] = nan_seen ? NAN : 0.0f;
        return;
    }
    __m256 vm = _mm256_set1_ps(m), vsum = _mm256_setzero_ps();
    __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (size_t j = 0; j < n; j += 8) {
        size_t cnt = min8(n - j);
        __m256 v = load_ninf(x + j, cnt);
        // -INFINITY entries give an exact 0 even when m is +inf.
        __m256 p = _mm256_andnot_ps(_mm256_cmp_ps(v, ninf, _CMP_EQ_OQ),
                                    mhsa_exp_ps__avx2(_mm256_sub_ps(v, vm)));
        store_n(y + j, cnt, p);
        vsum = _mm256_add_ps(vsum, p);
    }
    __m256 inv = _mm256_set1_ps(1.0f / mhsa_hsum_ps__avx2(vsum));
    for (size_t j = 0; j < n; j += 8) {
        size_t cnt = min8(n - j);
        store_n(y + j, cnt, _mm256_mul_ps(load_ninf(y + j, cnt), inv));
    }
}
