// intrin.h — the AVX-512 intrinsics the src/avx512/ kernels are written in.
//
// Normally <immintrin.h>: the files are compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512dq -mfma -mf16c and run only on CPUs that have them.
//
// With MHSA_AVX512_EMULATED (a test-only second build of the same sources,
// tests/meson.build) the same intrinsic names come from SIMDe's portable
// implementations (<simde/x86/avx512.h> with native aliases), on top of real
// AVX2/FMA/F16C: SIMDe runs each 512-bit operation as two 256-bit ones, so
// an FMA is still one fused operation and the results are the bits real
// AVX-512 hardware gives. SIMDe 0.7.4 lacks some intrinsics we use, or
// implements them differently from the hardware; simde_fillins.h supplies
// those (tests/test_avx512_emul.c checks them).
#ifndef MHSA_AVX512_INTRIN_H
#define MHSA_AVX512_INTRIN_H

#if MHSA_AVX512_EMULATED
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include "avx512/simde_fillins.h"
#else
#include <immintrin.h>
#endif

#endif
