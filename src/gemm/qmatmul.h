// qmatmul.h — products of fp32 activations with weight matrices kept in
// a GGUF block type (kernels/quant.h): the activations are quantized per
// block to int8 once, then the threads split the weight rows and the
// table's qmm computes each element from its weight row and activation
// row alone. So a row's result is the same alone or batched with others,
// and the same at any thread count (the threads split rows, never sums).
#ifndef MHSA_QMATMUL_H
#define MHSA_QMATMUL_H

#include "kernels/kernels.h"

// A weight matrix (rows, cols) stored as ggml writes type `type`, row r's
// blocks at data + r * ld bytes; cols is a multiple of the type's block.
// packed: in the form P16 of kernels/quant.h instead (ld a row's bytes),
// made by mhsa__qmat_pack for a table with qmm16 of the type.
typedef struct mhsa_qmat {
    mhsa_qtype type;
    size_t rows, cols;
    size_t ld;
    const void *data;
    int packed;
} mhsa_qmat;

// The bytes w takes packed for table q (0: q computes w's type on the
// file's blocks only); rows [r0, r1) of w (r0 a multiple of 16) packed
// into dst, which holds (or will hold) all of them in that many bytes;
// and w made to point at dst, packed, once all are.
size_t mhsa__qmat_pack_bytes(const mhsa_qkernels *q, const mhsa_qmat *w);
void mhsa__qmat_pack_rows(const mhsa_qmat *w, size_t r0, size_t r1,
                          void *dst);
void mhsa__qmat_packed(mhsa_qmat *w, void *dst);

// Row r of w dequantized to fp32 (mhsa_q_dequant's bits), packed or not.
void mhsa__qmat_row(const mhsa_qmat *w, size_t r, float *dst);

// Bytes of one row of C values in the activation form type t meets.
size_t mhsa__qact_row_bytes(mhsa_qtype t, size_t C);

// xq (n rows of mhsa__qact_row_bytes(t, C)) = the int8 form of x (n rows
// of C floats, ldx apart), this thread's rows of n when called inside a
// team (all of them outside one).
void mhsa__q_quantize_share(const mhsa_kernels *k, mhsa_qtype t, size_t n,
                            size_t C, const float *x, size_t ldx, void *xq);

// y[j*ldy + r] = [y[j*ldy + r] +] W_r . xq_j for j < n and this thread's
// rows r of W (equal shares in groups of 8 rows, of 16 when packed; all
// rows outside a team),
// xq already quantized for W's type. Returns the rows in *lo, *hi.
void mhsa__q_matmul_share(const mhsa_kernels *k, const mhsa_qmat *w,
                          size_t n, const void *xq, float *y, size_t ldy,
                          int add, size_t *lo, size_t *hi);

// The whole product on a team of up to max_threads (core/threads.h's
// rule): y (n, w->rows, ldy apart) = [y +] x (n, w->cols, ldx apart)
// W^T, with xq scratch of n * mhsa__qact_row_bytes(w->type, w->cols)
// bytes.
void mhsa__q_matmul(const mhsa_kernels *k, int max_threads,
                    const mhsa_qmat *w, size_t n, const float *x, size_t ldx,
                    void *xq, float *y, size_t ldy, int add);

#endif
