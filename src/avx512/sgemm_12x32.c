// sgemm_12x32.c — the AVX-512 12x32 micro-kernel.
//
// Register budget (32 zmm): 24 accumulators (12 rows x 2 halves of 32
// columns) + 2 for the B row + 1 for the broadcast A element = 27. Each
// depth step is 2 B loads and 12 broadcasts for 24 FMAs: 12 cycles of a
// core with two 512-bit FMA pipes (Zen 5, Intel server cores) against 14
// load-port operations, well inside 2-3 loads per cycle; 24 independent
// chains cover the FMA latency (4 cycles x 2 pipes = 8 needed).
//
// Why 12x32 and not 6x64 (4 B loads, 6 broadcasts, 24 FMAs) or 14x32:
//  - the attention code sizes its blocks from the tile (attention.c:
//    72 query rows and 128 keys rounded up to mr and nr) and multiplies
//    (rows x dh) by (dh x keys) and (rows x keys) by (keys x dh). NR = 32
//    divides 128 keys and the usual head sizes 64 and 128 and also 32, 96;
//    NR = 64 would waste half a panel for dh 32 and a quarter for dh 96.
//    MR = 12 divides the 72-row query block (14 would make it 84) and the
//    12-token rows of the tiny benchmark;
//  - the B micro-panel that stays in L1 while the A panels stream past is
//    kc x 32 floats: 16 KiB at the driver's KC = 128 for this table
//    (gemm.c), half of Zen 4's 32 KiB L1D and a third of Zen 5's 48 KiB;
//    with NR = 64 the same depth would fill Zen 4's L1;
//  - 14x32 would add 4 FMAs per step for 2 more broadcasts and leave one
//    spare register; the gain is small and the 72-row blocks fit worse.
// None of this is measured: the machine this was written on has no
// AVX-512 (Zen 3). The kernel's results are tested under SIMDe emulation
// (tests/), its speed is not.
//
// Full tiles load and store C directly. Edge tiles (m < 12 or n < 32)
// write only rows < m and, through masked loads/stores, columns < n;
// beta == 0 never loads C, so NaN there cannot leak in. Each C element
// sums its k products in order with one rounding per FMA.
#include "avx512/avx512.h"
#include "avx512/vmath.h"

enum { MR = MHSA_AVX512_MR, NR = MHSA_AVX512_NR };

// One row of C from its two accumulators; m0, m1 mask the two halves.
MHSA_AVX512_INLINE void store_row(float *c, __m512 lo, __m512 hi,
                                  float beta, int full, __mmask16 m0,
                                  __mmask16 m1)
{
    if (beta != 0.0f) {
        __m512 c0 = full ? _mm512_loadu_ps(c) : _mm512_maskz_loadu_ps(m0, c);
        __m512 c1 = full ? _mm512_loadu_ps(c + 16)
                         : _mm512_maskz_loadu_ps(m1, c + 16);
        if (beta == 1.0f) {
            lo = _mm512_add_ps(c0, lo);
            hi = _mm512_add_ps(c1, hi);
        } else {
            __m512 vb = _mm512_set1_ps(beta);
            lo = _mm512_fmadd_ps(vb, c0, lo);
            hi = _mm512_fmadd_ps(vb, c1, hi);
        }
    }
    if (full) {
        _mm512_storeu_ps(c, lo);
        _mm512_storeu_ps(c + 16, hi);
    } else {
        _mm512_mask_storeu_ps(c, m0, lo);
        _mm512_mask_storeu_ps(c + 16, m1, hi);
    }
}

// acc<i>_lo/hi += a[i] * (b_lo, b_hi)
#define ROW_FMA(i)                                                            \
    do {                                                                      \
        __m512 ai = _mm512_set1_ps(a[i]);                                     \
        acc##i##_lo = _mm512_fmadd_ps(ai, b_lo, acc##i##_lo);                 \
        acc##i##_hi = _mm512_fmadd_ps(ai, b_hi, acc##i##_hi);                 \
    } while (0)

#define ROW_STORE(i)                                                          \
    do {                                                                      \
        if (m > i)                                                            \
            store_row(c + i * ldc, acc##i##_lo, acc##i##_hi, beta, full, m0,  \
                      m1);                                                    \
    } while (0)

void mhsa_sgemm_12x32__avx512(size_t k, const float *ap, const float *bp,
                              float *c, size_t ldc, size_t m, size_t n,
                              float beta)
{
    if (m == 0 || n == 0)
        return;
    __m512 acc0_lo = _mm512_setzero_ps(), acc0_hi = _mm512_setzero_ps();
    __m512 acc1_lo = _mm512_setzero_ps(), acc1_hi = _mm512_setzero_ps();
    __m512 acc2_lo = _mm512_setzero_ps(), acc2_hi = _mm512_setzero_ps();
    __m512 acc3_lo = _mm512_setzero_ps(), acc3_hi = _mm512_setzero_ps();
    __m512 acc4_lo = _mm512_setzero_ps(), acc4_hi = _mm512_setzero_ps();
    __m512 acc5_lo = _mm512_setzero_ps(), acc5_hi = _mm512_setzero_ps();
    __m512 acc6_lo = _mm512_setzero_ps(), acc6_hi = _mm512_setzero_ps();
    __m512 acc7_lo = _mm512_setzero_ps(), acc7_hi = _mm512_setzero_ps();
    __m512 acc8_lo = _mm512_setzero_ps(), acc8_hi = _mm512_setzero_ps();
    __m512 acc9_lo = _mm512_setzero_ps(), acc9_hi = _mm512_setzero_ps();
    __m512 acc10_lo = _mm512_setzero_ps(), acc10_hi = _mm512_setzero_ps();
    __m512 acc11_lo = _mm512_setzero_ps(), acc11_hi = _mm512_setzero_ps();

    // Warm the C rows we will write while the k loop runs (two lines each).
    for (size_t i = 0; i < m; i++) {
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
    }

    for (size_t kk = 0; kk < k; kk++) {
        const float *a = ap + kk * MR, *b = bp + kk * NR;
        // 4 depth steps (512 bytes) ahead: each step is two lines of B.
        _mm_prefetch((const char *)(b + 4 * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + 4 * NR + 16), _MM_HINT_T0);
        __m512 b_lo = _mm512_loadu_ps(b), b_hi = _mm512_loadu_ps(b + 16);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
        ROW_FMA(6);
        ROW_FMA(7);
        ROW_FMA(8);
        ROW_FMA(9);
        ROW_FMA(10);
        ROW_FMA(11);
    }

    size_t nn = n < NR ? n : NR;
    int full = m >= MR && nn == NR;
    __mmask16 m0 = mhsa_mask16__avx512(nn);
    __mmask16 m1 = mhsa_mask16__avx512(nn > 16 ? nn - 16 : 0);
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
    ROW_STORE(6);
    ROW_STORE(7);
    ROW_STORE(8);
    ROW_STORE(9);
    ROW_STORE(10);
    ROW_STORE(11);
}
