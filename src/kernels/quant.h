// quant.h — quantized weight matrices computed in place: ggml's block
// formats (the GGUF file's own bytes), the int8 form activations take to
// meet them, and the contract of the kernels that multiply the two.
//
// A weight matrix W (rows, C) of type t is stored row after row, each row
// C / mhsa_qtype_block(t) blocks of mhsa_qtype_bytes(t) bytes, as ggml
// writes them (little-endian, no padding; the layouts are in
// src/scalar/quant_ref.c). C must be a multiple of the block (32 or 256).
//
// Activations. Before a product the fp32 input rows x (C) are quantized
// per block into one of two int8 forms, exactly (the same bits on every
// ISA: tested):
//   q8_32   (for the 32-element types): per 32 values
//           { float d; int32_t s; int8_t q[32]; }
//   q8_256  (for the 256-element k-quants): per 256 values
//           { float d; int8_t q[256]; int16_t bsum[16]; }
// with amax = max |x_i| over the block, d = amax / 127 (q8_256) or that
// rounded to binary16 (q8_32, the scale ggml's block_q8_0 and block_q8_1
// store: llama.cpp's products then round as ours do), q_i =
// round-half-even(x_i * (127 / amax)) (0 when amax is 0), s = sum of the
// q_i and bsum[j] = sum of q_i over i in [16 j, 16 j + 16). (Each
// 127 / amax and x_i * it is one fp32 division and one product, rounded to
// nearest; |q_i| <= 127.)
//
// Products. qmm[t] computes y (m, nw) for nw weight rows against m
// quantized activation rows:
//   y[j*ldy + r] = (add ? y[j*ldy + r] : 0) + dot(W row r, x row j)
// where the dot is a sum over blocks of integer dot products (exact, in
// int32) scaled in fp32 by the product of the block's scales (and the
// min terms of Q4_1, Q5_1, Q4_K and Q5_K, with s / bsum):
//   Q8_0   dw dx sum(qw qx)                   Q4_0  dw dx (sum(qw qx) - 8 s)
//   Q5_0   dw dx (sum(qw qx) - 16 s)          Q4_1, Q5_1  dw dx sum(qw qx) + mw dx s
//   Q4_K, Q5_K  d dx sum_j sc_j sum_j(qw qx) - dmin dx sum_j m_j bsum_j
//   Q6_K   d dx sum_j sc_j (sum_j(qw qx) - 32 bsum_j)
// (qw the stored unsigned quant; j the sub-blocks). The fp32 order of the
// block terms is the ISA's own, so results differ between ISAs by fp32
// rounding (tested against the scalar reference with a bound), but:
//   - an element's bits depend only on its weight row, its activation row
//     and nb: not on nw, m, which rows sit beside it, where in the call
//     it is, or y's other contents. So a token's result is the same alone
//     or batched, and threads that split rows never change a bit;
//   - with add the element is y + dot, one fp32 add of the dot's bits.
// Against the exact product of the dequantized weights w and x (what
// ggml's dequantize_row gives, fp32 dequantization aside), an element
// differs by at most sum_i |w_i| dx_b(i) / 2 (the rounding of x to int8)
// plus fp32 accumulation, about nb * 2^-23 sum_b |block term|
// (tests/kernels/test_quant.c checks this bound).
//
// The packed form P16 (qmm16): the same blocks rearranged at load so that
// a kernel holding 16 weight rows in the 16 lanes of a vector reads them
// with whole-vector loads. The rows go in units of 16 (the last unit's
// rows past the matrix repeat its last row); unit u's blocks follow one
// another, block b taking the 16 rows' block b (16 times the block's
// bytes) at u * 16 * ldw + b * 16 * bytes, where ldw is a row's bytes.
// Within it the block's byte at offset o lands at 16 o + the row's part:
//   - the 2-byte scales that open Q8_0, Q4_0 and Q5_0 and close Q6_K
//     (the halves) as 16 halves in row order: row r's at 16 o + 2 r;
//   - every other byte in dwords, the block's dword at o (4-aligned after
//     the halves) as 16 dwords in row order: row r's at 16 o + 4 r.
// So a field at block offset o is one load of 32 or 64 bytes per 2 or 4
// bytes of each row at 16 o, already transposed. qmm16 computes what qmm
// does from the packed matrix (w at unit 0, ldw a row's bytes, nw rows),
// the same bits. A table without it (NULL) computes on the file's blocks.
//
// Kernels follow kernels.h's rules: single-threaded, no allocation, no
// reads past the described memory, no alignment assumed beyond 1 byte
// for blocks (2-byte scales are read unaligned) and 4 for activations.
#ifndef MHSA_QUANT_H
#define MHSA_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/half.h"

