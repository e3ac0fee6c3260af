// neon.h — declarations of the NEON kernels (contracts in kernels.h, names
// in kernel_decl.h). Included by src/neon/ files; holds no NEON code itself
// (helpers with bodies live in src/neon/vmath.h).
#ifndef MHSA_NEON_H
#define MHSA_NEON_H

#include "kernels/kernel_decl.h"

MHSA_DECLARE_KERNELS(neon, 8, 12)

#endif
