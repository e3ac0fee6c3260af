// avx2.h — declarations of the AVX2+FMA kernels (contracts in kernels.h,
// names in kernel_decl.h). The definitions are compiled with -mavx2 -mfma
// (and -mf16c for the half-precision conversions) in their own static
// library; callers reach them only through mhsa_kernels_avx2, after
// dispatch has checked the CPU. Included by src/avx2/ files.
#ifndef MHSA_AVX2_H
#define MHSA_AVX2_H

#include "kernels/kernel_decl.h"

MHSA_DECLARE_KERNELS(avx2, 6, 16)

// The optional fused forward of a small view (kernels.h: attn_small).
int mhsa_attn_small__avx2(const mhsa_attn_small_args *a);
// The optional fused forward of several heads (kernels.h:
// attn_small_heads).
int mhsa_attn_small_heads__avx2(const mhsa_attn_heads_args *a);
// And its backward (kernels.h: attn_small_heads_bwd).
int mhsa_attn_small_heads_bwd__avx2(const mhsa_attn_heads_bwd_args *a);
// The optional fused backward of a small tile (kernels.h: attn_small_bwd).
int mhsa_attn_small_bwd__avx2(const mhsa_attn_small_bwd_args *a);

#endif
