// quant_k.c — the AVX-512 VNNI products of the k-quants: Q4_K, Q5_K, Q6_K
// (kernels/quant.h's qmm; the layout, the unit of 16 rows and the fp32
// step: quant.h here; the block layouts: src/scalar/quant_ref.c).
//
// Per super-block of 256 and 16 rows, everything the reference sums in
// int32 is summed in int32 here too, lane by lane (exact, so its order is
// free):
//   Q4_K, Q5_K  isum = sum_j sc_j dot_j over the 8 sub-blocks of 32
//               (dot_j: 8 vpdpbusd; sc_j one vpmulld), mins = sum_j m_j
//               (bsum[2j] + bsum[2j + 1]) (one vpdpwssd per j: the lane
//               holds m_j twice as int16, the activation's two bsums are
//               one broadcast dword);
//   Q6_K        isum = sum_j sc_j dot_j over the 16 sub-blocks of 16,
//               less 32 sum_j sc_j bsum_j (vpdpwssd over pairs of
//               sub-blocks: (sc_j, sc_j+1) against (bsum_j, bsum_j+1)).
// Then the fp32 steps, per element in super-block order:
//   acc = fma(float(isum), fl(d dx), acc)
//   acc = fma(-float(mins), fl(dmin dx), acc)      (Q4_K, Q5_K only)
// The scales and mins are unpacked once per unit and used by every
// activation row of the tile, as the quants are. Register budget of a
// 2-row Q4_K tile: 16 W (two sub-blocks) + 2 scales + 2 x 3 sums + d,
// dmin and constants, of 32 zmm.
#include "avx512/quant.h"

// vpshufb indices that copy byte j (< 4) of every dword: to its low byte,
// zero above (one32), or to both its int16 halves' low bytes (pair16_lo),
// or bytes j, j + 1 to the high bytes of its int16 halves (pair16_hi).
Q512_INLINE __m512i idx_dwords(uint32_t pattern)
{
    return _mm512_broadcast_i32x4(_mm_setr_epi32(
        (int)pattern, (int)(pattern + 0x04040404u),
        (int)(pattern + 0x08080808u), (int)(pattern + 0x0c0c0c0cu)));
}

// Lane: byte j of v, zero-extended to 32 bits.
Q512_INLINE __m512i byte_u32(__m512i v, int j)
{
    return _mm512_shuffle_epi8(v, idx_dwords(0x80808000u + (uint32_t)j));
}

// Lane: byte j of v, zero-extended, in both int16 halves.
Q512_INLINE __m512i byte_u16x2(__m512i v, int j)
{
    return _mm512_shuffle_epi8(
        v, idx_dwords(0x80008000u + (uint32_t)j * 0x00010001u));
}

// Lane: byte j of v, sign-extended to 32 bits ((u ^ 128) - 128 of the
// zero-extended byte u).
Q512_INLINE __m512i byte_s32(__m512i v, int j)
{
    const __m512i c80 = _mm512_set1_epi32(0x80);
    return _mm512_sub_epi32(_mm512_xor_si512(byte_u32(v, j), c80), c80);
}

// Lane: bytes j and j + 1 of v, sign-extended, as int16 halves.
Q512_INLINE __m512i bytes_s16x2(__m512i v, int j)
{
    return _mm512_srai_epi16(
        _mm512_shuffle_epi8(v, idx_dwords(0x00800080u +
                                          ((uint32_t)j << 8) +
                                          ((uint32_t)(j + 1) << 24))),
        8);
}

// a | (b & c), one vpternlogd.
Q512_INLINE __m512i or_and(__m512i a, __m512i b, __m512i c)
{
    return _mm512_ternarylogic_epi32(a, b, c, 0xf8);
}

// Bits 0..5 of a lane's dword shifted left by s (s < 0: right), each byte
// on its own: the bits a shift brings in from a neighbour byte are masked
// off by the caller.
Q512_INLINE __m512i shift_bytes(__m512i v, int s)
{
    return s > 0 ? _mm512_slli_epi32(v, (unsigned)s)
           : s < 0 ? _mm512_srli_epi32(v, (unsigned)-s)
                   : v;
}

// ---- Q4_K and Q5_K ---------------------------------------------------------

