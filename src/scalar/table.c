// table.c — the scalar kernel table: always built, always supported, the
// reference every other ISA is tested against.
//
// GEMM blocking (kernels.h): kc 256, about 128 rows of A per block, 8
// panels per column chunk, the numbers measured for AVX2 in 0.1 and kept
// for every 0.1 ISA (none was measured for the scalar tile itself). Fixed
// numbers for MHSA_BLOCKING=table; otherwise dispatch derives them from the
// CPU's caches (kernels/blocking.c).
#include "scalar/scalar.h"

// The row-major-A kernel (kernels.h: sgemm_ukr_ra) stages A through a
// stack panel on every call, so it never beats packing once per block
// (measured on Zen 3: docs/performance.md, "Measurements behind the
// code"): the GEMM keeps packing (ra_max_panels 0); the kernel is the
// reference the SIMD ones are tested against.

// The small attention-backward products (small_bwd.c) and their fused
// form (attn_small_bwd.c).
#undef MHSA_KERNEL_TABLE_SMALL_BWD
#define MHSA_KERNEL_TABLE_SMALL_BWD                                           \
    .small_bwd_scores = mhsa_small_bwd_scores__scalar,                          \
    .small_bwd_grads = mhsa_small_bwd_grads__scalar,                            \
    .attn_small_bwd = mhsa_attn_small_bwd__scalar

// The fused small views, forward and backward, one head or several
// (attn_*.c): the references of the other tables' kernels, with the bits
// of this table's tiled path, so no slot is empty.
#undef MHSA_KERNEL_TABLE_ATTN_SMALL
#define MHSA_KERNEL_TABLE_ATTN_SMALL mhsa_attn_small__scalar
#undef MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS
#define MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS mhsa_attn_small_heads__scalar
#undef MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS_BWD
#define MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS_BWD                                \
    mhsa_attn_small_heads_bwd__scalar

const mhsa_kernels mhsa_kernels_scalar =
    MHSA_KERNEL_TABLE(scalar, MHSA_ISA_SCALAR, 4, 8,
                      .kc = 256, .mc = 32 * 4, .nc = 8 * 8);
