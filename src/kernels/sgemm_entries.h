// sgemm_entries.h — the three micro-kernel entry points of an x86 SIMD
// tile (kernels.h: sgemm_ukr on a packed panel, sgemm_ukr_ra and
// sgemm_ukr_ta on A in place), written once around the ISA's own tile.
//
// Included by src/<isa>/sgemm_<mr>x<nr>.c after it defines
//   MR, NR, and TILE_ROWS(m, k, a, rs, cs, clamp, scale, alpha, bp, c, ldc,
//     m, n, beta, bias, halves): its tile at a constant row count, A[i][kk]
//     at a[i*rs + kk*cs] (clamp: rows past m repeat row m - 1), multiplied
//     by alpha first when scale, halves 1 for columns [0, NR/2) only;
// then MHSA_SGEMM_ENTRIES(isa, mr, nr, always_scale) (mr, nr: MR and NR as
// numbers, for the names) defines the entry points. The pieces of a tile
// that every x86 tile writes alike (its accumulators, a depth step's FMAs,
// the beta term) are the macros below, also for a tile of another kind
// (bf16gemm_12x32.c's beta term).
//
// The in-place entries are macros, not an inline function, so that each
// compiles its instances with its own stride a constant: an inline
// function holding them made GCC keep two row pointers on the stack in the
// row-major tile's depth loop (+4k instructions on the tiny forward).
// alpha == 1: fl(1 a) is a itself (a NaN only comes out quiet, as the FMA
// makes it anyway; under DAZ a subnormal a is a zero of its sign both
// ways), so the multiply is skipped unless always_scale (a build that
// compiles half the instances for the same bits).
#ifndef MHSA_KERNELS_SGEMM_ENTRIES_H
#define MHSA_KERNELS_SGEMM_ENTRIES_H

#include "kernels/kernel_decl.h"

// The accumulators of six rows, acc<i>_lo and acc<i>_hi for the rows i
// named, each set to zero (the ISA's zero vector, an expression): a tile
// of MR rows, 6 or 12, declares its accumulators six rows at a time.
#define MHSA_SGEMM_ACC6(zero, i0, i1, i2, i3, i4, i5)                         \
    __typeof__(zero) acc##i0##_lo = zero, acc##i0##_hi = zero,                \
                     acc##i1##_lo = zero, acc##i1##_hi = zero,                \
                     acc##i2##_lo = zero, acc##i2##_hi = zero,                \
                     acc##i3##_lo = zero, acc##i3##_hi = zero,                \
                     acc##i4##_lo = zero, acc##i4##_hi = zero,                \
                     acc##i5##_lo = zero, acc##i5##_hi = zero

