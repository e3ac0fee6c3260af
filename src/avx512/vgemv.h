// vgemv.h — the AVX-512 tiles of the one-row products (decoding one
// token), shared by gemv_n / gemv_t over fp32 rows, and kv_dot / kv_acc over K/V cache rows stored as fp32,
// f16 or bf16, converted in registers (vcvtph2ps; bf16 by a 16-bit shift).
// All stream the matrix once, unpacked; the work per element is one FMA,
// so they run at the speed of memory, not of the FMA units.
//
// Bits. A dot product s = q . K[j] is one 16-lane accumulator per (row,
// key): FMAs over the chunks i = 0, 16, ... in order (the tail chunk
// masked, its missing lanes 0), then the fixed reduction tree of
// mhsa_hsum__avx512. An accumulation o[i] += p[j] V[j][i] is one FMA per
// element per j, j in order. Neither depends on how many query rows or
// keys are processed together, so gemv_n (= dot with beta) and gemv_t are
// the one-row, fp32 cases of the same code: kv_dot/kv_acc with MHSA_F32
// give gemv's bits on each row, whatever m is (kernels.h).
//
// Static inline: included only by src/avx512/{gemv_n,gemv_t,kv_dot,
// kv_acc}.c, compiled with the AVX-512 flags.
#ifndef MHSA_AVX512_VGEMV_H
#define MHSA_AVX512_VGEMV_H

#include "kernels/gemv_plan.h"
#include "avx512/avx512.h"
#include "avx512/vmath.h"

// ---- dot products: nq query rows (stride ldq) x nk keys (stride ldk, in
// elements of dt) over d elements; s[r*lds + t] = q_r . K[t]. nq <= 4 and
// nk <= 4 are constants wherever this is inlined (16 accumulators, 4
// converted key chunks, 1 query chunk: 21 of 32 zmm).
MHSA_AVX512_INLINE void dot_block(size_t nq, size_t nk, size_t d,
                                  const float *q, size_t ldq,
                                  const void *k, size_t ldk, mhsa_dtype dt,
                                  float *s, size_t lds)
{
    size_t es = mhsa_dtype_size(dt);
    const char *kr[4];
    for (size_t t = 0; t < nk; t++)
        kr[t] = (const char *)k + t * ldk * es;
    __m512 acc[4][4];
    for (size_t r = 0; r < nq; r++)
        for (size_t t = 0; t < nk; t++)
            acc[r][t] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= d; i += 16) {
        __m512 kv[4];
        for (size_t t = 0; t < nk; t++)
            kv[t] = mhsa_load16_as_f32__avx512(kr[t], i, dt);
        for (size_t r = 0; r < nq; r++) {
            __m512 qv = _mm512_loadu_ps(q + r * ldq + i);
            for (size_t t = 0; t < nk; t++)
                acc[r][t] = _mm512_fmadd_ps(kv[t], qv, acc[r][t]);
        }
    }
    if (i < d) {
        __mmask16 mk = mhsa_mask16__avx512(d - i);
        __m512 kv[4];
        for (size_t t = 0; t < nk; t++)
            kv[t] = mhsa_load_as_f32__avx512(kr[t], i, dt, mk);
        for (size_t r = 0; r < nq; r++) {
            __m512 qv = _mm512_maskz_loadu_ps(mk, q + r * ldq + i);
            for (size_t t = 0; t < nk; t++)
                acc[r][t] = _mm512_fmadd_ps(kv[t], qv, acc[r][t]);
        }
    }
    for (size_t r = 0; r < nq; r++)
        for (size_t t = 0; t < nk; t++)
            s[r * lds + t] = mhsa_hsum__avx512(acc[r][t]);
}

