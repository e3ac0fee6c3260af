// quant_k.c — the AVX2 products of the k-quants (Q4_K, Q5_K, Q6_K) with
// q8_256 activations (contract: kernels/quant.h; the tiles, the integer
// dots and the fp32 steps: avx2/quant.h).
//
// A block is unpacked 32 quants (one register) at a time and met by every
// activation row of the tile before the next 32: vpmaddubsw gives int16
// pair sums, and vpmaddwd against the sub-block's scale broadcast to
// every int16 lane gives sc_j times them in int32, so each element ends
// a block with eight int32 lanes summing to sum_j sc_j sum_j(qw qx),
// exact (|pair| <= 2 x 63 x 127, times |sc| <= 128, eight sub-block
// parts a lane). The min terms come from bsum: Q4_K, Q5_K's sum_j m_j
// (bsum[2j] + bsum[2j+1]) as four int32 lanes (vphaddw, vpmaddwd), and
// Q6_K's -32 sum_j sc_j bsum_j folded into the integer lanes.
#include "avx2/quant.h"

// vpshufb indices that copy the int16 at lane j of a 128-bit register
// into all eight lanes (per 128-bit half, so both halves take it).
static const uint8_t bcast16[8][32] = {
#define Q2_B2(j) 2 * (j), 2 * (j) + 1
#define Q2_B8(j) Q2_B2(j), Q2_B2(j), Q2_B2(j), Q2_B2(j), Q2_B2(j), Q2_B2(j), \
                 Q2_B2(j), Q2_B2(j)
#define Q2_ROW(j) { Q2_B8(j), Q2_B8(j) }
    Q2_ROW(0), Q2_ROW(1), Q2_ROW(2), Q2_ROW(3),
    Q2_ROW(4), Q2_ROW(5), Q2_ROW(6), Q2_ROW(7),
#undef Q2_ROW
#undef Q2_B8
#undef Q2_B2
};

// sc (eight int16 in both 128-bit halves): lane j in every int16 lane.
Q2_INLINE __m256i q2_bcast16(__m256i sc, int j)
{
    return _mm256_shuffle_epi8(sc, q2_load(bcast16[j]));
}

// ---- Q4_K and Q5_K ------------------------------------------------------------

// The eight 6-bit scales (sc) and mins (mn) packed in the 12 bytes at p
// (quant_ref.c's scale_min, four at a time), as int16: sc in both
// 128-bit halves, mn in one.
Q2_INLINE void q2_scales_k4(const unsigned char *p, __m256i *sc, __m128i *mn)
{
    const uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    uint32_t u[4];
    memcpy(u, p, 12);
    // u[0..1] the scales of sub-blocks 0-3 and 4-7, u[2..3] the mins.
    u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
    uint32_t m03 = u[1] & k1;
    u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
    u[2] = m03;
    u[0] &= k1;
    __m128i s = _mm_cvtepu8_epi16(_mm_setr_epi32((int)u[0], (int)u[1], 0, 0));
    *sc = _mm256_set_m128i(s, s);
    *mn = _mm_cvtepu8_epi16(_mm_setr_epi32((int)u[2], (int)u[3], 0, 0));
}

