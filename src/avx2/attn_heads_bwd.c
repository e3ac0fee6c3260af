// attn_heads_bwd.c — the AVX2 fused backward of up to four small tiles of
// head width 8 side by side (kernels.h: attn_small_heads_bwd): the heads
// of one sequence that attn_small_bwd.c would take one at a time.
//
// S, dP, P and dS hold (row, head) pairs as this table's attn_heads.c
// does, lane 4 i + hh for row 2 g + i of group g and head hh: 4 heads of
// 12 rows in 6 vectors where attn_small_bwd.c's halves took 8, and under
// the causal mask each group of 2 rows computes only the keys its last
// row sees (+0 in its lanes for the others, as they are there). The dV,
// dK and dQ chains are attn_small_bwd.c's (small_bwd.h), one head's 8
// columns a vector: each broadcast P (dS, scale dS) is read from the
// (row, head) layout where that kernel reads its key-by-key copies.
// The bits are attn_small_bwd.c's, lane by lane and chain by chain.
// Declined (return 0, nothing written): what attn_small_bwd.c declines,
// and whatever is not four heads' tiles side by side as kernels.h says.
#include <math.h>
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"
#include "avx2/heads.h"
#include "avx2/vtranspose.h"
#include "kernels/heads_bwd.h"

enum { MAX = MHSA_SMALL_BWD_MAX, DH = 8, HEADS = 4, KEYS_AT_ONCE = 4 };

#define INLINE static inline __attribute__((always_inline))

// The tiles' shared view (head 0's fields; kernels.h).
typedef struct heads_view {
    mhsa_heads_bwd_tiles t;   // sizes, dO, O, scale, each head's q, k, v
    float lse[MAX * HEADS];   // row r, head hh at [4 r + hh]
    float hi[MAX + 1];        // one past row r's last key (0 past tq)
} heads_view;

// v[c] lane 4 i + hh = x[hh][(2 g + i) * ld + c] of the rows < tq: the
// heads' rows side by side (x, ld; heads at x + hh * 8) or each its own
// (xs[hh], ld 8).
INLINE void group_columns(const heads_view *w, size_t g, const float *x,
                          size_t ld, const float *const *xs, __m256 v[DH])
{
    for (size_t L = 0; L < 8; L++) {
        size_t r = 2 * g + L / 4, hh = L & 3;
        v[L] = r >= w->t.tq || hh >= w->t.nh ? _mm256_setzero_ps()
               : xs ? _mm256_loadu_ps(xs[hh] + r * DH)
                    : _mm256_loadu_ps(x + r * ld + hh * DH);
    }
    mhsa_transpose8__avx2(v);
}

// Where p (ds, scale ds) of row r, head hh and key j sits: group r / 2's
// key j vector, lane 4 (r % 2) + hh.
INLINE size_t lane_at(size_t r, size_t hh, size_t j)
{
    return (r / 2 * MAX + j) * 8 + 4 * (r % 2) + hh;
}

