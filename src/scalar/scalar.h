// scalar.h — declarations of the scalar kernels (see kernels.h for their
// contracts). Included by src/scalar/ files and by tests.
#ifndef MHSA_SCALAR_H
#define MHSA_SCALAR_H

#include "kernels.h"

void mhsa_pack_a_mr4__scalar(size_t m, size_t k, const float *a, size_t lda,
                             int trans, float alpha, float *ap);
void mhsa_pack_b_nr8__scalar(size_t k, size_t n, const float *b, size_t ldb,
                             int trans, float *bp);
void mhsa_sgemm_4x8__scalar(size_t k, const float *ap, const float *bp,
                            float *c, size_t ldc, size_t m, size_t n,
                            float beta);
void mhsa_softmax_online__scalar(const mhsa_softmax_args *a);
void mhsa_softmax_grad__scalar(const mhsa_softmax_grad_args *a);
void mhsa_softmax_row__scalar(size_t n, const float *x, float *y);
void mhsa_permute_4d__scalar(const mhsa_permute_args *a);
void mhsa_gemv_n__scalar(size_t n, size_t d, const float *a, size_t lda,
                         const float *x, float *y, float beta);
void mhsa_gemv_t__scalar(size_t n, size_t d, const float *p, const float *a,
                         size_t lda, float *y);

#endif
