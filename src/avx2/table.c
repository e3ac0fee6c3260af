// table.c — the AVX2+FMA kernel table. Installed by dispatch.c only when
// CPUID and XGETBV say the CPU and OS support AVX2, FMA and YMM state.
//
// GEMM blocking (kernels.h), as measured for 0.1: kc 256 (a 16 KiB B
// micro-panel at nr 16), 128 rows of A per block rounded up to the tile's
// 6 (132), 8 panels (128 columns) per parallel column chunk. These fixed
// numbers run under MHSA_BLOCKING=table; otherwise dispatch derives them
// from the CPU's caches (kernels/blocking.c), which on the Zen 3 they were
// measured on gives the same three.
#include "avx2/avx2.h"
#include "avx2/quant.h"

#undef MHSA_KERNEL_TABLE_ATTN_SMALL
#define MHSA_KERNEL_TABLE_ATTN_SMALL mhsa_attn_small__avx2
// Its form for four heads of width 8 side by side (attn_heads.c).
#undef MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS
#define MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS mhsa_attn_small_heads__avx2
#undef MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS_BWD
#define MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS_BWD mhsa_attn_small_heads_bwd__avx2

// The vector log-sum-exp finish (lse_log.c) and column sums (colsum.c).
#undef MHSA_KERNEL_TABLE_LSE_ADD_LOG
#define MHSA_KERNEL_TABLE_LSE_ADD_LOG(sfx) MHSA_KNAME(lse_add_log, sfx)
#undef MHSA_KERNEL_TABLE_COLSUM_ADD
#define MHSA_KERNEL_TABLE_COLSUM_ADD(sfx) MHSA_KNAME(colsum_add, sfx)

// The small attention-backward products (small_bwd.c) and their fused
// form (attn_small_bwd.c).
#undef MHSA_KERNEL_TABLE_SMALL_BWD
#define MHSA_KERNEL_TABLE_SMALL_BWD                                           \
    .small_bwd_scores = mhsa_small_bwd_scores__avx2,                          \
    .small_bwd_grads = mhsa_small_bwd_grads__avx2,                            \
    .attn_small_bwd = mhsa_attn_small_bwd__avx2

// Row-major A (kernels.h: sgemm_ukr_ra) up to 12 panels of 16 columns:
// measured on Zen 3, 1 thread, CPU time in one interleaved run, unpacked
// over packed: 0.62-0.92 at 1-4 panels (n 16..64), 0.95-1.01 at 6-12
// (96x96x32, 512x192x64), 1.00-1.07 at 16, 1.02-1.13 from 24 (the big
// shapes: 512x1536x512 1.09, 1024^3 1.11).
// A transposed in place (sgemm_ukr_ta) under the same panel limit: the
// tile is the row-major one's with A's strides swapped.
#undef MHSA_KERNEL_TABLE_SGEMM_TA
#define MHSA_KERNEL_TABLE_SGEMM_TA(sfx, mr_, nr_) MHSA_KSGEMM_TA(sfx, mr_, nr_)
#undef MHSA_KERNEL_TABLE_RA_PANELS
#define MHSA_KERNEL_TABLE_RA_PANELS 12

// Quantized products (kernels/quant.h): the AVX2 set (avx2/quant.h).
#undef MHSA_KERNEL_TABLE_Q
#define MHSA_KERNEL_TABLE_Q (&mhsa_qkernels_avx2)

const mhsa_kernels mhsa_kernels_avx2 =
    MHSA_KERNEL_TABLE(avx2, MHSA_ISA_AVX2, 6, 16,
                      .kc = 256, .mc = 22 * 6, .nc = 8 * 16);
