// attn_heads.c — the AVX2 fused forward of up to four small views of head
// width 8 side by side (kernels.h: attn_small_heads): the heads of one
// sequence that attn_small.c would take one at a time.
//
// The AVX-512 kernel (src/avx512/attn_heads.c) says why; here the 8 lanes
// hold (row, head) pairs of 2 rows, lane 4 i + hh for row 2 g + i of
// group g and head hh. attn_small.c holds 8 rows of a view in its lanes
// (12 rows take 2 vectors, 16 lanes), so 4 heads of 12 rows fill 6
// vectors where four views took 8; and under the causal mask each group
// of 2 rows weighs only the keys its last row sees (2, 4, ..., 12 of the
// tiny block's 12, 42 group-keys where attn_small.c weighs 2 x 8 + 4 x 12).
// K and V are read by columns, the four heads' value of key j, column c
// side by side, so one vbroadcastf128 (a load) gives every lane its
// head's value; Q and O go through 8x8 transposes per group.
//
// The bits are attn_small.c's without a mask (and so the tiled path's),
// lane by lane: each (row, head) lane runs the operations of that row's
// lane there in the same order:
//  - S: fma(q[c], k[j][c], acc) over c in order from +0, q scaled on
//    load as fl(qscale * q);
//  - the softmax of group_softmax (attn_small.c): scores of keys a row
//    does not see are -inf, mhsa_lane_max16__avx2 and the sum tree over
//    the key slots below the group's largest visible key. attn_small.c
//    takes them up to its 8-row group's: the slots in between are -inf
//    (max unchanged) and give p = +0 (sums unchanged);
//  - O: fma(p[j], v[j][c], acc) over the group's keys in order from +0
//    (attn_small.c goes to its 6-row panel's last key; the keys in
//    between have p = +0 and add nothing, x + -0 = x, +0 + -0 = +0), then
//    +0 + the sum, times 1 / l (+0 where l is 0).
// Declined (return 0): sizes past 16 rows, 16 keys or dh != 8, a mask, a
// window that cuts a row's first keys, non-finite scores or sums; the
// last group scores every key, so a non-finite K row is still seen.
#include <math.h>
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"
#include "avx2/heads.h"
#include "avx2/vtranspose.h"

enum { MAX_ROWS = 16, MAX_KEYS = 16, DH = 8, HEADS = 4 };