// The computed types, numbered by this library (mhsa_qtype_ggml gives
// ggml's number).
typedef enum mhsa_qtype {
    MHSA_Q8_0 = 0,
    MHSA_Q4_0,
    MHSA_Q4_1,
    MHSA_Q5_0,
    MHSA_Q5_1,
    MHSA_Q4_K,
    MHSA_Q5_K,
    MHSA_Q6_K,
    MHSA_QTYPE_COUNT
} mhsa_qtype;

// The two activation forms (above).
typedef enum mhsa_qact { MHSA_QACT_32 = 0, MHSA_QACT_256, MHSA_QACT_COUNT }
    mhsa_qact;

// The scale d of a q8_32 block: amax / 127 rounded to binary16 (and back),
// the value ggml's block_q8_0 and block_q8_1 store, so that the products
// round as llama.cpp's do. (q8_256 keeps amax / 127 in fp32, as Q8_K.)
static inline float mhsa_q8_32_scale(float amax)
{
    return mhsa_f16_to_f32(mhsa_f32_to_f16(amax / 127.0f));
}

typedef struct mhsa_q8_32 {
    float d;
    int32_t s;
    int8_t q[32];
} mhsa_q8_32;

typedef struct mhsa_q8_256 {
    float d;
    int8_t q[256];
    int16_t bsum[16];
} mhsa_q8_256;

// y (m, nw, ldy apart) = [y +] W (nw rows of nb blocks, ldw bytes apart) .
// x (m rows of nb activation blocks, ldx bytes apart); see above.
typedef void (*mhsa_qmm_fn)(size_t nb, const void *w, size_t ldw, size_t nw,
                            const void *x, size_t ldx, size_t m, float *y,
                            size_t ldy, int add);
// n values (a multiple of the form's block) of x into n / block blocks.
typedef void (*mhsa_qquant_fn)(size_t n, const float *x, void *dst);

typedef struct mhsa_qkernels {
    const char *name;                         // "avx512-vnni", ...
    mhsa_qquant_fn quantize[MHSA_QACT_COUNT];
    mhsa_qmm_fn qmm[MHSA_QTYPE_COUNT];
    mhsa_qmm_fn qmm16[MHSA_QTYPE_COUNT];     // on P16; NULL: none
} mhsa_qkernels;

// Elements per block (32 or 256), bytes per block, the activation form
// it meets, ggml's type number and name ("q4_K"), for t < COUNT.
size_t mhsa_qtype_block(mhsa_qtype t);
size_t mhsa_qtype_bytes(mhsa_qtype t);
mhsa_qact mhsa_qtype_act(mhsa_qtype t);
uint32_t mhsa_qtype_ggml(mhsa_qtype t);
const char *mhsa_qtype_name(mhsa_qtype t);
// The computed type of ggml's type number, or -1 for one not computed.
int mhsa_qtype_from_ggml(uint32_t ggml_type);
// Bytes of one activation block of form a (40 or 292).
size_t mhsa_qact_bytes(mhsa_qact a);

// mhsa_qtype_bytes of a 32-element type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1),
// inlined, so that a kernel specialised for one type has it as a constant.
static inline __attribute__((always_inline)) size_t
mhsa_qtype_bytes32(mhsa_qtype t)
{
    switch (t) {
    case MHSA_Q8_0: return 34;
    case MHSA_Q4_0: return 18;
    case MHSA_Q4_1: return 20;
    case MHSA_Q5_0: return 22;
    default:        return 24;   // MHSA_Q5_1
    }
}

// The scalar references (src/scalar/quant_ref.c): the kernels of the
// scalar table, and the plain dequantization (ggml's dequantize_row,
// bit for bit) the tests and the embedding lookup use.
extern const mhsa_qkernels mhsa_qkernels_scalar;
void mhsa_q_dequant(mhsa_qtype t, size_t nb, const void *w, float *dst);

// P16 (above; src/scalar/quant_pack.c). Bytes of rows rows of ldw bytes
// packed (whole units); rows of nb blocks of w (ldw apart) packed into
// dst; row r of a packed matrix p dequantized (mhsa_q_dequant's bits).
size_t mhsa_q_pack16_bytes(size_t rows, size_t ldw);
void mhsa_q_pack16(mhsa_qtype t, size_t nb, const void *w, size_t ldw,
                   size_t rows, void *dst);
void mhsa_q_dequant16(mhsa_qtype t, size_t nb, const void *p, size_t r,
                      float *dst);

#endif