// S and dP of group g for its keys [0, kg), then P, dS and fl(scale dS)
// for all n keys into pt, dst, xst at [(g * MAX + j) * 8] (keys from kg
// on: +0, as attn_small_bwd.c computes them in these lanes).
static void group_weights(const heads_view *w, size_t g, size_t kg,
                          const float *kt, const float *vt, float *pt,
                          float *dst, float *xst)
{
    const __m256 zero = _mm256_setzero_ps(), ninf = _mm256_set1_ps(-INFINITY);
    const __m256 vscale = _mm256_set1_ps(w->t.scale);
    __m256 qt[DH], dot[DH], delta = zero;
    MHSA_HEADS_BWD_COLUMNS(w, g, qt, dot, delta, _mm256_add_ps, _mm256_mul_ps);
    __m256 lse = _mm256_loadu_ps(w->lse + 8 * g);
    __m256 hi = _mm256_set_m128(_mm_set1_ps(w->hi[2 * g + 1]),
                                _mm_set1_ps(w->hi[2 * g]));
    float *pg = pt + g * MAX * 8, *dg = dst + g * MAX * 8;
    float *xg = xst + g * MAX * 8;
    for (size_t j = 0; j < kg; j++) {
        __m256 s = zero, d = zero;
        for (size_t c = 0; c < DH; c++) {
            s = _mm256_fmadd_ps(
                qt[c], mhsa_head_col__avx2(kt + j * HEADS * DH, c), s);
            d = _mm256_fmadd_ps(
                dot[c], mhsa_head_col__avx2(vt + j * HEADS * DH, c), d);
        }
        // attn_small_bwd.c's weights: kept where in range and s != -inf
        __m256 in = _mm256_cmp_ps(_mm256_set1_ps((float)j), hi, _CMP_LT_OQ);
        __m256 keep = _mm256_andnot_ps(_mm256_cmp_ps(s, ninf, _CMP_EQ_OQ),
                                       in);
        __m256 p = _mm256_and_ps(keep,
                                 mhsa_exp_ps__avx2(_mm256_sub_ps(s, lse)));
        __m256 ds = _mm256_mul_ps(p, _mm256_sub_ps(d, delta));
        ds = _mm256_andnot_ps(_mm256_cmp_ps(p, zero, _CMP_EQ_OQ), ds);
        _mm256_storeu_ps(pg + j * 8, p);
        _mm256_storeu_ps(dg + j * 8, ds);
        _mm256_storeu_ps(xg + j * 8, _mm256_mul_ps(vscale, ds));
    }
    for (size_t j = kg; j < w->t.n; j++) {
        _mm256_storeu_ps(pg + j * 8, zero);
        _mm256_storeu_ps(dg + j * 8, zero);
        _mm256_storeu_ps(xg + j * 8, _mm256_mul_ps(vscale, zero));
    }
}

// dst[0..8) += acc (the ukr's beta == 1: C first).
INLINE void add_to(float *dst, __m256 acc)
{
    _mm256_storeu_ps(dst, _mm256_add_ps(_mm256_loadu_ps(dst), acc));
}

// Head hh's dV and dK of keys j .. j + G - 1, all over rows [r0, tq).
INLINE void keys_grad(const mhsa_small_bwd_args *p0, const heads_view *w,
                      size_t hh, const float *pt, const float *dst, size_t j,
                      int G, size_t r0)
{
    __m256 v[KEYS_AT_ONCE], k[KEYS_AT_ONCE];
    for (int i = 0; i < G; i++)
        v[i] = k[i] = _mm256_setzero_ps();
    for (size_t r = r0; r < w->t.tq; r++) {
        __m256 o = _mm256_loadu_ps(w->t.dout + r * w->t.lddo + hh * DH);
        __m256 q = _mm256_loadu_ps(w->t.q[hh] + r * DH);
        for (int i = 0; i < G; i++) {
            size_t at = lane_at(r, hh, j + (size_t)i);
            v[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(pt + at), o, v[i]);
            k[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(dst + at), q, k[i]);
        }
    }
    for (int i = 0; i < G; i++) {
        size_t off = (j + (size_t)i) * p0->ldg + hh * DH;
        add_to(p0->dv + off, v[i]);
        add_to(p0->dk + off, k[i]);
    }
}

// Head hh's dQ of rows r .. r + G - 1, all over keys [0, ke).
INLINE void rows_dq(const mhsa_small_bwd_args *p0, const heads_view *w,
                    size_t hh, const float *xst, size_t r, int G, size_t ke)
{
    __m256 c[KEYS_AT_ONCE];
    for (int i = 0; i < G; i++)
        c[i] = _mm256_setzero_ps();
    for (size_t j = 0; j < ke; j++) {
        __m256 kj = _mm256_loadu_ps(w->t.k[hh] + j * DH);
        for (int i = 0; i < G; i++)
            c[i] = _mm256_fmadd_ps(
                _mm256_broadcast_ss(xst + lane_at(r + (size_t)i, hh, j)), kj,
                c[i]);
    }
    for (int i = 0; i < G; i++)
        add_to(p0->dq + (r + (size_t)i) * p0->ldg + hh * DH, c[i]);
}