// NW weight rows against NA activation rows (avx2/quant.h's tiles).
// Register budget at 1 x 4: 4 acc, 4 int sums, the two sub-blocks'
// quants and scales, one activation load and one product.
Q2_INLINE void q2_tile_k45(int five, size_t nb, const unsigned char *w,
                           size_t ldw, const unsigned char *x, size_t ldx,
                           float *y, size_t ldy, int add, int NW, int NA)
{
    const size_t wbytes = five ? 176 : 144, xbytes = sizeof(mhsa_q8_256);
    const __m256i m4 = _mm256_set1_epi8(0x0f), b4 = _mm256_set1_epi8(0x10);
    __m256 acc[4][4];
    Q2_UNROLL for (int i = 0; i < NW; i++)
        Q2_UNROLL for (int a = 0; a < NA; a++)
            acc[i][a] = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        __m256i sc[4], sum[4][4];
        __m128i mn[4];
        Q2_UNROLL for (int i = 0; i < NW; i++) {
            q2_scales_k4(w + i * ldw + b * wbytes + 4, &sc[i], &mn[i]);
            Q2_UNROLL for (int a = 0; a < NA; a++)
                sum[i][a] = _mm256_setzero_si256();
        }
        Q2_UNROLL for (int k = 0; k < 4; k++) {   // sub-blocks 2k, 2k + 1
            Q2_UNROLL for (int i = 0; i < NW; i++) {
                const unsigned char *p = w + i * ldw + b * wbytes;
                __m256i bits = q2_load(p + (five ? 48 : 16) + 32 * k);
                __m256i lo = _mm256_and_si256(bits, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
                if (five) {
                    // Bit j of qh[l] is element l of sub-block j's fifth
                    // bit: moved to bit 4 of byte l (within each byte:
                    // the 16-bit shifts move no bit across bit 4).
                    __m256i qh = q2_load(p + 16);
                    __m256i hl = 2 * k <= 4
                                     ? _mm256_slli_epi16(qh, 4 - 2 * k)
                                     : _mm256_srli_epi16(qh, 2 * k - 4);
                    __m256i hh = 2 * k + 1 <= 4
                                     ? _mm256_slli_epi16(qh, 3 - 2 * k)
                                     : _mm256_srli_epi16(qh, 2 * k - 3);
                    lo = _mm256_or_si256(lo, _mm256_and_si256(hl, b4));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(hh, b4));
                }
                __m256i sl = q2_bcast16(sc[i], 2 * k);
                __m256i sh = q2_bcast16(sc[i], 2 * k + 1);
                Q2_UNROLL for (int a = 0; a < NA; a++) {
                    const unsigned char *xq = x + a * ldx + b * xbytes + 4;
                    __m256i pl = _mm256_madd_epi16(
                        _mm256_maddubs_epi16(lo, q2_load(xq + 64 * k)), sl);
                    __m256i ph = _mm256_madd_epi16(
                        _mm256_maddubs_epi16(hi, q2_load(xq + 64 * k + 32)),
                        sh);
                    sum[i][a] = _mm256_add_epi32(sum[i][a],
                                                 _mm256_add_epi32(pl, ph));
                }
            }
        }
        Q2_UNROLL for (int a = 0; a < NA; a++) {
            const unsigned char *xa = x + a * ldx + b * xbytes;
            float dx = q2_f32(xa);
            const unsigned char *bs = xa + offsetof(mhsa_q8_256, bsum);
            // bsum[2j] + bsum[2j + 1] in int16 lane j (|.| <= 2 x 2032).
            __m128i pairs = _mm_hadd_epi16(
                _mm_loadu_si128((const __m128i *)bs),
                _mm_loadu_si128((const __m128i *)(bs + 16)));
            Q2_UNROLL for (int i = 0; i < NW; i++) {
                const unsigned char *p = w + i * ldw + b * wbytes;
                __m256i mins =
                    _mm256_zextsi128_si256(_mm_madd_epi16(mn[i], pairs));
                acc[i][a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[i][a]),
                                            _mm256_set1_ps(q2_f16(p) * dx),
                                            acc[i][a]);
                acc[i][a] = _mm256_fnmadd_ps(
                    _mm256_cvtepi32_ps(mins),
                    _mm256_set1_ps(q2_f16(p + 2) * dx), acc[i][a]);
            }
        }
    }
    Q2_UNROLL for (int a = 0; a < NA; a++)
        Q2_UNROLL for (int i = 0; i < NW; i++)
            q2_store(y + a * ldy + i, q2_hsum(acc[i][a]), add);
}

// ---- Q6_K ---------------------------------------------------------------------

// vpshufb indices that copy byte j into the low eight bytes and byte j + 1
// into the high eight of a 128-bit register, for j = 0, 2, ..., 14.
static const uint8_t pair8[8][16] = {
#define Q2_R8(j) (j), (j), (j), (j), (j), (j), (j), (j)
#define Q2_ROW(j) { Q2_R8(2 * (j)), Q2_R8(2 * (j) + 1) }
    Q2_ROW(0), Q2_ROW(1), Q2_ROW(2), Q2_ROW(3),
    Q2_ROW(4), Q2_ROW(5), Q2_ROW(6), Q2_ROW(7),
#undef Q2_ROW
#undef Q2_R8
};

