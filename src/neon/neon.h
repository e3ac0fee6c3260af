// neon.h — declarations of the NEON kernels (see kernels.h for their
// contracts). Included by src/neon/ files and by tests; holds no NEON code
// itself (helpers with bodies live in src/neon/vmath.h).
#ifndef MHSA_NEON_H
#define MHSA_NEON_H

#include "kernels.h"

void mhsa_pack_a_mr8__neon(size_t m, size_t k, const float *a, size_t lda,
                           int trans, float alpha, float *ap);
void mhsa_pack_b_nr12__neon(size_t k, size_t n, const float *b, size_t ldb,
                            int trans, float *bp);
void mhsa_sgemm_8x12__neon(size_t k, const float *ap, const float *bp,
                           float *c, size_t ldc, size_t m, size_t n,
                           float beta);
void mhsa_softmax_online__neon(const mhsa_softmax_args *a);
void mhsa_softmax_grad__neon(const mhsa_softmax_grad_args *a);
void mhsa_softmax_row__neon(size_t n, const float *x, float *y);
void mhsa_permute_4d__neon(const mhsa_permute_args *a);
void mhsa_gemv_n__neon(size_t n, size_t d, const float *a, size_t lda,
                       const float *x, float *y, float beta);
void mhsa_gemv_t__neon(size_t n, size_t d, const float *p, const float *a,
                       size_t lda, float *y);

#endif
