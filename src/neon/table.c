// table.c — the NEON kernel table. NEON (Advanced SIMD) is part of the
// AArch64 baseline, so this table is built on every aarch64 host and
// dispatch needs no run-time CPU check for it.
#include "neon/neon.h"

const mhsa_kernels mhsa_kernels_neon =
    MHSA_KERNEL_TABLE(neon, MHSA_ISA_NEON, 8, 12);
