// bf16gemm_12x32.c — the AVX512-BF16 12x32 micro-kernel (vdpbf16ps).
//
// Register budget (32 zmm): 24 accumulators (12 rows x 2 halves of 32
// columns) + 2 for the B pair row + 1 for the broadcast A pair = 27, the
// fp32 12x32 tile's shape (sgemm_12x32.c says why 12x32), so the C blocks
// and the driver's split match the fp32 path. Each depth pair is 2 B loads
// and 12 32-bit broadcasts for 24 vdpbf16ps, i.e. 2 x 16 x 12 x 2 = 768
// multiply-adds: twice the fp32 tile's work per instruction.
//
// Each lane sums its pairs from 0 in order, one vdpbf16ps per pair
// (odd depth first, then even, as the SDM gives it; DAZ/FTZ, RNE), then
// C = beta*C + acc (beta == 0 never reads C). Not measured: the machine
// this was written on has no AVX512-BF16 (tests run it emulated).
#define MHSA_BF16_INTRINSICS 1
#include <string.h>

#include "avx512/bf16.h"
#include "kernels/sgemm_entries.h"

enum { MR = 12, NR = 32 };

// The beta term's add and FMA (sgemm_entries.h: MHSA_SGEMM_ADD_BETA) as
// plain intrinsics, c + sum and b * a + acc: this tile makes no promise of
// which NaN comes out (sgemm_12x32.c's fixed order is for its two
// kernels, which must agree with each other).
MHSA_AVX512_INLINE __m512 add_sum(__m512 sum, __m512 c)
{
    return _mm512_add_ps(c, sum);
}

MHSA_AVX512_INLINE __m512 fma_acc(__m512 acc, __m512 b, __m512 a)
{
    return _mm512_fmadd_ps(b, a, acc);
}

MHSA_AVX512_INLINE void store_row(float *c, __m512 lo, __m512 hi,
                                  float beta, __mmask16 m0, __mmask16 m1)
{
    if (beta != 0.0f) {
        __m512 c0 = _mm512_maskz_loadu_ps(m0, c);
        __m512 c1 = _mm512_maskz_loadu_ps(m1, c + 16);
        MHSA_SGEMM_ADD_BETA(lo, hi, c0, c1, beta, _mm512_set1_ps);
    }
    _mm512_mask_storeu_ps(c, m0, lo);
    _mm512_mask_storeu_ps(c + 16, m1, hi);
}

void mhsa_bf16gemm_12x32__avx512bf16(size_t k, const uint16_t *ap,
                                     const uint16_t *bp, float *c,
                                     size_t ldc, size_t m, size_t n,
                                     float beta)
{
    __m512 acc[MR][2];
    for (int i = 0; i < MR; i++)
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    size_t kp = (k + 1) / 2;
    for (size_t q = 0; q < kp; q++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + q * NR * 2);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + q * NR * 2 + 32);
        const uint16_t *a = ap + q * MR * 2;
        for (int i = 0; i < MR; i++) {
            int32_t pair;
            memcpy(&pair, a + 2 * i, 4);
            __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
        }
    }
    __mmask16 m0 = mhsa_mask16__avx512(n);
    __mmask16 m1 = mhsa_mask16__avx512(n > 16 ? n - 16 : 0);
    for (size_t i = 0; i < m && i < MR; i++)
        store_row(c + i * ldc, acc[i][0], acc[i][1], beta, m0, m1);
}
