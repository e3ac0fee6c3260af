// small_bwd.c — the AVX-512 small attention-backward products (kernels.h:
// mhsa_small_bwd_args), read straight from the unpacked rows, for the
// drivers of attn/attention.c (backward_small).
//
// They must give the bits of the packed path of this table: sgemm_12x32's
// chains, one FMA per product from +0 in the order of the depth, and
// beta == 1 as dst + sum. Each sum below is one zmm lane's chain of FMAs
// in that order, so the bits are the micro-kernel's: a row of 16 lanes is
// one register (every size here is at most MHSA_SMALL_BWD_MAX = 16), and
// lanes past n or dh multiply zeros that are never stored.
//  - scores: S = Q K^T and dP = dO V^T need K and V by columns: a 16x16
//    register transpose (vtranspose.h) of the masked rows, kept on the
//    stack; then per query row a chain over d of q[r][d] (an embedded
//    broadcast) times column d. The rows of s and dp have room for 16
//    columns, so they are stored whole (lanes >= n are zeros).
//  - dV, dK: per key j a chain over rows r of p[r][j] / ds[r][j] times the
//    dO / Q row, loaded masked to dh lanes; dQ: per row a chain over keys
//    j of fl(scale * ds[r][j]) (alpha folded in first, as pack_a does)
//    times the K row.
// Register budget: the chains run GROUP = 4 keys or rows at a time with
// the same range (r0 and kend are constant over a panel of mr rows or
// keys, so groups rarely split): 8 accumulators + 2 operand rows for
// dV/dK, 4 + 1 for dQ and the scores, against the FMA's latency
// (4 cycles x 2 pipes wants 8 chains in flight).
#include "avx512/avx512.h"
#include "avx512/vmath.h"
#include "avx512/vtranspose.h"

enum { SB_ = MHSA_SMALL_BWD_MAX, GROUP = 4 };

// t[c] lane r = x[r*ld + c] for r < rows, c < cols; 0 elsewhere.
MHSA_AVX512_INLINE void sb_transpose(const float *x, size_t rows,
                                     size_t cols, size_t ld, __m512 t[SB_])
{
    __mmask16 mk = mhsa_mask16__avx512(cols);
    for (size_t r = 0; r < SB_; r++)
        t[r] = r < rows ? _mm512_maskz_loadu_ps(mk, x + r * ld)
                        : _mm512_setzero_ps();
    mhsa_transpose16__avx512(t);
}

// out rows r < tq (ld ldo, 16 lanes each) = sum over d < depth of
// x[r*ldx + d] * bt[d], from +0; g rows a chain each, in order of d.
MHSA_AVX512_INLINE void sb_rows_times(const float *x, size_t ldx,
                                      size_t tq, size_t depth,
                                      const __m512 bt[SB_], float *out,
                                      size_t ldo)
{
    size_t r = 0;
    for (; r + GROUP <= tq; r += GROUP) {
        const float *x0 = x + r * ldx, *x1 = x0 + ldx, *x2 = x1 + ldx,
                    *x3 = x2 + ldx;
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        for (size_t d = 0; d < depth; d++) {
            __m512 b = bt[d];
            c0 = _mm512_fmadd_ps(_mm512_set1_ps(x0[d]), b, c0);
            c1 = _mm512_fmadd_ps(_mm512_set1_ps(x1[d]), b, c1);
            c2 = _mm512_fmadd_ps(_mm512_set1_ps(x2[d]), b, c2);
            c3 = _mm512_fmadd_ps(_mm512_set1_ps(x3[d]), b, c3);
        }
        _mm512_storeu_ps(out + r * ldo, c0);
        _mm512_storeu_ps(out + (r + 1) * ldo, c1);
        _mm512_storeu_ps(out + (r + 2) * ldo, c2);
        _mm512_storeu_ps(out + (r + 3) * ldo, c3);
    }
    for (; r < tq; r++) {
        const float *x0 = x + r * ldx;
        __m512 c0 = _mm512_setzero_ps();
        for (size_t d = 0; d < depth; d++)
            c0 = _mm512_fmadd_ps(_mm512_set1_ps(x0[d]), bt[d], c0);
        _mm512_storeu_ps(out + r * ldo, c0);
    }
}