// The tile (quant.h: Q512_QMM) of Q4_K (five 0) or Q5_K (five 1).
Q512_INLINE void tile_k45(int five, const q512_rows *R, size_t nb,
                          const char *x, size_t ldx, int n, __m512 *acc)
{
    const size_t bytes = five ? 176 : 144, qs = five ? 48 : 16;
    const __m512i c0f = q512_bytes(0x0f), c30 = q512_bytes(0x30),
                  c10 = q512_bytes(0x10);
    for (int i = 0; i < n; i++)
        acc[i] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        q512_prefetch_next(R, b);
        const size_t off = b * bytes;
        // H[0] = d | dmin << 16, H[1..3] the 12 bytes of scales.
        __m512i H[4];
        q512_tr16x4(R, off, H);
        __m512 d = q512_half_lo(H[0]), dmin = q512_half_hi(H[0]);
        // Bytes j of sc[0] / m[0]: sc_j / m_j for j < 4; of sc[1] / m[1]
        // those of j + 4 (6 bits split: 4 in bytes 8.., 2 on top of 0..).
        __m512i sc[2], mn[2];
        sc[0] = _mm512_and_si512(H[1], q512_bytes(0x3f));
        mn[0] = _mm512_and_si512(H[2], q512_bytes(0x3f));
        sc[1] = or_and(_mm512_and_si512(H[3], c0f),
                       _mm512_srli_epi32(H[1], 2), c30);
        mn[1] = or_and(q512_hi4(H[3]), _mm512_srli_epi32(H[2], 2), c30);

        __m512i isum[4], mins[4];
        for (int i = 0; i < n; i++) {
            isum[i] = _mm512_setzero_si512();
            mins[i] = _mm512_setzero_si512();
        }
        for (int j = 0; j < 8; j++) {
            __m512i mj = byte_u16x2(mn[j >> 2], j & 3);
            for (int i = 0; i < n; i++) {
                const mhsa_q8_256 *xb = (const mhsa_q8_256 *)(x + i * ldx) + b;
                mins[i] = _mm512_dpwssd_epi32(mins[i], mj,
                                              q512_bcast(xb->bsum + 2 * j));
            }
        }
        __m512i QH[8];
        if (five)
            q512_tr16x8(R, off + 16, QH);
        for (int p = 0; p < 4; p++) {
            __m512i T[8], W0[8], W1[8];
            q512_tr16x8(R, off + qs + 32 * (size_t)p, T);
            for (int k = 0; k < 8; k++) {
                W0[k] = q512_lo4(T[k]);
                W1[k] = q512_hi4(T[k]);
                if (five) {   // bit 2p (2p + 1) of qh[l] to bit 4
                    W0[k] = or_and(W0[k], shift_bytes(QH[k], 4 - 2 * p),
                                   c10);
                    W1[k] = or_and(W1[k], shift_bytes(QH[k], 3 - 2 * p),
                                   c10);
                }
            }
            __m512i s0 = byte_u32(sc[p >> 1], 2 * (p & 1)),
                    s1 = byte_u32(sc[p >> 1], 2 * (p & 1) + 1);
            for (int i = 0; i < n; i++) {
                const mhsa_q8_256 *xb = (const mhsa_q8_256 *)(x + i * ldx) + b;
                const __m512i z = _mm512_setzero_si512();
                int ch = n == 1 ? 2 : 1;
                __m512i d0 = q512_dot(W0, 8, xb->q + 64 * p, z, ch);
                __m512i d1 = q512_dot(W1, 8, xb->q + 64 * p + 32, z, ch);
                isum[i] = _mm512_add_epi32(
                    isum[i], _mm512_add_epi32(_mm512_mullo_epi32(d0, s0),
                                              _mm512_mullo_epi32(d1, s1)));
            }
        }
        for (int i = 0; i < n; i++) {
            const mhsa_q8_256 *xb = (const mhsa_q8_256 *)(x + i * ldx) + b;
            __m512 dx = _mm512_set1_ps(xb->d);
            acc[i] = _mm512_fmadd_ps(q512_cvt_ps(isum[i]),
                                     _mm512_mul_ps(d, dx), acc[i]);
            acc[i] = _mm512_fnmadd_ps(q512_cvt_ps(mins[i]),
                                      _mm512_mul_ps(dmin, dx), acc[i]);
        }
    }
}

