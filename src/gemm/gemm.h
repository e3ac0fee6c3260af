// gemm.h — the one blocked SGEMM driver (BLIS loops, packing, OpenMP).
//
//   C (m x n, ldc) = alpha * op(A) * op(B) + beta * C
//   op(A) is m x k: trans_a ? A^T with A (k x m, lda) : A (m x k, lda)
//   op(B) is k x n: trans_b ? B^T with B (n x k, ldb) : B (k x n, ldb)
//
// Work is split over (MC row block, NC column chunk) tiles with sizes fixed
// by the shapes and the kernel table (k->blocking), never by the thread
// count; K is never split, and each C element sums its K blocks in order.
// So the bits of C do not depend on how many threads run. beta == 0 never
// reads C.
#ifndef MHSA_GEMM_H
#define MHSA_GEMM_H

#include <stddef.h>

#include "gemm/gemm_scratch.h"
#include "gemm/tile.h"
#include "kernels/kernels.h"

// A whole k x n op(B) packed once for repeated use ("prepacked B", e.g. a
// weight matrix): KC blocks one after another, each as NR panels.
size_t mhsa_gemm_prepacked_floats(const mhsa_kernels *k, size_t kdim,
                                  size_t n);   // 0 on overflow
void mhsa_gemm_prepack_b(const mhsa_kernels *k, size_t kdim, size_t n,
                         const float *b, size_t ldb, int trans_b, float *bp);

// C = alpha * op(A) op(B) + beta * C. bp_prepacked: NULL, or B packed by
// mhsa_gemm_prepack_b with the same k table (then b/ldb/trans_b are unused).
// Call from outside any OpenMP region; it opens its own.
void mhsa_sgemm(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                int trans_a, int trans_b, size_t m, size_t n, size_t kdim,
                float alpha, const float *a, size_t lda,
                const float *b, size_t ldb, const float *bp_prepacked,
                float beta, float *c, size_t ldc);

// mhsa_sgemm with B stored as bdt (elements of bdt, ldb in elements): a
// 16-bit B (weights) is widened to fp32 only inside the shared packed B
// block of each KC step (mhsa__pack_b_16, pack_b16.h), never as a whole
// matrix; the packed values, and so C, have the bits an fp32 B holding
// the same values would give. bp_prepacked only with MHSA_F32.
void mhsa_sgemm_dt(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                   int trans_a, int trans_b, size_t m, size_t n, size_t kdim,
                   float alpha, const float *a, size_t lda, const void *b,
                   mhsa_dtype bdt, size_t ldb, const float *bp_prepacked,
                   float beta, float *c, size_t ldc);

// mhsa_sgemm_dt with every product in the compute dtype cdt (mhsa_config.
// compute_dtype). MHSA_F32 is mhsa_sgemm_dt, bit for bit. MHSA_BF16
// multiplies bf16(alpha op(A)) by bf16(op(B)), both rounded to nearest
// even, accumulating in fp32 (alpha folded in before rounding, as pack_a
// folds it): on tables without bf16 instructions the packed A and B panels
// are rounded (round_bf16.h) and the fp32 micro-kernel multiplies them,
// exact products of the rounded operands, with the same blocking and so
// the same thread independence. bp_prepacked with MHSA_BF16: prepacked
// panels already rounded (mhsa__round_bf16 over them).
void mhsa_sgemm_cd(const mhsa_kernels *k, mhsa_dtype cdt,
                   const mhsa_gemm_scratch *s, int trans_a, int trans_b,
                   size_t m, size_t n, size_t kdim, float alpha,
                   const float *a, size_t lda, const void *b, mhsa_dtype bdt,
                   size_t ldb, const float *bp_prepacked, float beta, float *c,
                   size_t ldc);

// y = bias + op(A) op(B) (alpha times the product), the bits of presetting
// each row of C to the bias and calling mhsa_sgemm_cd with beta = 1, with
// the bias added by the tiles (both read its row in their final add,
// kernels.h) rather than by a pass over C first. Only where
// mhsa_sgemm_folds_bias(k, cdt) (every path but the native bf16 tiles).
int mhsa_sgemm_folds_bias(const mhsa_kernels *k, mhsa_dtype cdt);
void mhsa_sgemm_bias(const mhsa_kernels *k, mhsa_dtype cdt,
                     const mhsa_gemm_scratch *s, int trans_a, int trans_b,
                     size_t m, size_t n, size_t kdim, float alpha,
                     const float *a, size_t lda, const void *b,
                     mhsa_dtype bdt, size_t ldb, const float *bp_prepacked,
                     const float *bias, float *c, size_t ldc);

// y (n) = beta * y + W (n, d; row stride ldw) x (d): one row through a
// weight matrix (a decoding step), streaming W once with the table's
// gemv_n, each thread a contiguous share of the rows (equal in groups of
// 8), on up to s->max_threads threads (one below the work threshold). The
// bits do not depend on the thread count: a row's never depend on the rows
// that share its call (kernels.h). Call from outside any OpenMP region.
void mhsa_gemv_rows(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                    size_t n, size_t d, const float *w, size_t ldw,
                    const float *x, float *y, float beta);
// The same with W stored as wdt (ldw in elements): 16-bit rows are read
// as stored and widened in registers by the table's gemv_n16 (the same
// shares), so a step reads half the bytes; fp32 is mhsa_gemv_rows.
void mhsa_gemv_rows_dt(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                       size_t n, size_t d, const void *w, mhsa_dtype wdt,
                       size_t ldw, const float *x, float *y, float beta);

// A few rows through a 16-bit weight matrix (a short prompt's prefill):
// at most this many rows of x go through mhsa_gemv_rows_16m, more through
// the GEMM. The GEMM widens and packs all of W on every call, which costs
// as much as its arithmetic when only a few rows use each packed block;
// streaming W once with kv_dot instead took, on Zen 3 (1 thread, CPU
// time), 0.6-0.7 (F16) and 0.8-1.0 (BF16) of the F32 GEMM's time at 16
// rows of 576x576 .. 1536x576, 0.7 / 0.9 at 32, and lost from 64 rows.
enum { MHSA_FEW_ROWS_16 = 32 };

// y (m, n; row stride ldy) = beta * y + x (m, d; ldx) W^T for W (n, d;
// ldw) stored as wdt = MHSA_F16 or MHSA_BF16: each 16-bit row of W read
// once for all m rows of x by the table's kv_dot (m query rows against n
// rows), each thread a contiguous share of W's rows as in
// mhsa_gemv_rows. kv_dot's (row, key) bits depend on neither m nor n
// (kernels.h), so they do not depend on the thread count either. Call
// from outside any OpenMP region; m <= MHSA_FEW_ROWS_16.
void mhsa_gemv_rows_16m(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                        size_t m, size_t n, size_t d, const void *w,
                        mhsa_dtype wdt, size_t ldw, const float *x,
                        size_t ldx, float *y, size_t ldy, float beta);

#endif
