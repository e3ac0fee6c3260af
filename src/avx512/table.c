// table.c — the AVX-512 kernel table. Installed by dispatch.c only when
// CPUID and XGETBV say the CPU and OS support AVX-512 F, BW, VL and DQ
// (with AVX2, FMA, F16C) and save the opmask and ZMM state.
//
// The emulated build (tests only, see avx512.h) defines
// mhsa_kernels_avx512_emul instead: the same ISA and name, so a test that
// installs it runs exactly what a real AVX-512 run would.
#include "avx512/avx512.h"

#if MHSA_AVX512_EMULATED
extern const mhsa_kernels mhsa_kernels_avx512_emul;
const mhsa_kernels mhsa_kernels_avx512_emul = MHSA_KERNEL_TABLE_NAMED(
    avx512_emul, "avx512", MHSA_ISA_AVX512, MHSA_AVX512_MR, MHSA_AVX512_NR);
#else
const mhsa_kernels mhsa_kernels_avx512 =
    MHSA_KERNEL_TABLE(avx512, MHSA_ISA_AVX512, MHSA_AVX512_MR, MHSA_AVX512_NR);
#endif
