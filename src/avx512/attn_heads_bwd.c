// attn_heads_bwd.c — the AVX-512 fused backward of up to four small tiles
// of head width 8 side by side (kernels.h: attn_small_heads_bwd): the
// heads of one sequence that attn_small_bwd.c would take one at a time.
//
// Why (attn_heads.c says the same of the forward): at dh = 8 and 12 rows
// attn_small_bwd.c leaves lanes idle twice over. Its scores and softmax
// gradient hold a head's 12 rows in 16 lanes, and its dV, dK and dQ
// chains hold a row of 8 columns in 16 lanes. Here
//  - S, dP, P and dS hold (row, head) pairs, lane 4 i + hh for row 4 g + i
//    of group g: 4 heads of 12 rows in 3 vectors where attn_small_bwd.c
//    used 4, and under the causal mask each group computes only the keys
//    its rows can see (the others are +0 there as well);
//  - the dV, dK and dQ chains hold two heads' columns interleaved, lane
//    2 c + hh' for column c of head 2 pp + hh' of pair pp: each FMA serves
//    both heads, the two heads' P (dS, scale dS) of a row and key sit side
//    by side in the (row, head) layout, and a 64-bit broadcast from memory
//    (a load, no shuffle) spreads the pair over the lanes. dO, Q and K
//    rows are interleaved once, the sums back once per key or row.
// The bits are attn_small_bwd.c's (and so those of the three calls it
// stands for), lane by lane: the same chains in the same order from +0,
// the same products, the same exp, the same dst + sum at the end.
// Declined (return 0, nothing written): what attn_small_bwd.c declines,
// and whatever is not four heads' tiles side by side as kernels.h says.
#include <math.h>

#include "avx512/avx512.h"
#include "kernels/asan.h"
#include "avx512/vmath.h"
#include "avx512/heads.h"
#include "avx512/vtranspose.h"
#include "kernels/heads_bwd.h"

enum { MAX = MHSA_SMALL_BWD_MAX, DH = 8, HEADS = 4, KEYS_AT_ONCE = 4 };

// One instance with the key count at run time in the builds that compile
// slowly (attn_small.c's ONE_INSTANCE).
#define ONE_INSTANCE (MHSA_AVX512_EMULATED || MHSA_ASAN)

// Lane L of a pair of heads' 8 columns (head 0 in lanes 0-7, head 1 in
// 8-15) interleaved: lane 2 c + hh' takes column c of head hh'; and back.
#define INTERLEAVE(L) (((L) & 1) * 8 + ((L) >> 1))
#define DEINTERLEAVE(L) (2 * ((L) & 7) + ((L) >> 3))

// The two values at p (a row's pair of heads) in every even / odd lane.
MHSA_AVX512_INLINE __m512 pair_bcast(const float *p)
{
    double d;
    __builtin_memcpy(&d, p, sizeof d);
    return _mm512_castpd_ps(_mm512_set1_pd(d));
}

// The tiles' shared view (head 0's fields; kernels.h).
typedef struct heads_view {
    mhsa_heads_bwd_tiles t;   // sizes, dO, O, scale, each head's q, k, v
    __mmask16 half[2];    // the heads < nh of each pair's 16 lanes
    __m512 lse[HEADS];    // head hh's rows in the lanes
    float ef, cf;         // mhsa_mask_view_hi16
} heads_view;

// Lane 4 i + hh of group g: lse of head hh, row 4 g + i. From the heads'
// rows: lanes of heads 0, 1 from the first pick, 2, 3 from the second.
#define LSE_PICK(g, L) ((((L) & 1) ? 16 : 0) + 4 * (g) + ((L) >> 2))
#define LSE_PICK0(L) LSE_PICK(0, L)
#define LSE_PICK1(L) LSE_PICK(1, L)
#define LSE_PICK2(L) LSE_PICK(2, L)
#define LSE_PICK3(L) LSE_PICK(3, L)
MHSA_AVX512_INLINE __m512 group_lse(const heads_view *w, size_t g)
{
    const __m512i pick[4] = { MHSA_IDX16(LSE_PICK0), MHSA_IDX16(LSE_PICK1),
                              MHSA_IDX16(LSE_PICK2), MHSA_IDX16(LSE_PICK3) };
    __m512 lo = _mm512_permutex2var_ps(w->lse[0], pick[g], w->lse[1]);
    __m512 hi = _mm512_permutex2var_ps(w->lse[2], pick[g], w->lse[3]);
    return _mm512_mask_mov_ps(lo, 0xcccc, hi);   // lanes with hh >= 2
}

