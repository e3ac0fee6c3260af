// quant_32.c — the AVX-512 VNNI products of the 32-element types: Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1 (kernels/quant.h's qmm; the layout, the unit of
// 16 rows and the fp32 step: quant.h here).
//
// Per block of 16 rows: the 32 quants of each row as 8 dwords W[0..7]
// (row r in lane r, unsigned bytes), the scale dw (and the min mw), then
// for each activation row of the tile the integer dot of the 8 dwords
// against the activation's 32 bytes (8 vpdpbusd, the activation dword
// broadcast), the type's offset taken from the activation sum s:
//   Q8_0  w + 128 (the sign bit flipped: unsigned), isum = dot - 128 s
//   Q4_0  the nibbles, isum = dot - 8 s     Q5_0  with bit 4, dot - 16 s
//   Q4_1, Q5_1  isum = dot, and the min term mw dx s
// and the fp32 steps, per element in block order:
//   acc = fma(float(isum), fl(dw dx), acc)
//   acc = fma(float(s), fl(mw dx), acc)          (Q4_1, Q5_1 only)
// Register budget of a 4-row tile: 8 W + 4 chains + 4 acc + dw, mw and
// constants, of 32 zmm; one row's tile runs two chains (quant.h: q512_dot).
#include "avx512/quant.h"

// Bit 4 of byte t of W[k] = bit 4k + t of the 32-bit qh of each lane
// (Q5_0, Q5_1): byte h of qh, copied over its dword (vpshufb), holds the
// bits of W[2h] (its bits 0-3) and of W[2h + 1] (bits 4-7).
Q512_INLINE void add_high_bits(__m512i W[8], __m512i qh)
{
    const __m512i lo = _mm512_set1_epi32(0x08040201),
                  hi = _mm512_set1_epi32((int)0x80402010u),
                  b4 = q512_bytes(0x10);
    for (int h = 0; h < 4; h++) {
        const __m512i idx = _mm512_broadcast_i32x4(_mm_setr_epi32(
            h * 0x01010101, (4 + h) * 0x01010101, (8 + h) * 0x01010101,
            (12 + h) * 0x01010101));
        __m512i rep = _mm512_shuffle_epi8(qh, idx);
        W[2 * h] = _mm512_mask_add_epi8(W[2 * h],
                                        _mm512_test_epi8_mask(rep, lo),
                                        W[2 * h], b4);
        W[2 * h + 1] = _mm512_mask_add_epi8(W[2 * h + 1],
                                            _mm512_test_epi8_mask(rep, hi),
                                            W[2 * h + 1], b4);
    }
}

// The nibbles of the 16 bytes of qs at off: W[k] the low nibbles of
// dword k (elements 4k..), W[4 + k] its high ones (elements 16 + 4k..).
Q512_INLINE void nibbles(const q512_rows *R, size_t off, __m512i W[8])
{
    __m512i T[4];
    q512_tr16x4(R, off, T);
    for (int k = 0; k < 4; k++) {
        W[k] = q512_lo4(T[k]);
        W[4 + k] = q512_hi4(T[k]);
    }
}

// One block at off of the unit's rows: W, dw and (Q4_1, Q5_1) mw.
Q512_INLINE void unpack32(mhsa_qtype t, const q512_rows *R, size_t off,
                          __m512i W[8], __m512 *dw, __m512 *mw)
{
    __m512i dm;
    switch (t) {
    case MHSA_Q8_0:
        *dw = q512_halves(R, off);
        q512_tr16x8(R, off + 2, W);
        for (int k = 0; k < 8; k++)
            W[k] = _mm512_xor_si512(W[k], q512_bytes(0x80));
        break;
    case MHSA_Q4_0:
        *dw = q512_halves(R, off);
        nibbles(R, off + 2, W);
        break;
    case MHSA_Q4_1:
        dm = q512_dwords(R, off);
        *dw = q512_half_lo(dm);
        *mw = q512_half_hi(dm);
        nibbles(R, off + 4, W);
        break;
    case MHSA_Q5_0:
        *dw = q512_halves(R, off);
        nibbles(R, off + 6, W);
        add_high_bits(W, q512_dwords(R, off + 2));
        break;
    default:   // MHSA_Q5_1
        dm = q512_dwords(R, off);
        *dw = q512_half_lo(dm);
        *mw = q512_half_hi(dm);
        nibbles(R, off + 8, W);
        add_high_bits(W, q512_dwords(R, off + 4));
        break;
    }
}

// The tile (quant.h: Q512_QMM): n activation rows of x against the unit.
Q512_INLINE void tile32(mhsa_qtype t, const q512_rows *R, size_t nb,
                        const char *x, size_t ldx, int n, __m512 *acc)
{
    const int has_min = t == MHSA_Q4_1 || t == MHSA_Q5_1;
    const int32_t offset = t == MHSA_Q8_0   ? -128
                           : t == MHSA_Q4_0 ? -8
                           : t == MHSA_Q5_0 ? -16
                                            : 0;
    for (int i = 0; i < n; i++)
        acc[i] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        q512_prefetch_next(R, b);
        __m512i W[8];
        __m512 dw, mw = _mm512_setzero_ps();
        unpack32(t, R, b * mhsa_qtype_bytes32(t), W, &dw, &mw);
        for (int i = 0; i < n; i++) {
            const mhsa_q8_32 *xb = (const mhsa_q8_32 *)(x + i * ldx) + b;
            __m512i isum = q512_dot(W, 8, xb->q,
                                    _mm512_set1_epi32(offset * xb->s),
                                    n == 1 ? 2 : 1);
            acc[i] = q512_fma_block(isum, dw, xb->d, acc[i]);
            if (has_min)
                acc[i] = _mm512_fmadd_ps(
                    _mm512_set1_ps((float)xb->s),
                    _mm512_mul_ps(mw, _mm512_set1_ps(xb->d)), acc[i]);
        }
    }
}

#define TILE_Q8_0(...) tile32(MHSA_Q8_0, __VA_ARGS__)
#define TILE_Q4_0(...) tile32(MHSA_Q4_0, __VA_ARGS__)
#define TILE_Q4_1(...) tile32(MHSA_Q4_1, __VA_ARGS__)
#define TILE_Q5_0(...) tile32(MHSA_Q5_0, __VA_ARGS__)
#define TILE_Q5_1(...) tile32(MHSA_Q5_1, __VA_ARGS__)

Q512_QMM(mhsa_qmm_q8_0__avx512, mhsa_qmm16_q8_0__avx512, TILE_Q8_0, 4)
Q512_QMM(mhsa_qmm_q4_0__avx512, mhsa_qmm16_q4_0__avx512, TILE_Q4_0, 4)
Q512_QMM(mhsa_qmm_q4_1__avx512, mhsa_qmm16_q4_1__avx512, TILE_Q4_1, 4)
Q512_QMM(mhsa_qmm_q5_0__avx512, mhsa_qmm16_q5_0__avx512, TILE_Q5_0, 4)
Q512_QMM(mhsa_qmm_q5_1__avx512, mhsa_qmm16_q5_1__avx512, TILE_Q5_1, 4)
