// neon.h — declarations of the NEON kernels (contracts in kernels.h, names
// in kernel_decl.h). Included by src/neon/ files; holds no NEON code itself
// (helpers with bodies live in src/neon/vmath.h).
#ifndef MHSA_NEON_H
#define MHSA_NEON_H

#include "kernels/kernel_decl.h"

MHSA_DECLARE_KERNELS(neon, 8, 12)

// The activation quantizers (src/neon/quant.c), shared by both sets of
// quantized products: the plain-NEON one (quant.c), which every AArch64
// CPU runs and the table holds, and the SDOT one (quant_dot.c,
// kernels.h), which dispatch hands out where the CPU has dotprod.
void mhsa_qquantize_32__neon(size_t n, const float *x, void *dst);
void mhsa_qquantize_256__neon(size_t n, const float *x, void *dst);
extern const mhsa_qkernels mhsa_qkernels_neon;

#endif
