// pack.c — scalar packing of GEMM operands into micro-panels (layouts in
// kernels.h). Plain loops: the reference the SIMD packers are tested against.
#include "kernels/kernels.h"
#include "scalar/scalar.h"

void mhsa_pack_a_mr4__scalar(size_t m, size_t k, const float *a, size_t lda,
                             int trans, float alpha, float *ap)
{
    enum { MR = 4 };
    for (size_t kk = 0; kk < k; kk++)
        for (size_t i = 0; i < MR; i++)
            ap[kk * MR + i] = i >= m ? 0.0f
                            : alpha * (trans ? a[kk * lda + i] : a[i * lda + kk]);
}

void mhsa_pack_b_nr8__scalar(size_t k, size_t n, const float *b, size_t ldb,
                             int trans, float *bp)
{
    enum { NR = 8 };
    for (size_t kk = 0; kk < k; kk++)
        for (size_t j = 0; j < NR; j++)
            bp[kk * NR + j] = j >= n ? 0.0f
                            : (trans ? b[j * ldb + kk] : b[kk * ldb + j]);
}
