// table.c — the NEON kernel table. NEON (Advanced SIMD) is part of the
// AArch64 baseline, so this table is built on every aarch64 host and
// dispatch needs no run-time CPU check for it.
//
// GEMM blocking (kernels.h): AVX2's numbers from 0.1 (kc 256, about 128
// rows of A per block, 8 panels per column chunk), not measured on Arm: no
// Arm hardware was at hand, only qemu. Fixed numbers for
// MHSA_BLOCKING=table; otherwise dispatch derives them from the CPU's
// caches (kernels/blocking.c).
#include "neon/neon.h"

// No row-major-A micro-kernel yet (kernels.h: sgemm_ukr_ra): the GEMM packs A.
#undef MHSA_KERNEL_TABLE_SGEMM_RA
#define MHSA_KERNEL_TABLE_SGEMM_RA(sfx, mr_, nr_) NULL

// Quantized products (kernels/quant.h): the plain-NEON set, which any
// AArch64 CPU runs; dispatch replaces it with the SDOT set
// (mhsa_qkernels_neon_dotprod) in the copies it hands to CPUs with the
// dotprod extension.
#undef MHSA_KERNEL_TABLE_Q
#define MHSA_KERNEL_TABLE_Q (&mhsa_qkernels_neon)

const mhsa_kernels mhsa_kernels_neon =
    MHSA_KERNEL_TABLE(neon, MHSA_ISA_NEON, 8, 12,
                      .kc = 256, .mc = 16 * 8, .nc = 8 * 12);