Q2_INLINE void q2_tile_k6(size_t nb, const unsigned char *w, size_t ldw,
                          const unsigned char *x, size_t ldx, float *y,
                          size_t ldy, int add, int NW, int NA)
{
    const size_t wbytes = 210, xbytes = sizeof(mhsa_q8_256);
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
    __m256 acc[4][4];
    Q2_UNROLL for (int i = 0; i < NW; i++)
        Q2_UNROLL for (int a = 0; a < NA; a++)
            acc[i][a] = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        __m128i sc[4];
        __m256i sum[4][4];
        // The zero point first: sum = -32 sum_j sc_j bsum_j (in lanes).
        Q2_UNROLL for (int i = 0; i < NW; i++) {
            sc[i] = _mm_loadu_si128(
                (const __m128i *)(w + i * ldw + b * wbytes + 192));
            __m256i sc16 = _mm256_cvtepi8_epi16(sc[i]);
            Q2_UNROLL for (int a = 0; a < NA; a++) {
                const unsigned char *bs = x + a * ldx + b * xbytes +
                                          offsetof(mhsa_q8_256, bsum);
                sum[i][a] = _mm256_sub_epi32(
                    _mm256_setzero_si256(),
                    _mm256_slli_epi32(_mm256_madd_epi16(sc16, q2_load(bs)),
                                      5));
            }
        }
        Q2_UNROLL for (int h = 0; h < 2; h++)
            Q2_UNROLL for (int k = 0; k < 4; k++) {   // elements 128 h + 32 k ..
                Q2_UNROLL for (int i = 0; i < NW; i++) {
                    const unsigned char *p = w + i * ldw + b * wbytes;
                    __m256i ql = q2_load(p + 64 * h + 32 * (k & 1));
                    __m256i qh = q2_load(p + 128 + 32 * h);
                    if (k >= 2)
                        ql = _mm256_srli_epi16(ql, 4);
                    // Bits 2k, 2k + 1 of qh to bits 4, 5 (16-bit shifts:
                    // the mask drops what crosses a byte).
                    qh = 2 * k <= 4 ? _mm256_slli_epi16(qh, 4 - 2 * k)
                                    : _mm256_srli_epi16(qh, 2 * k - 4);
                    __m256i q = _mm256_or_si256(_mm256_and_si256(ql, m4),
                                                _mm256_and_si256(qh, m2));
                    // Scales of sub-blocks 8h + 2k (elements 0-15, the
                    // low half) and 8h + 2k + 1 (the high half).
                    __m256i s = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(
                        sc[i], _mm_loadu_si128(
                                   (const __m128i *)pair8[4 * h + k])));
                    Q2_UNROLL for (int a = 0; a < NA; a++) {
                        const unsigned char *xq =
                            x + a * ldx + b * xbytes + 4 + 128 * h + 32 * k;
                        sum[i][a] = _mm256_add_epi32(
                            sum[i][a],
                            _mm256_madd_epi16(
                                _mm256_maddubs_epi16(q, q2_load(xq)), s));
                    }
                }
            }
        Q2_UNROLL for (int a = 0; a < NA; a++) {
            float dx = q2_f32(x + a * ldx + b * xbytes);
            Q2_UNROLL for (int i = 0; i < NW; i++) {
                float d = q2_f16(w + i * ldw + b * wbytes + 208);
                acc[i][a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[i][a]),
                                            _mm256_set1_ps(d * dx),
                                            acc[i][a]);
            }
        }
    }
    Q2_UNROLL for (int a = 0; a < NA; a++)
        Q2_UNROLL for (int i = 0; i < NW; i++)
            q2_store(y + a * ldy + i, q2_hsum(acc[i][a]), add);
}

#define Q2_TILE_Q4_K(...) q2_tile_k45(0, __VA_ARGS__)
#define Q2_TILE_Q5_K(...) q2_tile_k45(1, __VA_ARGS__)

Q2_QMM(mhsa_qmm_q4_k__avx2, Q2_TILE_Q4_K)
Q2_QMM(mhsa_qmm_q5_k__avx2, Q2_TILE_Q5_K)
Q2_QMM(mhsa_qmm_q6_k__avx2, q2_tile_k6)