// ---- Q6_K ------------------------------------------------------------------

// The tile (quant.h: Q512_QMM) of Q6_K. Element 128 h + 32 k + l: its low
// 4 bits in ql[64 h + 32 (k % 2) + l] (low nibble for k < 2), bits 2k of
// qh[32 h + l] on top; sub-blocks j = 8 h + 2 k and j + 1 are l < 16 and
// l >= 16, dwords 0-3 and 4-7 of the transposed bytes.
Q512_INLINE void tile_k6(const q512_rows *R, size_t nb, const char *x,
                         size_t ldx, int n, __m512 *acc)
{
    const __m512i c30 = q512_bytes(0x30);
    for (int i = 0; i < n; i++)
        acc[i] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        q512_prefetch_next(R, b);
        const size_t off = b * 210;
        __m512 d = q512_halves(R, off + 208);
        __m512i S[4];   // int8 scale j in byte j % 4 of S[j / 4]
        q512_tr16x4(R, off + 192, S);

        __m512i isum[4], offs[4];
        for (int i = 0; i < n; i++) {
            isum[i] = _mm512_setzero_si512();
            offs[i] = _mm512_setzero_si512();
        }
        for (int j = 0; j < 16; j += 2) {
            __m512i sp = bytes_s16x2(S[j >> 2], j & 3);
            for (int i = 0; i < n; i++) {
                const mhsa_q8_256 *xb = (const mhsa_q8_256 *)(x + i * ldx) + b;
                offs[i] = _mm512_dpwssd_epi32(offs[i], sp,
                                              q512_bcast(xb->bsum + j));
            }
        }
        for (int h = 0; h < 2; h++) {
            __m512i QH[8];
            q512_tr16x8(R, off + 128 + 32 * (size_t)h, QH);
            for (int k2 = 0; k2 < 2; k2++) {
                __m512i T[8];
                q512_tr16x8(R, off + 64 * (size_t)h + 32 * (size_t)k2, T);
                for (int k = k2; k < 4; k += 2) {
                    __m512i W[8];
                    for (int l = 0; l < 8; l++)
                        W[l] = or_and(k < 2 ? q512_lo4(T[l])
                                            : q512_hi4(T[l]),
                                      shift_bytes(QH[l], 4 - 2 * k), c30);
                    int j = 8 * h + 2 * k;
                    __m512i s0 = byte_s32(S[j >> 2], j & 3),
                            s1 = byte_s32(S[j >> 2], (j & 3) + 1);
                    for (int i = 0; i < n; i++) {
                        const mhsa_q8_256 *xb =
                            (const mhsa_q8_256 *)(x + i * ldx) + b;
                        const __m512i z = _mm512_setzero_si512();
                        const int8_t *q = xb->q + 128 * h + 32 * k;
                        int ch = n == 1 ? 2 : 1;
                        __m512i d0 = q512_dot(W, 4, q, z, ch);
                        __m512i d1 = q512_dot(W + 4, 4, q + 16, z, ch);
                        isum[i] = _mm512_add_epi32(
                            isum[i],
                            _mm512_add_epi32(_mm512_mullo_epi32(d0, s0),
                                             _mm512_mullo_epi32(d1, s1)));
                    }
                }
            }
        }
        for (int i = 0; i < n; i++) {
            const mhsa_q8_256 *xb = (const mhsa_q8_256 *)(x + i * ldx) + b;
            __m512i t = _mm512_sub_epi32(isum[i],
                                         _mm512_slli_epi32(offs[i], 5));
            acc[i] = q512_fma_block(t, d, xb->d, acc[i]);
        }
    }
}

#define TILE_Q4_K(...) tile_k45(0, __VA_ARGS__)
#define TILE_Q5_K(...) tile_k45(1, __VA_ARGS__)
#define TILE_Q6_K(...) tile_k6(__VA_ARGS__)

Q512_QMM(mhsa_qmm_q4_k__avx512, mhsa_qmm16_q4_k__avx512, TILE_Q4_K, 2)
Q512_QMM(mhsa_qmm_q5_k__avx512, mhsa_qmm16_q5_k__avx512, TILE_Q5_K, 2)
Q512_QMM(mhsa_qmm_q6_k__avx512, mhsa_qmm16_q6_k__avx512, TILE_Q6_K, 2)
