// sgemm_6x16.c — the AVX2+FMA 6x16 micro-kernels: A from a packed panel
// (sgemm_ukr) or row-major from the caller's matrix (sgemm_ukr_ra).
//
// Register budget (16 ymm): 12 accumulators (6 rows x 2 halves of 16
// columns) + 2 for the B row + 1 for the broadcast A element = 15. Each
// depth step is 2 loads, 6 broadcasts and 12 FMAs; each C element sums its
// k products in order with one rounding per FMA. Both kernels are one body
// (tile below) whose only difference is the address of A[i][kk], and the
// row-major one's multiply by alpha (the packed panel holds fl(alpha a)
// already), so they give the same bits.
//
// Tiles of at most 8 columns run only the low half (6 accumulators, half
// the FMAs): the columns they store are the same sums; likewise tiles of
// at most 2 or 4 rows compute 2 or 4 rows (TILE_ROWS). Edge tiles (m < 6
// or n < 16) write only rows < m and columns < n, with whole 8/4/2/1-float
// loads and stores rather than masked ones (vmaskmovps stores were a large
// part of the tile's time in the tiny forward's attention on Zen 3:
// docs/performance.md, "Measurements behind the code"); beta == 0 never
// loads C, so NaN there cannot leak in.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "kernels/sgemm_entries.h"

enum { MR = 6, NR = 16 };

#define INLINE static inline __attribute__((always_inline))

// Which NaN a sum ends as. When several operands of one add or FMA are
// NaN, x86 returns the first in the instruction's own operand order, and
// the compiler picks that order per call site (vfmadd132/213/231, an add
// commuted to fold a load): the packed and row-major instances of the tile
// returned NaNs of different signs for one element (m 1, n 8, a NaN in A
// and a NaN bias). So the final add of beta * C (or the bias) is written in
// assembly with a fixed order, the sum first: sum + c returns the sum's
// NaN, else c's; acc + b*a acc's, else b's, else a's. The depth loop's
// FMAs too: as intrinsics, GCC gave the row-major tile at alpha = 1 other
// FMA forms than the packed one, and with a NaN in A and one in B at the
// same depth step 480 of 1536 elements came out as the other NaN
// (test_kernel_sgemm's ra_matches_packed_nan_payloads). The fixed order
// costs a few register copies around the asm (a few more instructions in
// the tiny forward under callgrind: docs/performance.md, "Measurements
// behind the code"); the AVX-512 tile (sgemm_12x32.c) does the same.
INLINE __m256 fma_acc(__m256 acc, __m256 b, __m256 a)
{
    __asm__("vfmadd231ps %2, %1, %0" : "+x"(acc) : "x"(b), "xm"(a));
    return acc;
}

INLINE __m256 add_sum(__m256 sum, __m256 c)
{
    __m256 r;
    __asm__("vaddps %2, %1, %0" : "=x"(r) : "x"(sum), "xm"(c));
    return r;
}

// Columns [0, n) of v, 1 <= n <= 8, with whole-vector stores.
INLINE void store_cols(float *c, __m256 v, size_t n)
{
    if (n == 8) {
        _mm256_storeu_ps(c, v);
        return;
    }
    __m128 x = _mm256_castps256_ps128(v);
    if (n & 4) {
        _mm_storeu_ps(c, x);
        c += 4;
        x = _mm256_extractf128_ps(v, 1);
    }
    if (n & 2) {
        _mm_storel_pi((__m64 *)c, x);
        c += 2;
        x = _mm_movehl_ps(x, x);
    }
    if (n & 1)
        _mm_store_ss(c, x);
}

// Columns [0, n) of c, 1 <= n <= 8, into lanes [0, n) (the rest are 0),
// reading no float past c[n - 1].
INLINE __m256 load_cols(const float *c, size_t n)
{
    if (n == 8)
        return _mm256_loadu_ps(c);
    __m128 lo = _mm_setzero_ps(), t = _mm_setzero_ps();
    size_t o = (n & 4) ? 4 : 0;
    if (n & 4)
        lo = _mm_loadu_ps(c);
    if (n & 2)
        t = _mm_loadl_pi(t, (const __m64 *)(c + o));
    if (n & 1) {
        __m128 s = _mm_load_ss(c + o + (n & 2));
        t = (n & 2) ? _mm_movelh_ps(t, s) : s;
    }
    return (n & 4) ? _mm256_set_m128(t, lo)
                   : _mm256_set_m128(_mm_setzero_ps(), t);
}

// One row of C (n columns, 1..16) from its accumulators; cin is the row
// the beta term reads: C's own, or the bias row (then beta is 1).
INLINE void store_row(float *c, const float *cin, __m256 lo, __m256 hi,
                      float beta, size_t n)
{
    size_t nlo = n < 8 ? n : 8, nhi = n > 8 ? n - 8 : 0;
    if (beta != 0.0f) {
        __m256 c0 = load_cols(cin, nlo);
        __m256 c1 = nhi ? load_cols(cin + 8, nhi) : _mm256_setzero_ps();
        MHSA_SGEMM_ADD_BETA(lo, hi, c0, c1, beta, _mm256_set1_ps);
    }
    store_cols(c, lo, nlo);
    if (nhi)
        store_cols(c + 8, hi, nhi);
}

