// avx512.h — declarations of the AVX-512 kernels (contracts in kernels.h,
// names in kernel_decl.h). The definitions are compiled with -mavx512f
// -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c in their own static
// library; callers reach them only through mhsa_kernels_avx512, after
// dispatch has checked the CPU and the OS (CPUID F/BW/VL/DQ, XCR0 opmask
// and ZMM state). Included by src/avx512/ files.
//
// The same sources are built a second time for the tests only, against
// SIMDe (intrin.h, MHSA_AVX512_EMULATED), so that the kernels' logic is
// tested on CPUs without AVX-512. That build's kernels carry the suffix
// avx512_emul (mhsa_sgemm_12x32__avx512_emul, table
// mhsa_kernels_avx512_emul) so both can live in one test program.
#ifndef MHSA_AVX512_H
#define MHSA_AVX512_H

#include "kernels/kernel_decl.h"

#if MHSA_AVX512_EMULATED
#define MHSA_AVX512_SFX avx512_emul
#else
#define MHSA_AVX512_SFX avx512
#endif
// The name of kernel `op` in this build: mhsa_<op>__avx512[_emul].
#define MHSA_AVX512_FN(op) MHSA_KNAME(op, MHSA_AVX512_SFX)

// The register tile: 12 rows x 32 columns (sgemm_12x32.c says why).
#define MHSA_AVX512_MR 12
#define MHSA_AVX512_NR 32

MHSA_DECLARE_KERNELS(MHSA_AVX512_SFX, MHSA_AVX512_MR, MHSA_AVX512_NR)

#endif
