// tile.h — single-threaded tile products (tile.c): the attention code
// multiplies small blocks (a query block by a key tile) whose depth fits
// one pass, so it packs whole blocks and runs the table's micro-kernel
// over them directly, without the driver's KC blocking or threads. They
// stand on the kernel table alone, below the GEMM drivers (gemm.h, which
// includes this header for its callers, and gemm_bf16.h, which measures
// its tiles against these).
#ifndef MHSA_GEMM_TILE_H
#define MHSA_GEMM_TILE_H

#include <stddef.h>

#include "kernels/kernels.h"

// Packs all of an m x kdim op(A) (times alpha) as ceil(m/mr) panels of
// depth kdim; with cdt MHSA_BF16 the packed values are then rounded to
// bf16 (as mhsa_sgemm_cd's panels), MHSA_F32 leaves them.
void mhsa_tile_pack_a(const mhsa_kernels *k, size_t m, size_t kdim,
                      const float *a, size_t lda, int trans, float alpha,
                      mhsa_dtype cdt, float *ap);
// Packs all of a kdim x n op(B) as ceil(n/nr) panels of depth kdim,
// rounded to bf16 with cdt MHSA_BF16.
void mhsa_tile_pack_b(const mhsa_kernels *k, size_t kdim, size_t n,
                      const float *b, size_t ldb, int trans, mhsa_dtype cdt,
                      float *bp);
// C (m x n) = beta * C + Ap Bp for blocks packed by the two functions above.
void mhsa_tile_gemm(const mhsa_kernels *k, size_t m, size_t n, size_t kdim,
                    const float *ap, const float *bp, float *c, size_t ldc,
                    float beta);
// The same product with A (m x kdim, row stride lda) read row-major by
// the table's sgemm_ukr_ra, no packing: C = beta * C + fl(alpha A) Bp,
// the bits of mhsa_tile_pack_a(..., trans 0, alpha, MHSA_F32, ap) then
// mhsa_tile_gemm. Only where mhsa_tile_has_ra(k) and with compute dtype
// F32 (the bf16 rounding lives in the packer). For the attention loops'
// Q, dO, P and dS (alpha = scale) blocks, which are read by a tile or a
// few each (attn/attention.c: a_side).
int mhsa_tile_has_ra(const mhsa_kernels *k);
void mhsa_tile_gemm_ra(const mhsa_kernels *k, size_t m, size_t n,
                       size_t kdim, const float *a, size_t lda, float alpha,
                       const float *bp, float *c, size_t ldc, float beta);
// Floats that mhsa_tile_pack_a / _b write.
size_t mhsa_tile_a_floats(const mhsa_kernels *k, size_t m, size_t kdim);
size_t mhsa_tile_b_floats(const mhsa_kernels *k, size_t kdim, size_t n);

#endif
