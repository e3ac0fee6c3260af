// table.c — the scalar kernel table: always built, always supported, the
// reference every other ISA is tested against.
#include "scalar/scalar.h"

const mhsa_kernels mhsa_kernels_scalar =
    MHSA_KERNEL_TABLE(scalar, MHSA_ISA_SCALAR, 4, 8);