// dot_block's products for nq (2 to 4) query rows and nk = 16 / nq keys
// (8, 5 or 4), their 16 (or 15) sums reduced together: lane r nk + t of
// mhsa_tree16_lanes__avx512 is hsum(acc[r][t]), bit for bit, in 45
// instructions where separate sums take about 8 each and a scalar store.
// Why: at a head width of 64 a key's 4 chunks make only 4 FMAs a row, and
// the sums made dot_block compute-bound near DRAM speed: on the AMD Zen 4
// this reads K from L2 faster at 2, 3 (SmolLM2's GQA group) and 4 rows,
// near kv_acc on the same bytes (docs/performance.md, "Measurements behind
// the code").
// The chains are dot_block's, acc[r][t] = fma(K[t] chunk, q_r chunk, acc)
// over the chunks in order from +0, the tail masked.
MHSA_AVX512_INLINE void dot_block16(size_t nq, size_t d, const float *q,
                                    size_t ldq, const void *k, size_t ldk,
                                    mhsa_dtype dt, float *s, size_t lds)
{
    const size_t nk = 16 / nq;
    size_t es = mhsa_dtype_size(dt);
    const char *kr = (const char *)k;
    __m512 acc[16];
    #pragma GCC unroll 16
    for (size_t a = 0; a < 16; a++)
        acc[a] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= d; i += 16) {
        __m512 qv[4];
        #pragma GCC unroll 4
        for (size_t r = 0; r < nq; r++)
            qv[r] = _mm512_loadu_ps(q + r * ldq + i);
        #pragma GCC unroll 16
        for (size_t t = 0; t < nk; t++) {
            __m512 kv = mhsa_load16_as_f32__avx512(kr + t * ldk * es, i, dt);
            #pragma GCC unroll 4
            for (size_t r = 0; r < nq; r++)
                acc[r * nk + t] = _mm512_fmadd_ps(kv, qv[r], acc[r * nk + t]);
        }
    }
    if (i < d) {
        __mmask16 mk = mhsa_mask16__avx512(d - i);
        __m512 qv[4];
        #pragma GCC unroll 4
        for (size_t r = 0; r < nq; r++)
            qv[r] = _mm512_maskz_loadu_ps(mk, q + r * ldq + i);
        #pragma GCC unroll 16
        for (size_t t = 0; t < nk; t++) {
            __m512 kv = mhsa_load_as_f32__avx512(kr + t * ldk * es, i, dt, mk);
            #pragma GCC unroll 4
            for (size_t r = 0; r < nq; r++)
                acc[r * nk + t] = _mm512_fmadd_ps(kv, qv[r], acc[r * nk + t]);
        }
    }
    __m512 sums = mhsa_tree16_lanes__avx512(acc, 0);
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7,
                                          6, 5, 4, 3, 2, 1, 0);
    #pragma GCC unroll 4
    for (size_t r = 0; r < nq; r++) {
        __m512 row = r == 0 ? sums
                            : _mm512_permutexvar_ps(
                                  _mm512_add_epi32(
                                      iota, _mm512_set1_epi32((int)(r * nk))),
                                  sums);
        _mm512_mask_storeu_ps(s + r * lds, mhsa_mask16__avx512(nk), row);
    }
}

// All n keys for nq query rows: for 2 to 4 rows dot_block16's blocks,
// the next block's rows prefetched into L1 (faster from DRAM on the Zen 4;
// two or four blocks ahead gained less); then 4 keys at a time, then one
// by one. One row keeps 4-key blocks: 16 keys of 256 bytes read column by
// column were slower from DRAM (Zen 4), where the 4-key blocks read at a
// plain read's speed (docs/performance.md, "Measurements behind the
// code").
MHSA_AVX512_INLINE void dot_rows(size_t nq, size_t n, size_t d,
                                 const float *q, size_t ldq, const void *k,
                                 size_t ldk, mhsa_dtype dt, float *s,
                                 size_t lds)
{
    size_t es = mhsa_dtype_size(dt), j = 0, nk = 16 / nq;
    for (; nq >= 2 && j + nk <= n; j += nk) {
        for (size_t t = j + nk; t < j + 2 * nk && t < n; t++)
            for (size_t b = 0; b < d * es; b += 64)
                _mm_prefetch((const char *)k + t * ldk * es + b,
                             _MM_HINT_T0);
        dot_block16(nq, d, q, ldq, (const char *)k + j * ldk * es, ldk, dt,
                    s + j, lds);
    }
    for (; j + 4 <= n; j += 4)
        dot_block(nq, 4, d, q, ldq, (const char *)k + j * ldk * es, ldk, dt,
                  s + j, lds);
    for (; j < n; j++)
        dot_block(nq, 1, d, q, ldq, (const char *)k + j * ldk * es, ldk, dt,
                  s + j, lds);
}

