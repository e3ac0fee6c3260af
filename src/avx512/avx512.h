// avx512.h — declarations of the AVX-512 kernels (contracts in kernels.h,
// names in kernel_decl.h). The definitions are compiled with -mavx512f
// -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c in their own static
// library; callers reach them only through mhsa_kernels_avx512, after
// dispatch has checked the CPU and the OS (CPUID F/BW/VL/DQ, XCR0 opmask
// and ZMM state). Included by src/avx512/ files.
//
// The same sources are built a second time for the tests only, against
// SIMDe (intrin.h, MHSA_AVX512_EMULATED), so that the kernels' logic is
// tested on CPUs without AVX-512. The sources name every kernel literally
// (mhsa_sgemm_12x32__avx512: grep finds the definition); in that build the
// defines below rename them with the suffix avx512_emul, so both builds can
// live in one test program. Its table (table.c) names the _emul kernels
// directly: a kernel missing here keeps its native name and the emulated
// table fails to build.
#ifndef MHSA_AVX512_H
#define MHSA_AVX512_H

#include "kernels/kernel_decl.h"

#if MHSA_AVX512_EMULATED
#define mhsa_pack_a_mr12__avx512 mhsa_pack_a_mr12__avx512_emul
#define mhsa_pack_b_nr32__avx512 mhsa_pack_b_nr32__avx512_emul
#define mhsa_sgemm_12x32__avx512 mhsa_sgemm_12x32__avx512_emul
#define mhsa_sgemm_ra_12x32__avx512 mhsa_sgemm_ra_12x32__avx512_emul
#define mhsa_sgemm_ta_12x32__avx512 mhsa_sgemm_ta_12x32__avx512_emul
#define mhsa_softmax_online__avx512 mhsa_softmax_online__avx512_emul
#define mhsa_softmax_grad__avx512 mhsa_softmax_grad__avx512_emul
#define mhsa_softmax_row__avx512 mhsa_softmax_row__avx512_emul
#define mhsa_scale_copy__avx512 mhsa_scale_copy__avx512_emul
#define mhsa_rows_finite__avx512 mhsa_rows_finite__avx512_emul
#define mhsa_lse_add_log__avx512 mhsa_lse_add_log__avx512_emul
#define mhsa_colsum_add__avx512 mhsa_colsum_add__avx512_emul
#define mhsa_gemv_n__avx512 mhsa_gemv_n__avx512_emul
#define mhsa_gemv_t__avx512 mhsa_gemv_t__avx512_emul
#define mhsa_kv_dot__avx512 mhsa_kv_dot__avx512_emul
#define mhsa_kv_acc__avx512 mhsa_kv_acc__avx512_emul
#define mhsa_gemv_n16__avx512 mhsa_gemv_n16__avx512_emul
#define mhsa_cvt_from_f32__avx512 mhsa_cvt_from_f32__avx512_emul
#define mhsa_cvt_to_f32__avx512 mhsa_cvt_to_f32__avx512_emul
#define mhsa_small_bwd_scores__avx512 mhsa_small_bwd_scores__avx512_emul
#define mhsa_small_bwd_grads__avx512 mhsa_small_bwd_grads__avx512_emul
#define mhsa_attn_small__avx512 mhsa_attn_small__avx512_emul
#define mhsa_attn_small_heads__avx512 mhsa_attn_small_heads__avx512_emul
#define mhsa_attn_small_heads_bwd__avx512                                    \
    mhsa_attn_small_heads_bwd__avx512_emul
#define mhsa_attn_small_bwd__avx512 mhsa_attn_small_bwd__avx512_emul
// The suffix of this build's names (the tests' AVX-512 probes use it).
#define MHSA_AVX512_SFX avx512_emul
#else
#define MHSA_AVX512_SFX avx512
#endif

// The register tile: 12 rows x 32 columns (sgemm_12x32.c says why).
#define MHSA_AVX512_MR 12
#define MHSA_AVX512_NR 32

MHSA_DECLARE_KERNELS(avx512, MHSA_AVX512_MR, MHSA_AVX512_NR)

// The optional fused forward of a small view (kernels.h: attn_small).
int mhsa_attn_small__avx512(const mhsa_attn_small_args *a);
// The optional fused forward of several heads (kernels.h: attn_small_heads).
int mhsa_attn_small_heads__avx512(const mhsa_attn_heads_args *a);
// And its backward (kernels.h: attn_small_heads_bwd).
int mhsa_attn_small_heads_bwd__avx512(const mhsa_attn_heads_bwd_args *a);
// The optional fused backward of a small tile (kernels.h: attn_small_bwd).
int mhsa_attn_small_bwd__avx512(const mhsa_attn_small_bwd_args *a);

#endif
