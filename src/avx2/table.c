// table.c — the AVX2+FMA kernel table. Installed by dispatch.c only when
// CPUID and XGETBV say the CPU and OS support AVX2, FMA and YMM state.
#include "kernels.h"
#include "avx2/avx2.h"

const mhsa_kernels mhsa_kernels_avx2 = {
    .isa = MHSA_ISA_AVX2,
    .name = "avx2",
    .mr = 6,
    .nr = 16,
    .pack_a = mhsa_pack_a_mr6__avx2,
    .pack_b = mhsa_pack_b_nr16__avx2,
    .sgemm_ukr = mhsa_sgemm_6x16__avx2,
    .softmax_online = mhsa_softmax_online__avx2,
    .softmax_grad = mhsa_softmax_grad__avx2,
    .softmax_row = mhsa_softmax_row__avx2,
    .permute = mhsa_permute_4d__avx2,
    .gemv_n = mhsa_gemv_n__avx2,
    .gemv_t = mhsa_gemv_t__avx2,
};