// t[c] lane 4 i + hh = x[hh][(4 g + i) * ld + c] of group g's rows < tq,
// for x the heads' rows side by side (ld apart, heads' columns at x + hh *
// 8) or, with split, each head's own rows (xs[hh], ld 8).
MHSA_AVX512_INLINE void group_columns(const heads_view *w, size_t g,
                                      const float *x, size_t ld,
                                      const float *const *xs, __m512 t[DH])
{
    __m512 v[8];
    for (size_t k = 0; k < 8; k++) {
        size_t r = 4 * g + k / 2, pp = k & 1;
        v[k] = r >= w->t.tq ? _mm512_setzero_ps()
               : xs       ? mhsa_two_rows__avx512(xs[2 * pp] + r * DH,
                                                  xs[2 * pp + 1] + r * DH)
                          : _mm512_maskz_loadu_ps(w->half[pp],
                                                  x + r * ld + 16 * pp);
    }
    mhsa_transpose16x8__avx512(v, t);
}

// S and dP of group g for key slots [0, nk), then P, dS and fl(scale dS)
// for its keys < n into pt, dst, xst (key j's vector at [j * HEADS * 16],
// pair_at's layout), as
// attn_small_bwd.c computes them lane by lane. Keys no row of the group
// sees (from kg on) give +0, as they do there.
MHSA_AVX512_INLINE void group_weights(const heads_view *w, size_t g,
                                      size_t nk, size_t kg, const float *kt,
                                      const float *vt, float *pt, float *dst,
                                      float *xst)
{
    const __m512 zero = _mm512_setzero_ps(), ninf = _mm512_set1_ps(-INFINITY);
    const __m512 vscale = _mm512_set1_ps(w->t.scale);
    __m512 qt[DH], dot[DH], delta = zero;
    MHSA_HEADS_BWD_COLUMNS(w, g, qt, dot, delta, _mm512_add_ps, _mm512_mul_ps);
    __m512 row = _mm512_add_ps(
        _mm512_set1_ps((float)(4 * g)),
        _mm512_set_ps(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0));
    __mmask16 live = _mm512_cmp_ps_mask(row, _mm512_set1_ps((float)w->t.tq),
                                        _CMP_LT_OQ);
    __m512 hi = _mm512_maskz_mov_ps(
        live, _mm512_max_ps(zero, _mm512_min_ps(
                                      _mm512_set1_ps(w->ef),
                                      _mm512_add_ps(_mm512_set1_ps(w->cf),
                                                    row))));
    __m512 lse = group_lse(w, g);
    __m512 s[MAX], d[MAX];
    #pragma GCC unroll 16
    for (size_t j = 0; j < MAX; j++)   // (only the first nk are read)
        s[j] = d[j] = zero;
    #pragma GCC unroll 16
    for (size_t j = 0; j < nk; j++) {
        __m512 sj = zero, dj = zero;
        #pragma GCC unroll 8
        for (size_t c = 0; c < DH; c++) {
            sj = _mm512_fmadd_ps(qt[c],
                                 mhsa_head_bcast__avx512(kt + j * 32, c), sj);
            dj = _mm512_fmadd_ps(dot[c],
                                 mhsa_head_bcast__avx512(vt + j * 32, c), dj);
        }
        s[j] = sj;
        d[j] = dj;
    }
    #pragma GCC unroll 16
    for (size_t j = 0; j < nk; j++) {
        if (j >= w->t.n)
            break;
        __mmask16 in = _mm512_cmp_ps_mask(_mm512_set1_ps((float)j), hi,
                                          _CMP_LT_OQ);
        __m512 x = _mm512_mask_mov_ps(ninf, in, s[j]);
        __mmask16 open = _mm512_cmp_ps_mask(x, ninf, _CMP_NEQ_UQ);
        __m512 p = _mm512_maskz_mov_ps(
            open, mhsa_exp__avx512(_mm512_sub_ps(x, lse)));
        __mmask16 nonzero = _mm512_cmp_ps_mask(p, zero, _CMP_NEQ_UQ);
        __m512 ds = _mm512_maskz_mov_ps(
            nonzero, _mm512_mul_ps(p, _mm512_sub_ps(d[j], delta)));
        _mm512_storeu_ps(pt + j * HEADS * 16, p);
        _mm512_storeu_ps(dst + j * HEADS * 16, ds);
        _mm512_storeu_ps(xst + j * HEADS * 16, _mm512_mul_ps(vscale, ds));
    }
    for (size_t j = kg; j < w->t.n; j++) {   // (kg <= nk)
        _mm512_storeu_ps(pt + j * HEADS * 16, zero);
        _mm512_storeu_ps(dst + j * HEADS * 16, zero);
        _mm512_storeu_ps(xst + j * HEADS * 16, _mm512_mul_ps(vscale, zero));
    }
}

