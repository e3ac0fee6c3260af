// small_bwd.c — the AVX2 small attention-backward products (kernels.h,
// body in kernels/small_bwd_body.h): one FMA per product, as the 6x16
// micro-kernel rounds; fmaf compiles to vfmadd here (-mfma) and the
// 16 lanes are two ymm accumulators in registers. The padded copies are masked loads and
// 8x8 register transposes (a scalar copy cost more than the products).
#include <math.h>
#include <immintrin.h>

#include "avx2/avx2.h"
#include "avx2/vmath.h"
#include "avx2/vtranspose.h"

enum { SB_ = MHSA_SMALL_BWD_MAX };

// t[r][c] = x[r*ld + c] for r < rows, c < cols; 0 for c >= cols.
static void sb_rows(const float *x, size_t rows, size_t cols, size_t ld,
                    float t[SB_][SB_])
{
    __m256i m0 = mhsa_tail_mask__avx2(cols);
    __m256i m1 = mhsa_tail_mask__avx2(cols > 8 ? cols - 8 : 0);
    for (size_t r = 0; r < rows; r++) {
        _mm256_storeu_ps(t[r], _mm256_maskload_ps(x + r * ld, m0));
        _mm256_storeu_ps(t[r] + 8, _mm256_maskload_ps(x + r * ld + 8, m1));
    }
}

// t[c][r] = x[r*ld + c] for r < rows, c < cols; 0 for r >= rows.
static void sb_transpose(const float *x, size_t rows, size_t cols,
                         size_t ld, float t[SB_][SB_])
{
    __m256i m0 = mhsa_tail_mask__avx2(cols);
    __m256i m1 = mhsa_tail_mask__avx2(cols > 8 ? cols - 8 : 0);
    for (size_t rb = 0; rb < SB_; rb += 8)
        for (size_t cb = 0; cb < cols; cb += 8) {
            __m256i mk = cb ? m1 : m0;
            __m256 v[8];
            for (size_t i = 0; i < 8; i++)
                v[i] = rb + i < rows
                     ? _mm256_maskload_ps(x + (rb + i) * ld + cb, mk)
                     : _mm256_setzero_ps();
            mhsa_transpose8__avx2(v);
            for (size_t i = 0; i < 8; i++)
                _mm256_storeu_ps(t[cb + i] + rb, v[i]);
        }
}
// c0:c1 (16 lanes) += x * b[0..16), one FMA per lane.
#define SB_FMA2(c0, c1, x, b)                                                 \
    do {                                                                      \
        c0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b), c0);                      \
        c1 = _mm256_fmadd_ps(x, _mm256_loadu_ps((b) + 8), c1);                \
    } while (0)

// out[0..16) = sum over d < depth of x[d] * b[d][0..16), from +0.
static inline void sb_row_times_v(const float *x, size_t depth,
                                  const float b[SB_][SB_], float *out)
{
    __m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps();
    for (size_t d = 0; d < depth; d++)
        SB_FMA2(c0, c1, _mm256_broadcast_ss(x + d), b[d]);
    _mm256_storeu_ps(out, c0);
    _mm256_storeu_ps(out + 8, c1);
}

// dst[0..dh) = dst + acc (the ukr's beta == 1: C first).
static inline void sb_add_v(float *dst, __m256 c0, __m256 c1, size_t dh)
{
    __m256i m0 = mhsa_tail_mask__avx2(dh);
    __m256i m1 = mhsa_tail_mask__avx2(dh > 8 ? dh - 8 : 0);
    _mm256_maskstore_ps(dst, m0,
                        _mm256_add_ps(_mm256_maskload_ps(dst, m0), c0));
    if (dh > 8)
        _mm256_maskstore_ps(dst + 8, m1, _mm256_add_ps(
                                _mm256_maskload_ps(dst + 8, m1), c1));
}

void mhsa_small_bwd_scores__avx2(const mhsa_small_bwd_args *a)
{
    float kt[SB_][SB_], vt[SB_][SB_];
    sb_transpose(a->k, a->n, a->dh, a->dh, kt);
    sb_transpose(a->v, a->n, a->dh, a->dh, vt);
    for (size_t r = 0; r < a->tq; r++) {
        sb_row_times_v(a->q + r * a->dh, a->dh, kt, a->s + r * a->lds);
        sb_row_times_v(a->dout + r * a->lddo, a->dh, vt,
                       a->dp + r * a->lddp);
    }
}

void mhsa_small_bwd_grads__avx2(const mhsa_small_bwd_args *a)
{
    size_t tq = a->tq, n = a->n, dh = a->dh;
    if (a->do_dkv) {
        float dor[SB_][SB_], qr[SB_][SB_];
        sb_rows(a->dout, tq, dh, a->lddo, dor);
        sb_rows(a->q, tq, dh, dh, qr);
        for (size_t j = 0; j < n; j++) {
            if (a->r0[j] >= tq)
                continue;
            __m256 v0 = _mm256_setzero_ps(), v1 = v0, k0 = v0, k1 = v0;
            for (size_t r = a->r0[j]; r < tq; r++) {
                __m256 p = _mm256_broadcast_ss(a->s + r * a->lds + j);
                __m256 ds = _mm256_broadcast_ss(a->dp + r * a->lddp + j);
                SB_FMA2(v0, v1, p, dor[r]);
                SB_FMA2(k0, k1, ds, qr[r]);
            }
            sb_add_v(a->dv + j * a->ldg, v0, v1, dh);
            sb_add_v(a->dk + j * a->ldg, k0, k1, dh);
        }
    }
    if (!a->do_dq)
        return;
    float kr[SB_][SB_];
    sb_rows(a->k, n, dh, dh, kr);
    __m256 vs = _mm256_set1_ps(a->scale);
    for (size_t r = 0; r < tq; r++) {
        if (a->kend[r] == 0)
            continue;
        __m256 c0 = _mm256_setzero_ps(), c1 = c0;
        const float *ds = a->dp + r * a->lddp;
        for (size_t j = 0; j < a->kend[r]; j++) {
            // scale * ds in fp32 first, as pack_a folds alpha in.
            __m256 x = _mm256_mul_ps(vs, _mm256_broadcast_ss(ds + j));
            SB_FMA2(c0, c1, x, kr[j]);
        }
        sb_add_v(a->dq + r * a->ldg, c0, c1, dh);
    }
}
