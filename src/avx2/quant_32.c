// quant_32.c — the AVX2 products of the 32-element types (Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1) with q8_32 activations (contract: kernels/quant.h;
// the tiles, the integer dots and the fp32 steps: avx2/quant.h).
//
// A block's 32 weight quants take one register, byte i element i; its
// integer dot with an activation block is one vpmaddubsw and one
// vpmaddwd (Q8_0: vpabsb on the weights once, vpsignb on the activation
// per pair), eight int32 lanes. The zero point (-8 s for Q4_0, -16 s for
// Q5_0) is added to lane 0 before the conversion; Q4_1 and Q5_1's min
// term mw dx s is its own scalar FMA chain (avx2/quant.h).
#include "avx2/quant.h"

// The 16 bytes at qs as 32 nibbles: lo(qs[i]) in byte i, hi(qs[i]) in
// byte 16 + i (the blocks' element order).
Q2_INLINE __m256i q2_nibbles(const unsigned char *qs)
{
    __m128i t = _mm_loadu_si128((const __m128i *)qs);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

// Bit i of the little-endian u32 at qh as 0x10 (or 0) in byte i.
Q2_INLINE __m256i q2_high_bits(const unsigned char *qh)
{
    uint32_t h;
    memcpy(&h, qh, sizeof h);
    const __m256i spread = _mm256_set_epi64x(
        0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), spread);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

// The block at p's 32 unsigned quants (Q8_0: its signed ones).
Q2_INLINE __m256i q2_unpack32(mhsa_qtype t, const unsigned char *p)
{
    switch (t) {
    case MHSA_Q8_0: return q2_load(p + 2);
    case MHSA_Q4_0: return q2_nibbles(p + 2);
    case MHSA_Q4_1: return q2_nibbles(p + 4);
    case MHSA_Q5_0:
        return _mm256_or_si256(q2_nibbles(p + 6), q2_high_bits(p + 2));
    default:   // MHSA_Q5_1
        return _mm256_or_si256(q2_nibbles(p + 8), q2_high_bits(p + 4));
    }
}

// NW weight rows (w, ldw apart) against NA activation rows (x, ldx
// apart), all nb blocks; y[a ldy + i] for row i and activation row a.
// Register budget at 1 x 4 and 4 x 1: 4 acc + the weights' quants + the
// activation block and one product in flight.
Q2_INLINE void q2_tile32(mhsa_qtype t, size_t nb, const unsigned char *w,
                         size_t ldw, const unsigned char *x, size_t ldx,
                         float *y, size_t ldy, int add, int NW, int NA)
{
    const size_t wbytes = mhsa_qtype_bytes32(t), xbytes = sizeof(mhsa_q8_32);
    const int has_min = t == MHSA_Q4_1 || t == MHSA_Q5_1;
    const int zero = t == MHSA_Q4_0 ? 8 : t == MHSA_Q5_0 ? 16 : 0;
    __m256 acc[4][4];
    float macc[4][4];
    Q2_UNROLL for (int i = 0; i < NW; i++)
        Q2_UNROLL for (int a = 0; a < NA; a++) {
            acc[i][a] = _mm256_setzero_ps();
            macc[i][a] = 0.0f;
        }
    for (size_t b = 0; b < nb; b++) {
        __m256i q[4], qa[4];
        float dw[4], mw[4];
        Q2_UNROLL for (int i = 0; i < NW; i++) {
            const unsigned char *p = w + i * ldw + b * wbytes;
            q[i] = q2_unpack32(t, p);
            if (t == MHSA_Q8_0)
                qa[i] = _mm256_abs_epi8(q[i]);
            dw[i] = q2_f16(p);
            mw[i] = has_min ? q2_f16(p + 2) : 0.0f;
        }
        Q2_UNROLL for (int a = 0; a < NA; a++) {
            const unsigned char *xa = x + a * ldx + b * xbytes;
            __m256i xq = q2_load(xa + 8);
            float dx = q2_f32(xa);
            int32_t s;
            memcpy(&s, xa + 4, sizeof s);
            __m256i off = _mm256_setr_epi32(-zero * s, 0, 0, 0, 0, 0, 0, 0);
            Q2_UNROLL for (int i = 0; i < NW; i++) {
                __m256i p16 =
                    t == MHSA_Q8_0
                        ? _mm256_maddubs_epi16(qa[i],
                                               _mm256_sign_epi8(xq, q[i]))
                        : _mm256_maddubs_epi16(q[i], xq);
                __m256i p = q2_pairs(p16);
                if (zero)
                    p = _mm256_add_epi32(p, off);
                acc[i][a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                                            _mm256_set1_ps(dw[i] * dx),
                                            acc[i][a]);
                if (has_min)
                    macc[i][a] = _mm_cvtss_f32(_mm_fmadd_ss(
                        _mm_set_ss((float)s), _mm_set_ss(mw[i] * dx),
                        _mm_set_ss(macc[i][a])));
            }
        }
    }
    Q2_UNROLL for (int a = 0; a < NA; a++)
        Q2_UNROLL for (int i = 0; i < NW; i++) {
            float v = q2_hsum(acc[i][a]);
            if (has_min)
                v += macc[i][a];
            q2_store(y + a * ldy + i, v, add);
        }
}

#define Q2_TILE_Q8_0(...) q2_tile32(MHSA_Q8_0, __VA_ARGS__)
#define Q2_TILE_Q4_0(...) q2_tile32(MHSA_Q4_0, __VA_ARGS__)
#define Q2_TILE_Q4_1(...) q2_tile32(MHSA_Q4_1, __VA_ARGS__)
#define Q2_TILE_Q5_0(...) q2_tile32(MHSA_Q5_0, __VA_ARGS__)
#define Q2_TILE_Q5_1(...) q2_tile32(MHSA_Q5_1, __VA_ARGS__)

Q2_QMM(mhsa_qmm_q8_0__avx2, Q2_TILE_Q8_0)
Q2_QMM(mhsa_qmm_q4_0__avx2, Q2_TILE_Q4_0)
Q2_QMM(mhsa_qmm_q4_1__avx2, Q2_TILE_Q4_1)
Q2_QMM(mhsa_qmm_q5_0__avx2, Q2_TILE_Q5_0)
Q2_QMM(mhsa_qmm_q5_1__avx2, Q2_TILE_Q5_1)