// group_weights with its key slots nk (4, 8, 12 or 16) a constant.
static void group_weights_any(const heads_view *w, size_t g, size_t nk,
                              size_t kg, const float *kt, const float *vt,
                              float *pt, float *dst, float *xst)
{
#if ONE_INSTANCE
    group_weights(w, g, nk, kg, kt, vt, pt, dst, xst);
#else
    switch (nk / 4) {
    case 1:
        group_weights(w, g, 4, kg, kt, vt, pt, dst, xst);
        break;
    case 2:
        group_weights(w, g, 8, kg, kt, vt, pt, dst, xst);
        break;
    case 3:
        group_weights(w, g, 12, kg, kt, vt, pt, dst, xst);
        break;
    default:
        group_weights(w, g, 16, kg, kt, vt, pt, dst, xst);
    }
#endif
}

// Where the pair (head 2 pp, 2 pp + 1) of row r sits among key j's
// vectors of the (row, head) layout: lane 4 (r % 4) + 2 pp of group r / 4,
// whose vector is at [(j * HEADS + r / 4) * 16]. Key-major, so that the
// pairs of one key step 4 floats a row, and those of one row 64 a key:
// the chains below address them with one add, where a group-major layout
// cost a division and remainder by 4 each (a part of the kernel's
// instructions in the tiny backward, though its time did not move with
// them: docs/performance.md, "Measurements behind the code").
MHSA_AVX512_INLINE size_t pair_at(size_t r, size_t pp, size_t j)
{
    return j * HEADS * 16 + 4 * r + 2 * pp;
}

// dst[0..16) of the heads < nh in the pair += the interleaved sum.
MHSA_AVX512_INLINE void add_pair(float *dst, __m512 acc, __mmask16 mk)
{
    __m512 sum = _mm512_permutexvar_ps(MHSA_IDX16(DEINTERLEAVE), acc);
    _mm512_mask_storeu_ps(dst, mk,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(mk, dst), sum));
}

// dV and dK of keys j .. j + G - 1 (all with first row r0) for the pairs
// < np, from the interleaved dO and Q rows (dil, qil: row r, pair pp at
// [(2 r + pp) * 16]).
MHSA_AVX512_INLINE void keys_grad(const mhsa_attn_heads_bwd_args *a,
                                  const heads_view *w, const float *pt,
                                  const float *dst, const float *dil,
                                  const float *qil, size_t j, int G,
                                  size_t r0, size_t np)
{
    const mhsa_small_bwd_args *p0 = a->h[0]->p;
    __m512 v[KEYS_AT_ONCE][2], k[KEYS_AT_ONCE][2];
    #pragma GCC unroll 4
    for (int i = 0; i < G; i++)
        v[i][0] = v[i][1] = k[i][0] = k[i][1] = _mm512_setzero_ps();
    for (size_t r = r0; r < w->t.tq; r++)
        #pragma GCC unroll 2
        for (size_t pp = 0; pp < np; pp++) {
            __m512 dor = _mm512_loadu_ps(dil + (2 * r + pp) * 16);
            __m512 qr = _mm512_loadu_ps(qil + (2 * r + pp) * 16);
            #pragma GCC unroll 4
            for (int i = 0; i < G; i++) {
                size_t at = pair_at(r, pp, j + (size_t)i);
                v[i][pp] = _mm512_fmadd_ps(pair_bcast(pt + at), dor, v[i][pp]);
                k[i][pp] = _mm512_fmadd_ps(pair_bcast(dst + at), qr, k[i][pp]);
            }
        }
    for (int i = 0; i < G; i++)
        for (size_t pp = 0; pp < np; pp++) {
            size_t off = (j + (size_t)i) * p0->ldg + 16 * pp;
            add_pair(p0->dv + off, v[i][pp], w->half[pp]);
            add_pair(p0->dk + off, k[i][pp], w->half[pp]);
        }
}