// A[i][kk], multiplied by alpha first in the row-major kernel (scale).
#define A_AT(row) (scale ? _mm256_mul_ps(va, _mm256_broadcast_ss(row + o)) \
                         : _mm256_broadcast_ss(row + o))


// The tile. A[i][kk] is at a[i*rs + kk*cs] for i < m (rows >= m read row
// m - 1 when rs is a row stride: never past the matrix; a packed panel's
// zero rows are read as they are). scale: multiply A by alpha first.
// halves: 1 computes columns 0..7 only (n <= 8), 2 all 16. bias: NULL or
// the row every C row's beta term reads, with beta 1. rows: the rows
// computed, 2, 4 or MR, at least m; rows rows..MR-1 are neither read nor
// computed (each row is its own chain, so its bits do not change).
INLINE void tile(size_t k, const float *a, size_t rs, size_t cs, int clamp,
                 int scale, float alpha, const float *bp, float *c,
                 size_t ldc, size_t m, size_t n, float beta,
                 const float *bias, int halves, int rows)
{
    MHSA_SGEMM_ACC6(_mm256_setzero_ps(), 0, 1, 2, 3, 4, 5);
    __m256 va = _mm256_set1_ps(alpha);
    const float *a0 = a, *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs,
                *a4 = a + 4 * rs, *a5 = a + 5 * rs;
    if (clamp) {   // rows >= m repeat row m - 1 (their sums are dropped)
        const float *last = a + (m - 1) * rs;
        a1 = m > 1 ? a1 : last;
        a2 = m > 2 ? a2 : last;
        a3 = m > 3 ? a3 : last;
        a4 = m > 4 ? a4 : last;
        a5 = m > 5 ? a5 : last;
    }

    // Warm the C rows we will write while the k loop runs.
    for (size_t i = 0; i < m; i++)
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);

    // Unrolled by 4: the loop's own counter, pointer and branch were 6 of
    // its 25 instructions a step. The steps still run in order.
#pragma GCC unroll 4
    for (size_t kk = 0; kk < k; kk++) {
        const float *b = bp + kk * NR;
        size_t o = kk * cs;
        _mm_prefetch((const char *)(b + 8 * NR), _MM_HINT_T0);
        __m256 b_lo = _mm256_loadu_ps(b);
        __m256 b_hi = halves == 2 ? _mm256_loadu_ps(b + 8) : b_lo;
        MHSA_SGEMM_ROWS6_FMA(0, 1, 2, 3, 4, 5);
    }

    size_t nn = n < NR ? n : NR;
    size_t ldin = bias ? 0 : ldc;
    const float *cin = bias ? bias : c;
    if (bias)
        beta = 1.0f;
    if (m >= MR && nn == NR) {   // full tile: plain 8-float rows
        store_row(c, cin, acc0_lo, acc0_hi, beta, NR);
        store_row(c + 1 * ldc, cin + 1 * ldin, acc1_lo, acc1_hi, beta, NR);
        store_row(c + 2 * ldc, cin + 2 * ldin, acc2_lo, acc2_hi, beta, NR);
        store_row(c + 3 * ldc, cin + 3 * ldin, acc3_lo, acc3_hi, beta, NR);
        store_row(c + 4 * ldc, cin + 4 * ldin, acc4_lo, acc4_hi, beta, NR);
        store_row(c + 5 * ldc, cin + 5 * ldin, acc5_lo, acc5_hi, beta, NR);
        return;
    }
    store_row(c, cin, acc0_lo, acc0_hi, beta, nn);
    if (m > 1)
        store_row(c + 1 * ldc, cin + 1 * ldin, acc1_lo, acc1_hi, beta, nn);
    if (m > 2)
        store_row(c + 2 * ldc, cin + 2 * ldin, acc2_lo, acc2_hi, beta, nn);
    if (m > 3)
        store_row(c + 3 * ldc, cin + 3 * ldin, acc3_lo, acc3_hi, beta, nn);
    if (m > 4)
        store_row(c + 4 * ldc, cin + 4 * ldin, acc4_lo, acc4_hi, beta, nn);
    if (m > 5)
        store_row(c + 5 * ldc, cin + 5 * ldin, acc5_lo, acc5_hi, beta, nn);
}

// tile() at a constant row count: 2 for m <= 2, 4 for m <= 4, else MR.
// The edge tiles of A's last rows: a 32-row A (an encoder's sequence) is
// 5 tiles of 6 and one of 2, where a 6-row tile computed 36 rows and
// stored 32 (a ninth of the FMAs thrown away); 64 rows end in 4.
#define TILE_ROWS(m, ...)                                                     \
    do {                                                                      \
        if ((m) <= 2)                                                         \
            tile(__VA_ARGS__, 2);                                             \
        else if ((m) <= 4)                                                    \
            tile(__VA_ARGS__, 4);                                             \
        else                                                                  \
            tile(__VA_ARGS__, MR);                                            \
    } while (0)

MHSA_SGEMM_ENTRIES(avx2, 6, 16, 0)
