// table.c — the scalar kernel table: always built, always supported, the
// reference every other ISA is tested against.
#include "kernels.h"
#include "scalar/scalar.h"

const mhsa_kernels mhsa_kernels_scalar = {
    .isa = MHSA_ISA_SCALAR,
    .name = "scalar",
    .mr = 4,
    .nr = 8,
    .pack_a = mhsa_pack_a_mr4__scalar,
    .pack_b = mhsa_pack_b_nr8__scalar,
    .sgemm_ukr = mhsa_sgemm_4x8__scalar,
    .softmax_online = mhsa_softmax_online__scalar,
    .softmax_grad = mhsa_softmax_grad__scalar,
    .softmax_row = mhsa_softmax_row__scalar,
    .permute = mhsa_permute_4d__scalar,
    .gemv_n = mhsa_gemv_n__scalar,
    .gemv_t = mhsa_gemv_t__scalar,
};