// dQ of rows r .. r + G - 1 (all over keys [0, ke)) for the pairs < np,
// from the interleaved K rows (kil: key j, pair pp at [(2 j + pp) * 16]).
MHSA_AVX512_INLINE void rows_dq(const mhsa_attn_heads_bwd_args *a,
                                const heads_view *w, const float *xst,
                                const float *kil, size_t r, int G,
                                size_t ke, size_t np)
{
    const mhsa_small_bwd_args *p0 = a->h[0]->p;
    __m512 c[KEYS_AT_ONCE][2];
    #pragma GCC unroll 4
    for (int i = 0; i < G; i++)
        c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (size_t j = 0; j < ke; j++)
        #pragma GCC unroll 2
        for (size_t pp = 0; pp < np; pp++) {
            __m512 kj = _mm512_loadu_ps(kil + (2 * j + pp) * 16);
            #pragma GCC unroll 4
            for (int i = 0; i < G; i++)
                c[i][pp] = _mm512_fmadd_ps(
                    pair_bcast(xst + pair_at(r + (size_t)i, pp, j)), kj,
                    c[i][pp]);
        }
    for (int i = 0; i < G; i++)
        for (size_t pp = 0; pp < np; pp++)
            add_pair(p0->dq + (r + (size_t)i) * p0->ldg + 16 * pp, c[i][pp],
                     w->half[pp]);
}

// dV, dK and dQ of the pairs < np (a constant where inlined):
// attn_small_bwd.c's runs, keys sharing r0 and rows sharing kend, in
// groups of 4 and 1 (each chain is its own; a group only shares loads).
MHSA_AVX512_INLINE void grads(const mhsa_attn_heads_bwd_args *a,
                              const heads_view *w, const float *pt,
                              const float *dst, const float *xst,
                              const float *dil, const float *qil,
                              const float *kil, size_t np)
{
    const mhsa_small_bwd_args *p0 = a->h[0]->p;
    size_t tq = w->t.tq, n = w->t.n;
    for (size_t j = 0; p0->do_dkv && j < n;) {
        size_t run = mhsa_run_length(p0->r0, j, n, KEYS_AT_ONCE);
        size_t r0 = p0->r0[j];
        if (r0 < tq && run == KEYS_AT_ONCE)
            keys_grad(a, w, pt, dst, dil, qil, j, KEYS_AT_ONCE, r0, np);
        else
            for (size_t i = 0; r0 < tq && i < run; i++)
                keys_grad(a, w, pt, dst, dil, qil, j + i, 1, r0, np);
        j += run;
    }
    for (size_t r = 0; p0->do_dq && r < tq;) {
        size_t run = mhsa_run_length(p0->kend, r, tq, KEYS_AT_ONCE);
        size_t ke = p0->kend[r];
        if (ke > 0 && run == KEYS_AT_ONCE)
            rows_dq(a, w, xst, kil, r, KEYS_AT_ONCE, ke, np);
        else
            for (size_t i = 0; ke > 0 && i < run; i++)
                rows_dq(a, w, xst, kil, r + i, 1, ke, np);
        r += run;
    }
}

