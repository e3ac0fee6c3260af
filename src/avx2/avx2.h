// avx2.h — declarations of the AVX2+FMA kernels (see kernels.h for their
// contracts). The definitions are compiled with -mavx2 -mfma in their own
// static library; callers reach them only through mhsa_kernels_avx2, after
// dispatch has checked the CPU. Included by src/avx2/ files and by tests.
#ifndef MHSA_AVX2_H
#define MHSA_AVX2_H

#include "kernels.h"

void mhsa_pack_a_mr6__avx2(size_t m, size_t k, const float *a, size_t lda,
                           int trans, float alpha, float *ap);
void mhsa_pack_b_nr16__avx2(size_t k, size_t n, const float *b, size_t ldb,
                            int trans, float *bp);
void mhsa_sgemm_6x16__avx2(size_t k, const float *ap, const float *bp,
                           float *c, size_t ldc, size_t m, size_t n,
                           float beta);
void mhsa_softmax_online__avx2(const mhsa_softmax_args *a);
void mhsa_softmax_grad__avx2(const mhsa_softmax_grad_args *a);
void mhsa_softmax_row__avx2(size_t n, const float *x, float *y);
void mhsa_permute_4d__avx2(const mhsa_permute_args *a);
void mhsa_gemv_n__avx2(size_t n, size_t d, const float *a, size_t lda,
                       const float *x, float *y, float beta);
void mhsa_gemv_t__avx2(size_t n, size_t d, const float *p, const float *a,
                       size_t lda, float *y);

#endif