// m query rows, 4 at a time (then 3, or 2 and 1), each key block read
// once per group of rows. Specialised per dtype so that the conversion is fixed
// inside the loops.
MHSA_AVX512_INLINE void dot_all(size_t m, size_t n, size_t d, const float *q,
                                size_t ldq, const void *k, size_t ldk,
                                mhsa_dtype dt, float *s, size_t lds)
{
    size_t r = 0;
    for (; r + 4 <= m; r += 4)
        dot_rows(4, n, d, q + r * ldq, ldq, k, ldk, dt, s + r * lds, lds);
    if (m - r == 3) {   // a GQA group of 3 (SmolLM2: 9 / 3) reads K once
        dot_rows(3, n, d, q + r * ldq, ldq, k, ldk, dt, s + r * lds, lds);
        return;
    }
    if (r + 2 <= m) {
        dot_rows(2, n, d, q + r * ldq, ldq, k, ldk, dt, s + r * lds, lds);
        r += 2;
    }
    if (r < m)
        dot_rows(1, n, d, q + r * ldq, ldq, k, ldk, dt, s + r * lds, lds);
}

// ---- accumulations: o_r[i] += sum_j p_r[j] V[j][i] for nq <= 4 rows and
// nc <= 4 chunks of 16 columns at i (16 accumulators, 4 converted V
// chunks, 1 broadcast); the last chunk masked by mk.
MHSA_AVX512_INLINE void acc_block(size_t nq, size_t nc, __mmask16 mk,
                                  size_t n, const float *p, size_t ldp,
                                  const void *v, size_t ldv, mhsa_dtype dt,
                                  float *o, size_t ldo)
{
    size_t es = mhsa_dtype_size(dt);
    __m512 acc[4][4];
    for (size_t r = 0; r < nq; r++)
        for (size_t c = 0; c < nc; c++)
            acc[r][c] = c + 1 < nc
                      ? _mm512_loadu_ps(o + r * ldo + 16 * c)
                      : _mm512_maskz_loadu_ps(mk, o + r * ldo + 16 * c);
    for (size_t j = 0; j < n; j++) {
        const char *row = (const char *)v + j * ldv * es;
        __m512 vv[4];
        for (size_t c = 0; c < nc; c++)
            vv[c] = c + 1 < nc
                  ? mhsa_load16_as_f32__avx512(row, 16 * c, dt)
                  : mhsa_load_as_f32__avx512(row, 16 * c, dt, mk);
        for (size_t r = 0; r < nq; r++) {
            __m512 pj = _mm512_set1_ps(p[r * ldp + j]);
            for (size_t c = 0; c < nc; c++)
                acc[r][c] = _mm512_fmadd_ps(pj, vv[c], acc[r][c]);
        }
    }
    for (size_t r = 0; r < nq; r++)
        for (size_t c = 0; c < nc; c++) {
            if (c + 1 < nc)
                _mm512_storeu_ps(o + r * ldo + 16 * c, acc[r][c]);
            else
                _mm512_mask_storeu_ps(o + r * ldo + 16 * c, mk, acc[r][c]);
        }
}