// Whether the tiles are ones this kernel takes (kernels.h and the file
// comment); fills w.
static int takes(const mhsa_attn_heads_bwd_args *a, heads_view *w)
{
    if (!mhsa_heads_bwd_take(a, DH, &w->t))
        return 0;
    size_t nh = w->t.nh, tq = w->t.tq;
    w->half[0] = nh >= 2 ? 0xffff : 0x00ff;
    w->half[1] = nh >= 4 ? 0xffff : nh == 3 ? 0x00ff : 0;
    __mmask16 rows = mhsa_mask16__avx512(tq), bad = 0;
    for (size_t hh = 0; hh < HEADS; hh++) {
        const mhsa_attn_small_bwd_args *gh = a->h[hh < nh ? hh : nh - 1];
        w->lse[hh] = _mm512_maskz_loadu_ps(rows, gh->lse);
        // attn_small_bwd.c's test: no row's lse infinite
        bad |= _mm512_cmp_ps_mask(w->lse[hh], _mm512_set1_ps(INFINITY),
                                  _CMP_EQ_OQ) |
               _mm512_cmp_ps_mask(w->lse[hh], _mm512_set1_ps(-INFINITY),
                                  _CMP_EQ_OQ);
    }
    mhsa_mask_view_hi16(&a->h[0]->mv, w->t.n, &w->ef, &w->cf);
    return !bad;
}

int mhsa_attn_small_heads_bwd__avx512(const mhsa_attn_heads_bwd_args *a)
{
    heads_view w;
    if (!takes(a, &w))
        return 0;
    const mhsa_small_bwd_args *p0 = a->h[0]->p;
    size_t tq = w.t.tq, n = w.t.n, nk = (n + 3) / 4 * 4;
    size_t np = w.t.nh > 2 ? 2 : 1;
    // K and V by columns for the scores (key slots past n: key n - 1).
    float kt[MAX * HEADS * DH], vt[MAX * HEADS * DH];
    for (size_t j = 0; j < nk; j++) {
        size_t off = (j < n ? j : n - 1) * DH;
        mhsa_kv_columns__avx512(w.t.k, off, 0, kt + j * HEADS * DH);
        mhsa_kv_columns__avx512(w.t.v, off, 0, vt + j * HEADS * DH);
    }
    // P, dS and fl(scale dS) of every group and key: group g's key j at
    // [(j * HEADS + g) * 16] (pair_at). A group computes only the key
    // slots up to its last row's last visible key (attn_heads.c; the keys
    // past it are +0 in all its lanes).
    float pt[HEADS * MAX * 16], dst[HEADS * MAX * 16], xst[HEADS * MAX * 16];
    size_t e = (size_t)w.ef, c = w.cf > 0.0f ? (size_t)w.cf : 0;
    for (size_t g = 0; 4 * g < tq; g++) {
        size_t last = 4 * g + 3 < tq ? 4 * g + 3 : tq - 1;
        size_t kg = c + last < e ? c + last : e;
        size_t slots = (kg + 3) / 4 * 4;
        size_t at = g * 16;
        group_weights_any(&w, g, slots ? slots : 4, kg, kt, vt, pt + at,
                          dst + at, xst + at);
    }
    // The interleaved rows of the grads' chains.
    const __m512i il = MHSA_IDX16(INTERLEAVE);
    float dil[MAX * 2 * 16], qil[MAX * 2 * 16], kil[MAX * 2 * 16];
    for (size_t r = 0; p0->do_dkv && r < tq; r++)
        for (size_t pp = 0; pp < np; pp++) {
            __m512 dr = _mm512_maskz_loadu_ps(w.half[pp],
                                              w.t.dout + r * w.t.lddo + 16 * pp);
            __m512 qr = mhsa_two_rows__avx512(w.t.q[2 * pp] + r * DH,
                                              w.t.q[2 * pp + 1] + r * DH);
            _mm512_storeu_ps(dil + (2 * r + pp) * 16,
                             _mm512_permutexvar_ps(il, dr));
            _mm512_storeu_ps(qil + (2 * r + pp) * 16,
                             _mm512_permutexvar_ps(il, qr));
        }
    for (size_t j = 0; p0->do_dq && j < n; j++)
        for (size_t pp = 0; pp < np; pp++)
            _mm512_storeu_ps(
                kil + (2 * j + pp) * 16,
                _mm512_permutexvar_ps(
                    il, mhsa_two_rows__avx512(w.t.k[2 * pp] + j * DH,
                                              w.t.k[2 * pp + 1] + j * DH)));
    if (np == 2)
        grads(a, &w, pt, dst, xst, dil, qil, kil, 2);
    else
        grads(a, &w, pt, dst, xst, dil, qil, kil, 1);
    return 1;
}
