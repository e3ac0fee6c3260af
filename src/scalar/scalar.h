// scalar.h — declarations of the scalar kernels (contracts in kernels.h,
// names in kernel_decl.h). Included by src/scalar/ files.
#ifndef MHSA_SCALAR_H
#define MHSA_SCALAR_H

#include "kernels/kernel_decl.h"

MHSA_DECLARE_KERNELS(scalar, 4, 8)

#endif
