// bf16_pack_a.c — packs alpha * op(A) into bf16 A panels (kernels.h,
// mhsa_bf16_tiles): alpha is multiplied in fp32 (as the fp32 pack_a does)
// and the product rounded to bf16 (vcvtne2ps2bf16).
//  - mr12 (AVX512-BF16): per depth pair q, the 12 rows' pairs as 32-bit
//    lanes, the lanes one 32-bit broadcast each in the micro-kernel.
//  - mr32 (AMX): per 32-deep step, 32 rows of 32 bf16, each half of the
//    rows one 16 x 64-byte tile.
// Rows past m and depths past k are zero registers (the zero-masked
// multiply keeps them an exact 0 even when alpha is inf or NaN); nothing
// past the block is read.
#define MHSA_BF16_INTRINSICS 1
#include "avx512/bf16.h"

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

// alpha * op(A)[i][kk .. kk+15] for i < 16 (row i0 + i), zero where i >= m
// or kk + d >= k: non-transposed, one masked row load each; transposed,
// 16 depth rows loaded along i and transposed.
MHSA_AVX512_INLINE void load_rows16(const float *a, size_t lda, int trans,
                                    size_t m, size_t k, size_t kk,
                                    __m512 va, __m512 r[16])
{
    size_t kn = k > kk ? k - kk : 0;
    kn = kn < 16 ? kn : 16;
    __mmask16 dmask = mhsa_mask16__avx512(kn);
    if (!trans) {
        for (size_t i = 0; i < 16; i++)
            r[i] = i < m && kn ? _mm512_maskz_mul_ps(
                                     dmask, va,
                                     _mm512_maskz_loadu_ps(dmask,
                                                           a + i * lda + kk))
                               : _mm512_setzero_ps();
        return;
    }
    __mmask16 rmask = mhsa_mask16__avx512(m);
    for (size_t d = 0; d < 16; d++)
        r[d] = d < kn ? _mm512_maskz_mul_ps(
                            rmask, va,
                            _mm512_maskz_loadu_ps(rmask, a + (kk + d) * lda))
                      : _mm512_setzero_ps();
    mhsa_transpose16__avx512(r);
}

void mhsa_bf16_pack_a_mr12__avx512bf16(size_t m, size_t k, const float *a,
                                       size_t lda, int trans, float alpha,
                                       uint16_t *ap)
{
    enum { MR = 12 };
    size_t mm = m < MR ? m : MR, kpad = round_up(k, 2);
    __m512 va = _mm512_set1_ps(alpha);
    const __mmask16 store12 = mhsa_mask16__avx512(MR);
    if (trans) {
        // op(A)[i][kk] = a[kk*lda + i]: a depth's 12 rows are contiguous,
        // so two depths make the pairs of every row at once.
        __mmask16 rmask = mhsa_mask16__avx512(mm);
        for (size_t q = 0; q < kpad / 2; q++) {
            __m512 lo = _mm512_maskz_mul_ps(
                rmask, va, _mm512_maskz_loadu_ps(rmask, a + 2 * q * lda));
            __m512 hi = 2 * q + 1 < k
                      ? _mm512_maskz_mul_ps(
                            rmask, va,
                            _mm512_maskz_loadu_ps(rmask,
                                                  a + (2 * q + 1) * lda))
                      : _mm512_setzero_ps();
            _mm512_mask_storeu_ps((float *)(ap + q * MR * 2), store12,
                                  _mm512_castsi512_ps(
                                      mhsa_bf16_pairs(lo, hi)));
        }
        return;
    }
    // op(A)[i][kk] = a[i*lda + kk]: 32 depths of a row round to its 16
    // pairs in order; 16 rows of those transpose into 16 pair columns.
    for (size_t kk = 0; kk < kpad; kk += 32) {
        __m512 lo[16], hi[16], r[16];
        load_rows16(a, lda, 0, mm, k, kk, va, lo);
        load_rows16(a, lda, 0, mm, k, kk + 16, va, hi);
        for (size_t i = 0; i < 16; i++)
            r[i] = _mm512_castsi512_ps(mhsa_bf16_round32(lo[i], hi[i]));
        mhsa_transpose16__avx512(r);
        size_t pairs = (kpad - kk) / 2 < 16 ? (kpad - kk) / 2 : 16;
        for (size_t q = 0; q < pairs; q++)
            _mm512_mask_storeu_ps((float *)(ap + (kk / 2 + q) * MR * 2),
                                  store12, r[q]);
    }
}

void mhsa_bf16_pack_a_mr32__amx(size_t m, size_t k, const float *a,
                                size_t lda, int trans, float alpha,
                                uint16_t *ap)
{
    enum { MR = 32 };
    size_t mm = m < MR ? m : MR, kpad = round_up(k, 32);
    __m512 va = _mm512_set1_ps(alpha);
    for (size_t kk = 0; kk < kpad; kk += 32) {
        uint16_t *step = ap + kk * MR;   // 32 rows x 32 bf16
        for (size_t h = 0; h < MR; h += 16) {
            size_t mh = mm > h ? mm - h : 0;
            __m512 lo[16], hi[16];
            const float *a0 = trans ? a + h : a + h * lda;
            load_rows16(a0, lda, trans, mh, k, kk, va, lo);
            load_rows16(a0, lda, trans, mh, k, kk + 16, va, hi);
            for (size_t i = 0; i < 16; i++)
                _mm512_storeu_si512(step + (h + i) * 32,
                                    mhsa_bf16_round32(lo[i], hi[i]));
        }
    }
}
