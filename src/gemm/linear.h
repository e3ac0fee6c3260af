// linear.h — y = x W^T + b for the block's projections: the prepacked
// GEMM, or one streaming pass over W for a single row.
#ifndef MHSA_LINEAR_H
#define MHSA_LINEAR_H

#include "gemm.h"
#include "kernels/kernels.h"

// y (rows, n) = x (rows, kdim) W^T + b, with W (n, kdim) stored as wdt
// (fp32, or 16-bit read as stored: gemm.h), prepacked when the block was
// packed for this table (w_packed, fp32 only, else NULL); b may be NULL.
// One row streams W once through gemv in fixed chunks of outputs. Products
// in the compute dtype cdt (mhsa_sgemm_cd; w_packed then rounded with
// BF16): with BF16 one row goes through the GEMM too, whose packers round
// (gemv streams W unrounded).
void mhsa__linear(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                  size_t rows, size_t n, size_t kdim, const float *x,
                  const void *w, mhsa_dtype wdt, const float *w_packed,
                  const float *b, mhsa_dtype cdt, float *y);

#endif
