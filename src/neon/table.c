// table.c — the NEON kernel table. NEON (Advanced SIMD) is part of the
// AArch64 baseline, so this table is built on every aarch64 host and
// dispatch needs no run-time CPU check for it.
#include "kernels.h"
#include "neon/neon.h"

const mhsa_kernels mhsa_kernels_neon = {
    .isa = MHSA_ISA_NEON,
    .name = "neon",
    .mr = 8,
    .nr = 12,
    .pack_a = mhsa_pack_a_mr8__neon,
    .pack_b = mhsa_pack_b_nr12__neon,
    .sgemm_ukr = mhsa_sgemm_8x12__neon,
    .softmax_online = mhsa_softmax_online__neon,
    .softmax_grad = mhsa_softmax_grad__neon,
    .softmax_row = mhsa_softmax_row__neon,
    .permute = mhsa_permute_4d__neon,
    .gemv_n = mhsa_gemv_n__neon,
    .gemv_t = mhsa_gemv_t__neon,
};