// In the tile's depth loop: acc<i>_lo/hi += A[i][kk] * (b_lo, b_hi) for
// the rows the tile computes (i < rows), through the ISA's fma_acc (its
// fixed NaN operand order) and its A_AT(row), A[i][kk] times alpha first
// when scale.
#define MHSA_SGEMM_ROW_FMA(i)                                                 \
    do {                                                                      \
        if (rows <= i)                                                        \
            break;                                                            \
        __typeof__(b_lo) ai = A_AT(a##i);                                     \
        acc##i##_lo = fma_acc(acc##i##_lo, b_lo, ai);                         \
        if (halves == 2)                                                      \
            acc##i##_hi = fma_acc(acc##i##_hi, b_hi, ai);                     \
    } while (0)

// MHSA_SGEMM_ROW_FMA for six rows, in the order named.
#define MHSA_SGEMM_ROWS6_FMA(i0, i1, i2, i3, i4, i5)                          \
    do {                                                                      \
        MHSA_SGEMM_ROW_FMA(i0);                                               \
        MHSA_SGEMM_ROW_FMA(i1);                                               \
        MHSA_SGEMM_ROW_FMA(i2);                                               \
        MHSA_SGEMM_ROW_FMA(i3);                                               \
        MHSA_SGEMM_ROW_FMA(i4);                                               \
        MHSA_SGEMM_ROW_FMA(i5);                                               \
    } while (0)

// The beta term of one row's two accumulators, for beta != 0 and C's
// values c0, c1 (zeros in the lanes not stored): lo + c0 at beta == 1 (one
// add, no multiply by 1), else lo + beta * c0 in one FMA; likewise hi.
// Through the ISA's add_sum(sum, c) and fma_acc(acc, b, a), whose operand
// order decides which NaN comes out; set1 is the ISA's broadcast.
#define MHSA_SGEMM_ADD_BETA(lo, hi, c0, c1, beta, set1)                       \
    do {                                                                      \
        if ((beta) == 1.0f) {                                                 \
            lo = add_sum(lo, c0);                                             \
            hi = add_sum(hi, c1);                                             \
        } else {                                                              \
            __typeof__(lo) vb_ = set1(beta);                                  \
            lo = fma_acc(lo, vb_, c0);                                        \
            hi = fma_acc(hi, vb_, c1);                                        \
        }                                                                     \
    } while (0)

// The tile on A at (rs, cs), multiplied by alpha first when scale_.
#define MHSA_SGEMM_SCALED(rs, cs, halves)                                     \
    do {                                                                      \
        if (scale_)                                                           \
            TILE_ROWS(m, k, a, rs, cs, 1, 1, alpha, bp, c, ldc, m, n, beta,   \
                      bias, halves);                                          \
        else                                                                  \
            TILE_ROWS(m, k, a, rs, cs, 1, 0, alpha, bp, c, ldc, m, n, beta,   \
                      bias, halves);                                          \
    } while (0)

#define MHSA_SGEMM_IN_PLACE(rs, cs, always_scale)                             \
    do {                                                                      \
        if (m == 0 || n == 0)                                                 \
            return;                                                           \
        int scale_ = (always_scale) || alpha != 1.0f;                         \
        if (n <= NR / 2)                                                      \
            MHSA_SGEMM_SCALED(rs, cs, 1);                                     \
        else                                                                  \
            MHSA_SGEMM_SCALED(rs, cs, 2);                                     \
    } while (0)

#define MHSA_SGEMM_IN_PLACE_ENTRY(name, rs, cs, always_scale)                \
    void name(size_t k, const float *a, size_t lda, float alpha,              \
              const float *bp, float *c, size_t ldc, size_t m, size_t n,      \
              float beta, const float *bias)                                  \
    {                                                                         \
        MHSA_SGEMM_IN_PLACE(rs, cs, always_scale);                            \
    }

#define MHSA_SGEMM_ENTRIES(isa, mr, nr, always_scale)                       \
    void MHSA_KSGEMM(isa, mr, nr)(size_t k, const float *ap,                  \
                                  const float *bp, float *c, size_t ldc,      \
                                  size_t m, size_t n, float beta,             \
                                  const float *bias)                          \
    {                                                                         \
        if (m == 0 || n == 0)                                                 \
            return;                                                           \
        if (n <= NR / 2)                                                      \
            TILE_ROWS(m, k, ap, 1, MR, 0, 0, 1.0f, bp, c, ldc, m, n, beta,    \
                      bias, 1);                                               \
        else                                                                  \
            TILE_ROWS(m, k, ap, 1, MR, 0, 0, 1.0f, bp, c, ldc, m, n, beta,    \
                      bias, 2);                                               \
    }                                                                         \
    /* A row-major in place: A[i][kk] at a[i*lda + kk]. */                    \
    MHSA_SGEMM_IN_PLACE_ENTRY(MHSA_KSGEMM_RA(isa, mr, nr), lda, 1,            \
                              always_scale)                                   \
    /* A transposed in place: A[i][kk] at a[kk*lda + i], the packed */        \
    /* panel's walk with the row stride lda for its mr; the columns past */   \
    /* m repeat column m - 1 (clamp), never past the matrix. */               \
    MHSA_SGEMM_IN_PLACE_ENTRY(MHSA_KSGEMM_TA(isa, mr, nr), 1, lda,            \
                              always_scale)

#endif