// Whether the tiles are ones this kernel takes (kernels.h and the file
// comment); fills w.
static int takes(const mhsa_attn_heads_bwd_args *a, heads_view *w)
{
    if (!mhsa_heads_bwd_take(a, DH, &w->t))
        return 0;
    size_t nh = w->t.nh, tq = w->t.tq;
    for (size_t hh = 0; hh < HEADS; hh++) {
        const mhsa_attn_small_bwd_args *gh = a->h[hh < nh ? hh : nh - 1];
        for (size_t r = 0; r < MAX; r++) {
            float x = r < tq ? gh->lse[r] : 0.0f;
            // attn_small_bwd.c's test: no row's lse infinite
            if (x == INFINITY || x == -INFINITY)
                return 0;
            w->lse[4 * r + hh] = x;
        }
    }
    float ef, cf;
    mhsa_mask_view_hi16(&a->h[0]->mv, w->t.n, &ef, &cf);
    for (size_t r = 0; r <= MAX; r++) {   // max(0, min(e, c + r))
        float h = cf + (float)r < ef ? cf + (float)r : ef;
        w->hi[r] = r < tq && h > 0.0f ? h : 0.0f;
    }
    return 1;
}

int mhsa_attn_small_heads_bwd__avx2(const mhsa_attn_heads_bwd_args *a)
{
    heads_view w;
    if (!takes(a, &w))
        return 0;
    const mhsa_small_bwd_args *p0 = a->h[0]->p;
    size_t tq = w.t.tq, n = w.t.n;
    float kt[MAX * HEADS * DH], vt[MAX * HEADS * DH];
    for (size_t j = 0; j < n; j++) {
        mhsa_kv_columns__avx2(w.t.k, j * DH, kt + j * HEADS * DH);
        mhsa_kv_columns__avx2(w.t.v, j * DH, vt + j * HEADS * DH);
    }
    // P, dS and fl(scale dS) of every group and key; group g computes the
    // keys up to its last row's last visible one.
    float pt[MAX / 2 * MAX * 8], dst[MAX / 2 * MAX * 8];
    float xst[MAX / 2 * MAX * 8];
    for (size_t g = 0; 2 * g < tq; g++) {
        size_t last = 2 * g + 1 < tq ? 2 * g + 1 : tq - 1;
        size_t kg = (size_t)w.hi[last];
        group_weights(&w, g, kg, kt, vt, pt, dst, xst);
    }
    // attn_small_bwd.c's chains, head by head: keys sharing r0 and rows
    // sharing kend in groups of 4 and 1 (a group only shares loads).
    for (size_t hh = 0; hh < w.t.nh; hh++) {
        for (size_t j = 0; p0->do_dkv && j < n;) {
            size_t run = mhsa_run_length(p0->r0, j, n, KEYS_AT_ONCE);
            size_t r0 = p0->r0[j];
            if (r0 < tq && run == KEYS_AT_ONCE)
                keys_grad(p0, &w, hh, pt, dst, j, KEYS_AT_ONCE, r0);
            else
                for (size_t i = 0; r0 < tq && i < run; i++)
                    keys_grad(p0, &w, hh, pt, dst, j + i, 1, r0);
            j += run;
        }
        for (size_t r = 0; p0->do_dq && r < tq;) {
            size_t run = mhsa_run_length(p0->kend, r, tq, KEYS_AT_ONCE);
            size_t ke = p0->kend[r];
            if (ke > 0 && run == KEYS_AT_ONCE)
                rows_dq(p0, &w, hh, xst, r, KEYS_AT_ONCE, ke);
            else
                for (size_t i = 0; ke > 0 && i < run; i++)
                    rows_dq(p0, &w, hh, xst, r + i, 1, ke);
            r += run;
        }
    }
    return 1;
}
