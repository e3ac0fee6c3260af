// quant.h — what the AVX2 quantized products share (quant.c: the
// activation quantizers and the set; quant_32.c: the 32-element types;
// quant_k.c: the k-quants). Contract: kernels/quant.h.
//
// Integer dots. A weight block's unsigned quants (0..15, 0..31, 0..63,
// or Q8_0's |q| <= 128 with its sign moved onto the activation by
// vpsignb) meet the int8 activation quants in vpmaddubsw, which adds
// adjacent u8 x s8 products into int16 and saturates only when both are
// near 255 x 127: never here (2 x 63 x 127 and 2 x 128 x 127 fit), then
// vpmaddwd adds pairs into int32 (times 1, or times the sub-block's
// scale for the k-quants). Each lane of the eight ends with an exact
// integer part of the block's dot; the zero points (-8 s, -16 s, -32
// bsum) and the k-quants' mins come from the activation block's sums,
// also in integers.
//
// Numerics. An element (weight row r, activation row j) keeps eight fp32
// lanes of its own, acc, from +0; per block, in block order,
//   acc = fma(float(isum lanes), fl(dw * dx), acc)
// and for Q4_K, Q5_K the mins, acc = fnma(float(mins lanes), fl(dmin *
// dx), acc); for Q4_1, Q5_1 a scalar macc = fma(float(s), fl(mw * dx),
// macc) beside it. At the end the eight lanes are summed in one fixed
// tree (q2_hsum), macc added, and y = that or y + that. The tiles below
// only choose which elements run side by side; every element runs these
// steps whatever the tile, its position or the call's shape, so its bits
// depend on its two rows and nb only (kernels/quant.h).
//
// Built with -mavx2 -mfma -mf16c in the AVX2 library, reached only
// through mhsa_kernels_avx2 after dispatch has checked the CPU.
#ifndef MHSA_AVX2_QUANT_H
#define MHSA_AVX2_QUANT_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/quant.h"

#define MHSA_Q2_QMM_ARGS                                                      \
    size_t nb, const void *w, size_t ldw, size_t nw, const void *x,          \
        size_t ldx, size_t m, float *y, size_t ldy, int add
void mhsa_qmm_q8_0__avx2(MHSA_Q2_QMM_ARGS);
void mhsa_qmm_q4_0__avx2(MHSA_Q2_QMM_ARGS);
void mhsa_qmm_q4_1__avx2(MHSA_Q2_QMM_ARGS);
void mhsa_qmm_q5_0__avx2(MHSA_Q2_QMM_ARGS);
void mhsa_qmm_q5_1__avx2(MHSA_Q2_QMM_ARGS);
void mhsa_qmm_q4_k__avx2(MHSA_Q2_QMM_ARGS);
void mhsa_qmm_q5_k__avx2(MHSA_Q2_QMM_ARGS);
void mhsa_qmm_q6_k__avx2(MHSA_Q2_QMM_ARGS);
void mhsa_qquantize_32__avx2(size_t n, const float *x, void *dst);
void mhsa_qquantize_256__avx2(size_t n, const float *x, void *dst);
extern const mhsa_qkernels mhsa_qkernels_avx2;

#define Q2_INLINE static inline __attribute__((always_inline))
// The loops over a tile's weight rows and activation rows are unrolled,
// so that their vectors stay in registers.
#define Q2_UNROLL _Pragma("GCC unroll 8")

// Bytes of activation rows a chunk may hold: they stay in L2 while every
// weight row passes over them.
#define Q2_ACT_CHUNK_BYTES (256u * 1024u)

// The f16 at p (unaligned) as fp32: exact (F16C).
Q2_INLINE float q2_f16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

Q2_INLINE float q2_f32(const unsigned char *p)
{
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

Q2_INLINE __m256i q2_load(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

// Lanes of p16 (int16) summed in pairs into int32, times 1.
Q2_INLINE __m256i q2_pairs(__m256i p16)
{
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// The eight lanes of v summed in the one order every element takes:
// (l0 + l4) + (l2 + l6), (l1 + l5) + (l3 + l7), then those two.
Q2_INLINE float q2_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// y = v, or y + v with add (one fp32 add).
Q2_INLINE void q2_store(float *y, float v, int add)
{
    *y = add ? *y + v : v;
}

// Activation rows per chunk of m: a multiple of 4, at least 4.
Q2_INLINE size_t q2_act_chunk(size_t ldx)
{
    size_t mc = ldx ? Q2_ACT_CHUNK_BYTES / ldx : 4;
    mc &= ~(size_t)3;
    return mc < 4 ? 4 : mc;
}

// ---- the loop of every product ----------------------------------------------

// name(...) (kernels/quant.h's qmm) from
//   TILE(nb, w, ldw, x, ldx, y, ldy, add, NW, NA)
// which computes and stores the NW x NA elements of NW weight rows (from
// w, ldw apart) and NA activation rows (from x, ldx apart), NW and NA
// constants at each call. Activation rows go in chunks that stay in L2;
// in a chunk each weight row meets the activation rows four at a time
// (its blocks unpacked once for four, from L1 after the first), and the
// m % 4 rows left, like decode's single row, meet four weight rows at a
// time (each weight row streamed once, four chains side by side).
#define Q2_QMM(name, TILE)                                                    \
    void name(MHSA_Q2_QMM_ARGS)                                               \
    {                                                                         \
        const unsigned char *wb = w, *xb = x;                                 \
        size_t mc = q2_act_chunk(ldx);                                        \
        for (size_t j0 = 0; j0 < m; j0 += mc) {                               \
            size_t mj = m - j0 < mc ? m - j0 : mc, m4 = mj & ~(size_t)3;      \
            const unsigned char *xj = xb + j0 * ldx;                          \
            float *yj = y + j0 * ldy;                                         \
            if (m4)                                                           \
                for (size_t r = 0; r < nw; r++)                               \
                    for (size_t j = 0; j < m4; j += 4)                        \
                        TILE(nb, wb + r * ldw, ldw, xj + j * ldx, ldx,        \
                             yj + j * ldy + r, ldy, add, 1, 4);               \
            for (size_t j = m4; j < mj; j++) {                                \
                size_t r = 0;                                                 \
                for (; r + 4 <= nw; r += 4)                                   \
                    TILE(nb, wb + r * ldw, ldw, xj + j * ldx, ldx,            \
                         yj + j * ldy + r, ldy, add, 4, 1);                   \
                for (; r < nw; r++)                                           \
                    TILE(nb, wb + r * ldw, ldw, xj + j * ldx, ldx,            \
                         yj + j * ldy + r, ldy, add, 1, 1);                   \
            }                                                                 \
        }                                                                     \
    }

#endif
