// quant_dot.c — the NEON quantized products with SDOT (the ARMv8.2
// dotprod extension: four int8 products summed into each int32 lane per
// instruction). Built in a library of its own with +dotprod (meson.build)
// and handed out by dispatch only to CPUs that have it (HWCAP_ASIMDDP,
// kernels/dispatch.c); the products are src/neon/quant_body.h, the same
// code as the plain-NEON set with another integer dot, so both give the
// same bits.
#include <arm_neon.h>

#include "neon/neon.h"

#ifndef __ARM_FEATURE_DOTPROD
#error "quant_dot.c needs the dotprod extension (+dotprod, meson.build)"
#endif

#define QN_DOT(acc, a, b) vdotq_s32(acc, a, b)
#include "neon/quant_body.h"

const mhsa_qkernels mhsa_qkernels_neon_dotprod = {
    .name = "neon-dotprod",
    .quantize = { mhsa_qquantize_32__neon, mhsa_qquantize_256__neon },
    .qmm = QN_QMM_FNS,
};
