// pack.c — AVX2 packing of GEMM operands into 6-row A and 16-column B
// micro-panels (layouts in kernels.h).
//
// Where the source is contiguous along the panel (op(A) transposed, op(B)
// not) each depth step is one masked load and store. Where it is contiguous
// along the depth instead, 8 depth steps of 8 rows are loaded and transposed
// in registers (8x8 unpack/shuffle/permute). Rows past m (or n) and the
// lanes 6, 7 of an A panel are never loaded: they are zero registers, so
// padding is an exact 0 and no memory past the block is read.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"
#include "avx2/vtranspose.h"

enum { MR = 6, NR = 16 };

// One depth step of an A panel: 6 floats at p. A full 8-float store spills
// 2 floats into the next step's slots, which that step then overwrites;
// only the panel's last step needs the mask (masked stores are slow on AMD
// Zen: packing took a third of the GEMM time at K = 64). Same bytes in the
// end either way.
static inline void store_step(float *p, __m256 v, int more, __m256i store6)
{
    if (more)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, store6, v);
}

void mhsa_pack_a_mr6__avx2(size_t m, size_t k, const float *a, size_t lda,
                           int trans, float alpha, float *ap)
{
    size_t mm = m < MR ? m : MR;
    __m256 va = _mm256_set1_ps(alpha);
    __m256i store6 = mhsa_tail_mask__avx2(MR);
    if (trans) {
        // op(A)[i][kk] = a[kk*lda + i]: a panel column is contiguous. The
        // AND clears lanes >= m exactly even when alpha is inf or NaN.
        __m256i ld = mhsa_tail_mask__avx2(mm);
        for (size_t kk = 0; kk < k; kk++) {
            __m256 v = _mm256_mul_ps(va, _mm256_maskload_ps(a + kk * lda, ld));
            v = _mm256_and_ps(v, _mm256_castsi256_ps(ld));
            store_step(ap + kk * MR, v, kk + 1 < k, store6);
        }
        return;
    }
    size_t kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        __m256 r[8];
        for (size_t i = 0; i < 8; i++)
            r[i] = i < mm ? _mm256_mul_ps(va, _mm256_loadu_ps(a + i * lda + kk))
                          : _mm256_setzero_ps();
        mhsa_transpose8__avx2(r);
        for (size_t q = 0; q < 8; q++)
            store_step(ap + (kk + q) * MR, r[q], kk + q + 1 < k, store6);
    }
    for (; kk < k; kk++)
        for (size_t i = 0; i < MR; i++)
            ap[kk * MR + i] = i < mm ? alpha * a[i * lda + kk] : 0.0f;
}

void mhsa_pack_b_nr16__avx2(size_t k, size_t n, const float *b, size_t ldb,
                            int trans, float *bp)
{
    size_t nn = n < NR ? n : NR;
    if (!trans) {
        // op(B)[kk][j] = b[kk*ldb + j]: a panel row is contiguous.
        size_t n_hi = nn > 8 ? nn - 8 : 0;
        __m256i m0 = mhsa_tail_mask__avx2(nn), m1 = mhsa_tail_mask__avx2(n_hi);
        for (size_t kk = 0; kk < k; kk++) {
            const float *src = b + kk * ldb;
            __m256 lo, hi;
            if (nn == NR) {
                lo = _mm256_loadu_ps(src);
                hi = _mm256_loadu_ps(src + 8);
            } else {
                lo = _mm256_maskload_ps(src, m0);
                hi = _mm256_maskload_ps(src + 8, m1);
            }
            _mm256_storeu_ps(bp + kk * NR, lo);
            _mm256_storeu_ps(bp + kk * NR + 8, hi);
        }
        return;
    }
    // op(B)[kk][j] = b[j*ldb + kk]: 8 columns of the panel at a time.
    size_t kk = 0;
    for (; kk + 8 <= k; kk += 8)
        for (size_t h = 0; h < NR; h += 8) {
            __m256 r[8];
            for (size_t j = 0; j < 8; j++)
                r[j] = h + j < nn ? _mm256_loadu_ps(b + (h + j) * ldb + kk)
                                  : _mm256_setzero_ps();
            mhsa_transpose8__avx2(r);
            for (size_t q = 0; q < 8; q++)
                _mm256_storeu_ps(bp + (kk + q) * NR + h, r[q]);
        }
    for (; kk < k; kk++)
        for (size_t j = 0; j < NR; j++)
            bp[kk * NR + j] = j < nn ? b[j * ldb + kk] : 0.0f;
}
