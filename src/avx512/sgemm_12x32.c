// sgemm_12x32.c — the AVX-512 12x32 micro-kernels: A from a packed panel
// (sgemm_ukr) or row-major from the caller's matrix (sgemm_ukr_ra).
//
// Register budget (32 zmm): 24 accumulators (12 rows x 2 halves of 32
// columns) + 2 for the B row + 1 for the broadcast A element (+ 1 for
// alpha in the row-major kernel) = 27 (28). Each depth step is 2 B loads
// and 12 broadcasts for 24 FMAs: 12 cycles of a core with two 512-bit FMA
// pipes (Zen 5, Intel server cores) against 14 load-port operations, well
// inside 2-3 loads per cycle; 24 independent chains cover the FMA latency
// (4 cycles x 2 pipes = 8 needed).
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
// The tile was chosen on a Zen 3 without AVX-512, by reasoning, not by
// measurement; table.c says what was measured since (on Zen 4).
//
// Both kernels are one body (tile below) whose only differences are the
// address of A[i][kk] and the row-major one's multiply by alpha in
// registers (the packed panel holds pack_a's fl(alpha a) already), so each
// C element is the same chain of FMAs from +0 over kk in order and the
// same final add: the same bits (kernels.h lets a caller pick either).
//
// Tiles of at most 16 columns run only the low half (12 accumulators, half
// the FMAs): the columns they store are the same sums. Likewise tiles of
// at most 8 rows run rows 0..7 only (16 accumulators, two thirds of the
// FMAs): a 32-row A (an encoder's sequence) is tiles of 12, 12 and 8 rows,
// and the 12-row body spent a ninth of its FMAs on the 4 rows it drops. Full tiles load and
// store C directly; edge tiles (m < 12 or n < 32) write only rows < m and,
// through masked loads/stores, columns < n (AVX-512's masked stores are
// cheap, unlike AVX2's vmaskmovps); beta == 0 never loads C, so NaN there
// cannot leak in.
#include "avx512/avx512.h"
#include "avx512/vmath.h"
#include "kernels/sgemm_entries.h"

enum { MR = MHSA_AVX512_MR, NR = MHSA_AVX512_NR };

// Which NaN a sum ends as. When several operands of one add or FMA are
// NaN, x86 returns the first in the instruction's own operand order, and
// the compiler picks that order per call site (vfmadd132/213/231, an add
// commuted to fold a load): the packed and row-major instances of the tile
// returned NaNs of different signs for one element. So the adds and FMAs
// that build C are written in assembly with a fixed order, the running sum
// first: acc + b*a returns acc's NaN, else b's, else a's; sum + c the
// sum's, else c's. Under SIMDe (the emulated test build) the same on each
// 256-bit half.
#if MHSA_AVX512_EMULATED
#define NAN_ORDERED_OP(insn, r, x, y)                                         \
    do {                                                                      \
        simde__m512_private r_ = simde__m512_to_private(r),                   \
                            x_ = simde__m512_to_private(x),                   \
                            y_ = simde__m512_to_private(y);                   \
        for (int h_ = 0; h_ < 2; h_++)                                        \
            __asm__(insn " %2, %1, %0"                                        \
                    : "+x"(r_.m256[h_])                                       \
                    : "x"(x_.m256[h_]), "x"(y_.m256[h_]));                    \
        r = simde__m512_from_private(r_);                                     \
    } while (0)
#else
#define NAN_ORDERED_OP(insn, r, x, y)                                         \
    __asm__(insn " %2, %1, %0" : "+v"(r) : "v"(x), "v"(y))
#endif

// acc + b*a, one rounding; a NaN result is acc's, else b's, else a's.
MHSA_AVX512_INLINE __m512 fma_acc(__m512 acc, __m512 b, __m512 a)
{
    NAN_ORDERED_OP("vfmadd231ps", acc, b, a);
    return acc;
}

// sum + c; a NaN result is sum's, else c's.
MHSA_AVX512_INLINE __m512 add_sum(__m512 sum, __m512 c)
{
    __m512 r = sum;   // the "+" operand: vaddps c, sum, r gives r = sum + c
    NAN_ORDERED_OP("vaddps", r, sum, c);
    return r;
}

// One row of C from its two accumulators (hi unused when halves == 1); cin
// is the row the beta term reads: C's own, or the bias row (then beta is
// 1). m0, m1 mask the two halves.
MHSA_AVX512_INLINE void store_row(float *c, const float *cin, __m512 lo,
                                  __m512 hi, float beta, int full,
                                  __mmask16 m0, __mmask16 m1, int halves)
{
    if (beta != 0.0f) {
        __m512 c0 = full ? _mm512_loadu_ps(cin)
                         : _mm512_maskz_loadu_ps(m0, cin);
        __m512 c1 = halves == 1 ? _mm512_setzero_ps()
                    : full      ? _mm512_loadu_ps(cin + 16)
                                : _mm512_maskz_loadu_ps(m1, cin + 16);
        MHSA_SGEMM_ADD_BETA(lo, hi, c0, c1, beta, _mm512_set1_ps);
    }
    if (full) {
        _mm512_storeu_ps(c, lo);
        if (halves == 2)
            _mm512_storeu_ps(c + 16, hi);
    } else {
        _mm512_mask_storeu_ps(c, m0, lo);
        if (halves == 2)
            _mm512_mask_storeu_ps(c + 16, m1, hi);
    }
}

