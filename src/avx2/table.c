// table.c — the AVX2+FMA kernel table. Installed by dispatch.c only when
// CPUID and XGETBV say the CPU and OS support AVX2, FMA and YMM state.
#include "avx2/avx2.h"

const mhsa_kernels mhsa_kernels_avx2 =
    MHSA_KERNEL_TABLE(avx2, MHSA_ISA_AVX2, 6, 16);