// All d columns for nq rows: 64 at a time, then 16, then a masked tail.
MHSA_AVX512_INLINE void acc_rows(size_t nq, size_t n, size_t d,
                                 const float *p, size_t ldp, const void *v,
                                 size_t ldv, mhsa_dtype dt, float *o,
                                 size_t ldo)
{
    size_t es = mhsa_dtype_size(dt), i = 0;
    for (; i + 64 <= d; i += 64)
        acc_block(nq, 4, 0xffff, n, p, ldp, (const char *)v + i * es, ldv,
                  dt, o + i, ldo);
    for (; i + 16 <= d; i += 16)
        acc_block(nq, 1, 0xffff, n, p, ldp, (const char *)v + i * es, ldv,
                  dt, o + i, ldo);
    if (i < d)
        acc_block(nq, 1, mhsa_mask16__avx512(d - i), n, p, ldp,
                  (const char *)v + i * es, ldv, dt, o + i, ldo);
}

MHSA_AVX512_INLINE void acc_all(size_t m, size_t n, size_t d, const float *p,
                                size_t ldp, const void *v, size_t ldv,
                                mhsa_dtype dt, float *o, size_t ldo)
{
    size_t r = 0;
    for (; r + 4 <= m; r += 4)
        acc_rows(4, n, d, p + r * ldp, ldp, v, ldv, dt, o + r * ldo, ldo);
    if (m - r == 3) {   // a GQA group of 3 reads V once
        acc_rows(3, n, d, p + r * ldp, ldp, v, ldv, dt, o + r * ldo, ldo);
        return;
    }
    if (r + 2 <= m) {
        acc_rows(2, n, d, p + r * ldp, ldp, v, ldv, dt, o + r * ldo, ldo);
        r += 2;
    }
    if (r < m)
        acc_rows(1, n, d, p + r * ldp, ldp, v, ldv, dt, o + r * ldo, ldo);
}

// ---- the tile of gemv_n / gemv_n16 (the plan: kernels/gemv_plan.h): R
// (<= MHSA_GEMV_STREAMS) rows `stride` bytes apart, one chain each, the
// chains of dot_block (1, 1) above, so a row has its bits (and a 16-bit
// row the bits of the fp32 row holding its values); 64 elements of every
// row a step, unrolled so that the loads of the R streams interleave.
#define MHSA_AVX512_UNROLL _Pragma("GCC unroll 32")
MHSA_AVX512_INLINE void gemv_rows(size_t R, size_t d, const char *a,
                                  size_t stride, mhsa_dtype dt,
                                  const float *x, float *y, size_t ys,
                                  float beta)
{
    __m512 acc[MHSA_GEMV_STREAMS];
    for (size_t r = 0; r < R; r++)
        acc[r] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 64 <= d; i += 64)
        MHSA_AVX512_UNROLL for (size_t q = 0; q < 64; q += 16) {
            __m512 xv = _mm512_loadu_ps(x + i + q);
            MHSA_AVX512_UNROLL for (size_t r = 0; r < R; r++)
                acc[r] = _mm512_fmadd_ps(
                    mhsa_load16_as_f32__avx512(a + r * stride, i + q, dt),
                    xv, acc[r]);
        }
    for (; i + 16 <= d; i += 16) {
        __m512 xv = _mm512_loadu_ps(x + i);
        for (size_t r = 0; r < R; r++)
            acc[r] = _mm512_fmadd_ps(
                mhsa_load16_as_f32__avx512(a + r * stride, i, dt), xv,
                acc[r]);
    }
    if (i < d) {
        __mmask16 mk = mhsa_mask16__avx512(d - i);
        __m512 xv = _mm512_maskz_loadu_ps(mk, x + i);
        for (size_t r = 0; r < R; r++)
            acc[r] = _mm512_fmadd_ps(
                mhsa_load_as_f32__avx512(a + r * stride, i, dt, mk), xv,
                acc[r]);
    }
    for (size_t r = 0; r < R; r++) {
        float s = mhsa_hsum__avx512(acc[r]);
        y[r * ys] = beta == 0.0f ? s : beta * y[r * ys] + s;
    }
}

#endif