// A[i][kk], multiplied by alpha first in the row-major kernel (scale).
#define A_AT(row)                                                             \
    (scale ? _mm512_mul_ps(va, _mm512_set1_ps(row[o]))                        \
           : _mm512_set1_ps(row[o]))


#define ROW_STORE(i)                                                          \
    do {                                                                      \
        if (rows > i && m > i)                                                \
            store_row(c + i * ldc, cin + i * ldin, acc##i##_lo, acc##i##_hi,  \
                      beta, full, m0, m1, halves);                            \
    } while (0)

// The tile. A[i][kk] is at a[i*rs + kk*cs] for i < m (rows >= m read row
// m - 1 when rs is a row stride, clamp: never past the matrix; a packed
// panel's zero rows are read as they are). scale: multiply A by alpha
// first. halves: 1 computes columns 0..15 only (n <= 16), 2 all 32. bias:
// NULL or the row every C row's beta term reads, with beta 1. rows: the
// rows computed, 8 (m <= 8) or MR; rows rows..MR-1 are neither read nor
// computed (each row is its own chain, so its bits do not change).
MHSA_AVX512_INLINE void tile(size_t k, const float *a, size_t rs, size_t cs,
                             int clamp, int scale, float alpha,
                             const float *bp, float *c, size_t ldc,
                             size_t m, size_t n, float beta,
                             const float *bias, int halves, int rows)
{
    MHSA_SGEMM_ACC6(_mm512_setzero_ps(), 0, 1, 2, 3, 4, 5);
    MHSA_SGEMM_ACC6(_mm512_setzero_ps(), 6, 7, 8, 9, 10, 11);
    __m512 va = _mm512_set1_ps(alpha);
    // Row i's A: a + min(i, m - 1) * rs when clamping (rows >= m repeat
    // row m - 1; their sums are dropped), else a + i * rs.
    size_t last = clamp ? m - 1 : MR - 1;
#define A_ROW(i) (a + ((i) < last ? (size_t)(i) : last) * rs)
    const float *a0 = a, *a1 = A_ROW(1), *a2 = A_ROW(2), *a3 = A_ROW(3),
                *a4 = A_ROW(4), *a5 = A_ROW(5), *a6 = A_ROW(6),
                *a7 = A_ROW(7), *a8 = A_ROW(8), *a9 = A_ROW(9),
                *a10 = A_ROW(10), *a11 = A_ROW(11);
#undef A_ROW

    // Warm the C rows we will write while the k loop runs; not for a
    // short loop (the tiny block's projections, k = 32), where the 24
    // prefetches and their loop were 72 of a tile's ~1800 instructions
    // and the tiny forward ran faster without them (the Intel Xeon:
    // docs/performance.md, "Measurements behind the code").
    for (size_t i = 0; k >= 64 && i < m; i++) {
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        if (halves == 2)
            _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
    }

    for (size_t kk = 0; kk < k; kk++) {
        const float *b = bp + kk * NR;
        size_t o = kk * cs;
        // 4 depth steps (512 bytes) ahead: each step is two lines of B.
        _mm_prefetch((const char *)(b + 4 * NR), _MM_HINT_T0);
        if (halves == 2)
            _mm_prefetch((const char *)(b + 4 * NR + 16), _MM_HINT_T0);
        __m512 b_lo = _mm512_loadu_ps(b);
        __m512 b_hi = halves == 2 ? _mm512_loadu_ps(b + 16) : b_lo;
        MHSA_SGEMM_ROWS6_FMA(0, 1, 2, 3, 4, 5);
        MHSA_SGEMM_ROWS6_FMA(6, 7, 8, 9, 10, 11);
    }

    size_t nn = n < NR ? n : NR;
    int full = m >= MR && nn == (halves == 2 ? NR : 16);
    __mmask16 m0 = mhsa_mask16__avx512(nn);
    __mmask16 m1 = mhsa_mask16__avx512(nn > 16 ? nn - 16 : 0);
    size_t ldin = bias ? 0 : ldc;
    const float *cin = bias ? bias : c;
    if (bias)
        beta = 1.0f;
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

// tile() at a constant row count: 8 for m <= 8 (the 8-row edge of a
// 32-row A: 12 + 12 + 8, where 12-row tiles computed 36 rows and stored
// 32, a ninth of the FMAs thrown away), else MR.
#define TILE_ROWS(m, ...)                                                     \
    do {                                                                      \
        if ((m) <= 8)                                                         \
            tile(__VA_ARGS__, 8);                                             \
        else                                                                  \
            tile(__VA_ARGS__, MR);                                            \
    } while (0)

// The in-place tiles multiply by alpha also at alpha == 1 in the
// test-only SIMDe build: the same bits from half the instances to compile
// (its compile time doubled with both).
#if MHSA_AVX512_EMULATED
enum { ALWAYS_SCALE = 1 };
#else
enum { ALWAYS_SCALE = 0 };
#endif

MHSA_SGEMM_ENTRIES(avx512, MHSA_AVX512_MR, MHSA_AVX512_NR, ALWAYS_SCALE)
