// table.c — the AVX2+FMA kernel table. Installed by dispatch.c only when
// CPUID and XGETBV say the CPU and OS support AVX2, FMA and YMM state.
//
// GEMM blocking (kernels.h), as measured for 0.1: kc 256 (a 16 KiB B
// micro-panel at nr 16), 128 rows of A per block rounded up to the tile's
// 6 (132), 8 panels (128 columns) per parallel column chunk. These fixed
// numbers run under MHSA_BLOCKING=table; otherwise dispatch derives them
// from the CPU's caches (gemm/blocking.c), which on the Zen 3 they were
// measured on gives the same three.
#include "avx2/avx2.h"

#undef MHSA_KERNEL_TABLE_ATTN_SMALL
#define MHSA_KERNEL_TABLE_ATTN_SMALL mhsa_attn_small__avx2
// The small attention-backward products (small_bwd.c).
#undef MHSA_KERNEL_TABLE_SMALL_BWD
#define MHSA_KERNEL_TABLE_SMALL_BWD                                           \
    .small_bwd_scores = mhsa_small_bwd_scores__avx2,                          \
    .small_bwd_grads = mhsa_small_bwd_grads__avx2

const mhsa_kernels mhsa_kernels_avx2 =
    MHSA_KERNEL_TABLE(avx2, MHSA_ISA_AVX2, 6, 16,
                      .kc = 256, .mc = 22 * 6, .nc = 8 * 16);