// Group g (rows 2 g, 2 g + 1) over its keys [0, nk): o (rows < tq, heads
// < nh), m and l into mb, lb (row r, head hh at [4 r + hh]). hrow[r]: one
// past the last key row r sees (0 past tq). Returns 0 on a non-finite
// score, a row max of +inf or a non-finite sum.
static int group(const mhsa_attn_heads_args *a, size_t g, size_t nk,
                 const float *hrow, const float *kt, const float *vt,
                 float *mb, float *lb)
{
    size_t tq = a->tq, nh = a->nh, ldq = a->ldq ? a->ldq : a->nh * DH;
    const __m256 zero = _mm256_setzero_ps();
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    // Lane L: row 2 g + (L >> 2), head L & 3.
    __m256 hif = _mm256_set_m128(_mm_set1_ps(hrow[2 * g + 1]),
                                 _mm_set1_ps(hrow[2 * g]));

    // Q: the 8 (row, head) rows transposed to the columns, scaled as the
    // split scales.
    __m256 qt[DH];
    for (size_t L = 0; L < 8; L++) {
        size_t r = 2 * g + L / 4, hh = L & 3;
        qt[L] = r < tq && hh < nh ? _mm256_loadu_ps(a->q + r * ldq + hh * DH)
                                  : zero;
    }
    mhsa_transpose8__avx2(qt);
    for (size_t c = 0; a->qscale != 0.0f && c < DH; c++)
        qt[c] = _mm256_mul_ps(_mm256_set1_ps(a->qscale), qt[c]);

    __m256 st[MAX_KEYS], chk = zero;
    for (size_t j = 0; j < nk; j++) {
        __m256 acc = zero;
        for (size_t c = 0; c < DH; c++)
            acc = _mm256_fmadd_ps(
                qt[c], mhsa_head_col__avx2(kt + j * HEADS * DH, c), acc);
        chk = _mm256_fmadd_ps(acc, zero, chk);   // inf * 0 = NaN
        // keys a lane's row does not see: -inf
        st[j] = _mm256_blendv_ps(ninf, acc,
                                 _mm256_cmp_ps(_mm256_set1_ps((float)j), hif,
                                               _CMP_LT_OQ));
    }
    if (_mm256_movemask_ps(_mm256_cmp_ps(chk, chk, _CMP_UNORD_Q)))
        return 0;
    // group_softmax without a mask, over the slots [0, nk)
    __m256 hm = mhsa_lane_max16__avx2(st, nk);
    __m256 m = _mm256_blendv_ps(ninf, hm, _mm256_cmp_ps(hm, ninf,
                                                        _CMP_GT_OQ));
    if (_mm256_movemask_ps(_mm256_cmp_ps(m, _mm256_set1_ps(INFINITY),
                                         _CMP_EQ_OQ)))
        return 0;
    __m256 mu = _mm256_andnot_ps(_mm256_cmp_ps(m, ninf, _CMP_EQ_OQ), m);
    __m256 p[MAX_KEYS], sum[8];
    for (size_t t = 0; t < 8; t++) {
        p[t] = t < nk ? mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(st[t], mu))
                      : zero;
        sum[t] = _mm256_add_ps(zero, p[t]);
        if (8 + t < nk) {
            p[8 + t] = mhsa_exp_nonpos_ps__avx2(_mm256_sub_ps(st[8 + t], mu));
            sum[t] = _mm256_add_ps(sum[t], p[8 + t]);
        }
    }
    for (size_t t = 0; t < 4; t++)
        sum[t] = _mm256_add_ps(sum[t], sum[t + 4]);
    for (size_t t = 0; t < 2; t++)
        sum[t] = _mm256_add_ps(sum[t], sum[t + 2]);
    __m256 l = _mm256_add_ps(sum[0], sum[1]);
    _mm256_storeu_ps(mb + 8 * g, m);
    _mm256_storeu_ps(lb + 8 * g, l);

    // P V, the rows in the lanes: each column's chain over the keys.
    __m256 acc[DH];
    for (size_t c = 0; c < DH; c++)
        acc[c] = zero;
    for (size_t j = 0; j < nk; j++)
        for (size_t c = 0; c < DH; c++)
            acc[c] = _mm256_fmadd_ps(
                p[j], mhsa_head_col__avx2(vt + j * HEADS * DH, c), acc[c]);
    __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.0f), l);
    __m256 none = _mm256_cmp_ps(l, zero, _CMP_EQ_OQ);
    chk = zero;
    for (size_t c = 0; c < DH; c++) {
        __m256 s = _mm256_add_ps(zero, acc[c]);   // beta == 1 on +0
        chk = _mm256_fmadd_ps(s, zero, chk);
        acc[c] = _mm256_andnot_ps(none, _mm256_mul_ps(s, inv));
    }
    if (_mm256_movemask_ps(_mm256_cmp_ps(chk, chk, _CMP_UNORD_Q)))
        return 0;
    mhsa_transpose8__avx2(acc);   // back to the (row, head) rows
    for (size_t L = 0; L < 8; L++) {
        size_t r = 2 * g + L / 4, hh = L & 3;
        if (r < tq && hh < nh)
            _mm256_storeu_ps(a->o + r * a->ldo + hh * DH, acc[L]);
    }
    return 1;
}

int mhsa_attn_small_heads__avx2(const mhsa_attn_heads_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    size_t nh = a->nh, n = a->n, tq = a->tq;
    if (!mhsa_attn_heads_fit(a, DH))
        return 0;
    size_t ldkv = a->ldkv ? a->ldkv : DH;
    const float *ks[HEADS], *vs[HEADS];
    for (size_t hh = 0; hh < HEADS; hh++) {   // heads past nh: the last
        ks[hh] = a->k[hh < nh ? hh : nh - 1];
        vs[hh] = a->v[hh < nh ? hh : nh - 1];
    }
    float kt[MAX_KEYS * HEADS * DH], vt[MAX_KEYS * HEADS * DH];
    for (size_t j = 0; j < n; j++) {
        mhsa_kv_columns__avx2(ks, j * ldkv, kt + j * HEADS * DH);
        mhsa_kv_columns__avx2(vs, j * ldkv, vt + j * HEADS * DH);
    }
    // Group g weighs the keys up to its last row's last visible one; the
    // last group all n (attn_heads.c in src/avx512 says why).
    // hi = min(n, klen, q0 + r + 1 if causal) per row, as attn_small.c's
    // (exact as floats; 0 past tq).
    size_t e = mv->klen && mv->klen < n ? mv->klen : n;
    size_t c = mv->causal ? mv->q0 + 1 : n;
    float hrow[MAX_ROWS + 1] = { 0 };
    for (size_t r = 0; r < tq; r++)
        hrow[r] = (float)(c + r < e ? c + r : e);
    float mb[MAX_ROWS * HEADS], lb[MAX_ROWS * HEADS];
    for (size_t g = 0; 2 * g < tq; g++) {
        size_t last = 2 * g + 1 < tq ? 2 * g + 1 : tq - 1;
        size_t nk = last + 1 == tq ? n : c + last < e ? c + last : e;
        if (!group(a, g, nk, hrow, kt, vt, mb, lb))
            return 0;
    }
    for (size_t hh = 0; hh < nh; hh++)
        for (size_t r = 0; r < tq; r++) {
            a->m[hh * a->ldml + r] = mb[4 * r + hh];
            a->l[hh * a->ldml + r] = lb[4 * r + hh];
        }
    return 1;
}
