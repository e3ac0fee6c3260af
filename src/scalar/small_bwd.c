// small_bwd.c — the scalar small attention-backward products (kernels.h,
// body in kernels/small_bwd_body.h): a product then a sum, as the scalar
// micro-kernel rounds (no contraction: -ffp-contract=off).
#include "scalar/scalar.h"

#define MHSA_SB_ISA scalar
#define MHSA_SB_MAC(c, a, b) ((c) + (a) * (b))
#include "kernels/small_bwd_body.h"