void mhsa_small_bwd_scores__avx512(const mhsa_small_bwd_args *a)
{
    __m512 t[SB_];
    sb_transpose(a->k, a->n, a->dh, a->dh, t);          // K^T
    sb_rows_times(a->q, a->dh, a->tq, a->dh, t, a->s, a->lds);
    sb_transpose(a->v, a->n, a->dh, a->dh, t);          // V^T
    sb_rows_times(a->dout, a->lddo, a->tq, a->dh, t, a->dp, a->lddp);
}

// dst[0..dh) = dst + acc (the ukr's beta == 1: C first).
MHSA_AVX512_INLINE void sb_add(float *dst, __m512 acc, __mmask16 mk)
{
    _mm512_mask_storeu_ps(dst, mk,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(mk, dst), acc));
}

// dV and dK of keys j..j+g-1 (g <= GROUP), whose sums all run over rows
// [r0, tq): one chain per key and gradient.
MHSA_AVX512_INLINE void sb_keys(const mhsa_small_bwd_args *a, size_t j,
                                size_t g, size_t r0, __mmask16 mk)
{
    __m512 v[GROUP], k[GROUP];
    for (size_t i = 0; i < g; i++)
        v[i] = k[i] = _mm512_setzero_ps();
    for (size_t r = r0; r < a->tq; r++) {
        __m512 dor = _mm512_maskz_loadu_ps(mk, a->dout + r * a->lddo);
        __m512 qr = _mm512_maskz_loadu_ps(mk, a->q + r * a->dh);
        const float *p = a->s + r * a->lds + j, *ds = a->dp + r * a->lddp + j;
        for (size_t i = 0; i < g; i++) {
            v[i] = _mm512_fmadd_ps(_mm512_set1_ps(p[i]), dor, v[i]);
            k[i] = _mm512_fmadd_ps(_mm512_set1_ps(ds[i]), qr, k[i]);
        }
    }
    for (size_t i = 0; i < g; i++) {
        sb_add(a->dv + (j + i) * a->ldg, v[i], mk);
        sb_add(a->dk + (j + i) * a->ldg, k[i], mk);
    }
}

// dQ of rows r..r+g-1 (g <= GROUP), whose sums all run over keys [0, ke);
// xs[i] holds row r+i's fl(scale * ds).
MHSA_AVX512_INLINE void sb_rows_dq(const mhsa_small_bwd_args *a, size_t r,
                                   size_t g, size_t ke,
                                   float xs[GROUP][SB_], __mmask16 mk)
{
    __m512 c[GROUP];
    for (size_t i = 0; i < g; i++)
        c[i] = _mm512_setzero_ps();
    for (size_t j = 0; j < ke; j++) {
        __m512 kr = _mm512_maskz_loadu_ps(mk, a->k + j * a->dh);
        for (size_t i = 0; i < g; i++)
            c[i] = _mm512_fmadd_ps(_mm512_set1_ps(xs[i][j]), kr, c[i]);
    }
    for (size_t i = 0; i < g; i++)
        sb_add(a->dq + (r + i) * a->ldg, c[i], mk);
}

void mhsa_small_bwd_grads__avx512(const mhsa_small_bwd_args *a)
{
    size_t tq = a->tq, n = a->n;
    __mmask16 mk = mhsa_mask16__avx512(a->dh);
    if (a->do_dkv)
        for (size_t j = 0; j < n;) {
            size_t g = mhsa_run_length(a->r0, j, n, GROUP), r0 = a->r0[j];
            if (r0 < tq) {
                if (g == GROUP)   // the usual case: unrolled in registers
                    sb_keys(a, j, GROUP, r0, mk);
                else
                    for (size_t i = 0; i < g; i++)
                        sb_keys(a, j + i, 1, r0, mk);
            }
            j += g;
        }
    if (!a->do_dq)
        return;
    __m512 vs = _mm512_set1_ps(a->scale);
    __mmask16 mn = mhsa_mask16__avx512(n);
    for (size_t r = 0; r < tq;) {
        size_t g = mhsa_run_length(a->kend, r, tq, GROUP);
        size_t ke = a->kend[r];
        if (ke > 0) {
            // scale * ds in fp32 first, as pack_a folds alpha in.
            float xs[GROUP][SB_];
            for (size_t i = 0; i < g; i++)
                _mm512_storeu_ps(xs[i], _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(
                                     mn, a->dp + (r + i) * a->lddp)));
            if (g == GROUP)
                sb_rows_dq(a, r, GROUP, ke, xs, mk);
            else
                for (size_t i = 0; i < g; i++)
                    sb_rows_dq(a, r + i, 1, ke, xs + i, mk);
        }
        r += g;
    }
}
