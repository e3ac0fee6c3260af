// pack.c — AVX-512 packing of GEMM operands into 12-row A and 32-column B
// micro-panels (layouts in kernels.h).
//
// Where the source is contiguous along the panel (op(A) transposed, op(B)
// not) each depth step is one or two masked loads and stores. Where it is
// contiguous along the depth instead, 16 depth steps of 16 rows are loaded
// and transposed in registers (16x16: unpack, shuffle, two 128-bit lane
// shuffles); a depth tail of fewer than 16 steps uses masked loads, so no
// scalar loop remains. Rows past m (or n) and lanes 12..15 of an A panel
// column are never loaded: they are zero registers, so padding is an exact
// 0 and no memory past the block is read.
#include "avx512/avx512.h"
#include "avx512/vmath.h"
#include "avx512/vtranspose.h"

enum { MR = MHSA_AVX512_MR, NR = MHSA_AVX512_NR };

void mhsa_pack_a_mr12__avx512(size_t m, size_t k, const float *a,
                              size_t lda, int trans, float alpha,
                              float *ap)
{
    size_t mm = m < MR ? m : MR;
    __m512 va = _mm512_set1_ps(alpha);
    const __mmask16 store12 = mhsa_mask16__avx512(MR);
    __mmask16 rows = mhsa_mask16__avx512(mm);
    if (trans) {
        // op(A)[i][kk] = a[kk*lda + i]: a panel column is contiguous. The
        // zero-masked multiply clears lanes >= m exactly even when alpha is
        // inf or NaN.
        for (size_t kk = 0; kk < k; kk++) {
            __m512 v = _mm512_maskz_loadu_ps(rows, a + kk * lda);
            _mm512_mask_storeu_ps(ap + kk * MR, store12,
                                  _mm512_maskz_mul_ps(rows, va, v));
        }
        return;
    }
    // op(A)[i][kk] = a[i*lda + kk]: 16 depth steps of every row, then
    // transposed into 16 panel columns.
    for (size_t kk = 0; kk < k; kk += 16) {
        size_t kn = k - kk < 16 ? k - kk : 16;
        __mmask16 ld = mhsa_mask16__avx512(kn);
        __m512 r[16];
        for (size_t i = 0; i < 16; i++)
            r[i] = i < mm ? _mm512_mul_ps(va, _mm512_maskz_loadu_ps(
                                                  ld, a + i * lda + kk))
                          : _mm512_setzero_ps();
        mhsa_transpose16__avx512(r);
        for (size_t q = 0; q < kn; q++)
            _mm512_mask_storeu_ps(ap + (kk + q) * MR, store12, r[q]);
    }
}

void mhsa_pack_b_nr32__avx512(size_t k, size_t n, const float *b,
                              size_t ldb, int trans, float *bp)
{
    size_t nn = n < NR ? n : NR;
    if (!trans) {
        // op(B)[kk][j] = b[kk*ldb + j]: a panel row is contiguous.
        __mmask16 m0 = mhsa_mask16__avx512(nn);
        __mmask16 m1 = mhsa_mask16__avx512(nn > 16 ? nn - 16 : 0);
        for (size_t kk = 0; kk < k; kk++) {
            const float *src = b + kk * ldb;
            __m512 lo, hi;
            if (nn == NR) {
                lo = _mm512_loadu_ps(src);
                hi = _mm512_loadu_ps(src + 16);
            } else {
                lo = _mm512_maskz_loadu_ps(m0, src);
                hi = _mm512_maskz_loadu_ps(m1, src + 16);
            }
            _mm512_storeu_ps(bp + kk * NR, lo);
            _mm512_storeu_ps(bp + kk * NR + 16, hi);
        }
        return;
    }
    // op(B)[kk][j] = b[j*ldb + kk]: 16 columns of the panel at a time, 16
    // depth steps each, transposed.
    for (size_t kk = 0; kk < k; kk += 16) {
        size_t kn = k - kk < 16 ? k - kk : 16;
        __mmask16 ld = mhsa_mask16__avx512(kn);
        for (size_t h = 0; h < NR; h += 16) {
            __m512 r[16];
            for (size_t j = 0; j < 16; j++)
                r[j] = h + j < nn
                     ? _mm512_maskz_loadu_ps(ld, b + (h + j) * ldb + kk)
                     : _mm512_setzero_ps();
            mhsa_transpose16__avx512(r);
            for (size_t q = 0; q < kn; q++)
                _mm512_storeu_ps(bp + (kk + q) * NR + h, r[q]);
        }
    }
}
