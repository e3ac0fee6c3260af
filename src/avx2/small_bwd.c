// small_bwd.c — the AVX2 small attention-backward products (kernels.h,
// body in kernels/small_bwd_body.h), for the tiles the fused kernel
// (attn_small_bwd.c) declines: one FMA per product, as the 6x16
// micro-kernel rounds, the 16 lanes two ymm accumulators in registers.
// The padded copies are masked loads and 8x8 register transposes
// (small_bwd.h; a scalar copy cost more than the products). dV, dK and
// dQ are the fused kernel's chains (small_bwd.h), from P, dS and
// fl(scale * dS) transposed to key by key (alpha folded in first, as
// pack_a does).
#include <immintrin.h>

#include "avx2/avx2.h"
#include "avx2/small_bwd.h"

enum { SB_ = MHSA_SBW };

// t[c][r] = x[r*ld + c] for c < cols, every r < 16 (0 for r >= rows).
static void sb_transpose(const float *x, size_t rows, size_t cols,
                         size_t ld, float t[SB_][SB_])
{
    __m256 v[SB_][2];
    mhsa_sbw_columns(x, ld, rows, cols, v);
    for (size_t c = 0; c < cols; c++)
        for (size_t h = 0; h < 2; h++)
            _mm256_storeu_ps(t[c] + 8 * h, 8 * h < rows
                                               ? v[c][h]
                                               : _mm256_setzero_ps());
}

// out[0..16) = sum over d < depth of x[d] * b[d][0..16), from +0.
static inline void sb_row_times_v(const float *x, size_t depth,
                                  const float b[SB_][SB_], float *out)
{
    __m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps();
    for (size_t d = 0; d < depth; d++) {
        __m256 xd = _mm256_broadcast_ss(x + d);
        c0 = _mm256_fmadd_ps(xd, _mm256_loadu_ps(b[d]), c0);
        c1 = _mm256_fmadd_ps(xd, _mm256_loadu_ps(b[d] + 8), c1);
    }
    _mm256_storeu_ps(out, c0);
    _mm256_storeu_ps(out + 8, c1);
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
    // p, ds and fl(scale * ds), key j's 16 rows at [j * SB_].
    float pt[SB_][SB_], dst[SB_][SB_], xst[SB_][SB_];
    sb_transpose(a->s, a->tq, a->n, a->lds, pt);
    sb_transpose(a->dp, a->tq, a->n, a->lddp, dst);
    __m256 vs = _mm256_set1_ps(a->scale);
    for (size_t j = 0; j < a->n; j++)
        for (size_t h = 0; h < SB_; h += 8)
            _mm256_storeu_ps(xst[j] + h, _mm256_mul_ps(
                                              vs, _mm256_loadu_ps(dst[j] + h)));
    mhsa_sbw_grads(a, pt[0], dst[0], xst[0], a->dh);
}
