// quant.h — what the AVX-512 VNNI quantized products share (quant.c: the
// activation quantizers and the set; quant_32.c: the 32-element types;
// quant_k.c: the k-quants). Contract: kernels/quant.h.
//
// Layout: one weight row per 32-bit lane. vpdpbusd adds to each 32-bit
// lane the products of 4 unsigned bytes (weight quants) with 4 signed
// bytes (activation quants). Here the 16 lanes of a register are 16
// weight rows, and the 4 activation bytes all of them meet are one
// dword broadcast from memory (the instruction's embedded broadcast).
// So a unit of 16 rows' blocks is transposed in registers a dword at a
// time: W[k] lane r holds quants 4k..4k+3 of row r's block, one unsigned
// byte each. Then:
//   - a lane holds its row's whole integer block dot after the block's
//     dwords, exact in int32: no horizontal sums, and per block one
//     convert, one scale product and one FMA for 16 rows;
//   - a unit's unpacking (transpose, nibbles, high bits, scales) is done
//     once and used by every activation row of a tile, and each
//     activation dword is one broadcast for 16 rows;
//   - an element's fp32 operations are those of its own lane, the same
//     whatever the tile, the rows beside it or the position in the call
//     (kernels/quant.h's element independence): per block, in block
//     order, acc = fma(float(isum), fl(dw * dx), acc) (and the min term's
//     FMA where the type has one, quant_32.c and quant_k.c say which),
//     acc starting at +0; then y = acc or y + acc.
// Rows past nw in the last unit of 16 repeat row nw - 1 (its memory is
// read again, nothing past it), and their lanes are never stored.
//
// Built with the AVX-512 flags plus -mavx512vnni in a library of its
// own; dispatch hands these out only on CPUs with AVX512_VNNI (the
// AVX-512 table's other kernels also run on Skylake-X, which lacks it).
// The SIMDe build of the tests compiles the same files (avx512.h's
// renames): every name defined here is literal and renamed there.
#ifndef MHSA_AVX512_QUANT_H
#define MHSA_AVX512_QUANT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "avx512/avx512.h"
#include "avx512/vmath.h"
#include "kernels/quant.h"

#if MHSA_AVX512_EMULATED
#define mhsa_qkernels_avx512 mhsa_qkernels_avx512_emul
#define mhsa_qquantize_32__avx512 mhsa_qquantize_32__avx512_emul
#define mhsa_qquantize_256__avx512 mhsa_qquantize_256__avx512_emul
#define mhsa_qmm_q8_0__avx512 mhsa_qmm_q8_0__avx512_emul
#define mhsa_qmm_q4_0__avx512 mhsa_qmm_q4_0__avx512_emul
#define mhsa_qmm_q4_1__avx512 mhsa_qmm_q4_1__avx512_emul
#define mhsa_qmm_q5_0__avx512 mhsa_qmm_q5_0__avx512_emul
#define mhsa_qmm_q5_1__avx512 mhsa_qmm_q5_1__avx512_emul
#define mhsa_qmm_q4_k__avx512 mhsa_qmm_q4_k__avx512_emul
#define mhsa_qmm_q5_k__avx512 mhsa_qmm_q5_k__avx512_emul
#define mhsa_qmm_q6_k__avx512 mhsa_qmm_q6_k__avx512_emul
#define mhsa_qmm16_q8_0__avx512 mhsa_qmm16_q8_0__avx512_emul
#define mhsa_qmm16_q4_0__avx512 mhsa_qmm16_q4_0__avx512_emul
#define mhsa_qmm16_q4_1__avx512 mhsa_qmm16_q4_1__avx512_emul
#define mhsa_qmm16_q5_0__avx512 mhsa_qmm16_q5_0__avx512_emul
#define mhsa_qmm16_q5_1__avx512 mhsa_qmm16_q5_1__avx512_emul
#define mhsa_qmm16_q4_k__avx512 mhsa_qmm16_q4_k__avx512_emul
#define mhsa_qmm16_q5_k__avx512 mhsa_qmm16_q5_k__avx512_emul
#define mhsa_qmm16_q6_k__avx512 mhsa_qmm16_q6_k__avx512_emul
#endif

// The set (quant.c): what the AVX-512 table's q points at.
extern const mhsa_qkernels mhsa_qkernels_avx512;

void mhsa_qquantize_32__avx512(size_t n, const float *x, void *dst);
void mhsa_qquantize_256__avx512(size_t n, const float *x, void *dst);

#define MHSA_Q512_QMM_ARGS                                                    \
    size_t nb, const void *w, size_t ldw, size_t nw, const void *x,          \
        size_t ldx, size_t m, float *y, size_t ldy, int add
void mhsa_qmm_q8_0__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm_q4_0__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm_q4_1__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm_q5_0__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm_q5_1__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm_q4_k__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm_q5_k__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm_q6_k__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm16_q8_0__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm16_q4_0__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm16_q4_1__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm16_q5_0__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm16_q5_1__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm16_q4_k__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm16_q5_k__avx512(MHSA_Q512_QMM_ARGS);
void mhsa_qmm16_q6_k__avx512(MHSA_Q512_QMM_ARGS);

#define Q512_INLINE MHSA_AVX512_INLINE

// ---- conversions SIMDe 0.7.4 lacks ------------------------------------------
// int32 to fp32 (rounded to nearest), fp32 to int32 (the current rounding
// mode) and int32 to int8 (truncated): the emulated build runs them as two
// AVX2 halves or lane by lane, with the instructions' results.
#if MHSA_AVX512_EMULATED
Q512_INLINE __m512 q512_cvt_ps(__m512i v)
{
    int32_t a[16];
    float f[16];
    _mm512_storeu_si512(a, v);
    for (int h = 0; h < 16; h += 8)
        _mm256_storeu_ps(f + h, _mm256_cvtepi32_ps(_mm256_loadu_si256(
                                    (const __m256i *)(a + h))));
    return _mm512_loadu_ps(f);
}

Q512_INLINE __m512i q512_cvt_epi32(__m512 v)
{
    float f[16];
    int32_t a[16];
    _mm512_storeu_ps(f, v);
    for (int h = 0; h < 16; h += 8)
        _mm256_storeu_si256((__m256i *)(a + h),
                            _mm256_cvtps_epi32(_mm256_loadu_ps(f + h)));
    return _mm512_loadu_si512(a);
}

Q512_INLINE __m128i q512_cvt_epi8(__m512i v)
{
    int32_t a[16];
    int8_t b[16];
    _mm512_storeu_si512(a, v);
    for (int i = 0; i < 16; i++)
        b[i] = (int8_t)a[i];
    return _mm_loadu_si128((const __m128i *)b);
}
#else
#define q512_cvt_ps _mm512_cvtepi32_ps
#define q512_cvt_epi32 _mm512_cvtps_epi32
#define q512_cvt_epi8 _mm512_cvtepi32_epi8
#endif

// The sum of the 16 int32 lanes (exact: the callers' sums fit int32).
Q512_INLINE int32_t q512_hsum_epi32(__m512i v)
{
    __m256i y = _mm256_add_epi32(_mm512_castsi512_si256(v),
                                 _mm512_extracti64x4_epi64(v, 1));
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(y),
                              _mm256_extracti128_si256(y, 1));
    x = _mm_add_epi32(x, _mm_unpackhi_epi64(x, x));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 1));
    return _mm_cvtsi128_si32(x);
}

// ---- one unit of 16 weight rows --------------------------------------------

// The 16 rows of a unit: row r of the unit at p[r] (rows past the
// matrix's last repeat it).
typedef struct q512_rows {
    const unsigned char *p[16];
    // P16 (kernels/quant.h): the unit's first byte, read instead of p
    // when packed (a constant where the loop is written, so each
    // accessor below compiles to one form).
    const unsigned char *pk;
    int packed;
    // The next unit's rows, contiguous, prefetched a slice of pf_step
    // bytes per block while this unit computes (q512_prefetch_next);
    // pf NULL: none.
    const char *pf;
    size_t pf_step;
} q512_rows;

// Rows r0.. of w (ldw bytes apart, nw in all); returns how many of the
// 16 are real (lanes to store).
Q512_INLINE size_t q512_rows_at(q512_rows *R, const void *w, size_t ldw,
                                size_t r0, size_t nw)
{
    size_t n = nw - r0 < 16 ? nw - r0 : 16;
    R->pk = NULL;
    R->packed = 0;
    for (size_t r = 0; r < 16; r++)
        R->p[r] = (const unsigned char *)w + (r0 + (r < n ? r : n - 1)) * ldw;
    return n;
}

// R's next unit: rows [r1, r1 + 16) of w (less past nw), spread over the
// nb blocks of this one; none when there are none or not on (a product
// of more activation rows than one tile, which reads each unit several
// times and takes its time per byte). A unit reads its 16 rows a block
// at a time: 16 short interleaved streams, which the hardware
// prefetchers do not follow from DRAM. Prefetching changes no bit.
Q512_INLINE void q512_prefetch_at(q512_rows *R, const void *w, size_t ldw,
                                  size_t r1, size_t nw, size_t nb, int on)
{
    R->pf = NULL;
    R->pf_step = 0;
    if (!on || r1 >= nw || nb == 0)
        return;
    size_t r2 = nw - r1 < 16 ? nw : r1 + 16;
    R->pf = (const char *)w + r1 * ldw;
    R->pf_step = ((r2 - r1) * ldw + nb - 1) / nb;
}

// Block b's slice of the next unit's bytes, into the cache.
Q512_INLINE void q512_prefetch_next(const q512_rows *R, size_t b)
{
    if (!R->pf)
        return;
    const char *p = R->pf + b * R->pf_step, *e = p + R->pf_step;
    for (; p < e; p += 64)
        __builtin_prefetch(p, 0, 2);
}

Q512_INLINE __m512i q512_bytes(int v) { return _mm512_set1_epi8((char)v); }

// T[k] lane r = the 4 bytes at p[r] + off + 4k, k < 4 (16 bytes a row);
// packed, four loads.
// Rows (i, i + 4, i + 8, i + 12) fill the 128-bit lanes of z[i]; two
// rounds of unpacks then put row r in 32-bit lane r.
Q512_INLINE void q512_tr16x4(const q512_rows *R, size_t off, __m512i T[4])
{
    if (R->packed) {
        for (int k = 0; k < 4; k++)
            T[k] = _mm512_loadu_si512(R->pk + 16 * off + 64 * k);
        return;
    }
    __m512i z[4];
    for (int i = 0; i < 4; i++) {
        const unsigned char *const *p = R->p + i;
        z[i] = _mm512_castsi128_si512(
            _mm_loadu_si128((const __m128i *)(p[0] + off)));
        z[i] = _mm512_inserti32x4(
            z[i], _mm_loadu_si128((const __m128i *)(p[4] + off)), 1);
        z[i] = _mm512_inserti32x4(
            z[i], _mm_loadu_si128((const __m128i *)(p[8] + off)), 2);
        z[i] = _mm512_inserti32x4(
            z[i], _mm_loadu_si128((const __m128i *)(p[12] + off)), 3);
    }
    __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]);
    __m512i t1 = _mm512_unpackhi_epi32(z[0], z[1]);
    __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]);
    __m512i t3 = _mm512_unpackhi_epi32(z[2], z[3]);
    T[0] = _mm512_unpacklo_epi64(t0, t2);
    T[1] = _mm512_unpackhi_epi64(t0, t2);
    T[2] = _mm512_unpacklo_epi64(t1, t3);
    T[3] = _mm512_unpackhi_epi64(t1, t3);
}

// The same for k < 8 (32 bytes a row): rows (i, i + 4) (and i + 8,
// i + 12) share z[i] (z[4 + i]) as 256-bit halves; after the unpacks
// b[k] holds dword k (low) and k + 4 (high 128-bit lane of each half) of
// rows 0-7 (b[k]) or 8-15 (b[4 + k]), and one 128-bit shuffle each puts
// the rows in order.
Q512_INLINE void q512_tr16x8(const q512_rows *R, size_t off, __m512i T[8])
{
    if (R->packed) {
        for (int k = 0; k < 8; k++)
            T[k] = _mm512_loadu_si512(R->pk + 16 * off + 64 * k);
        return;
    }
    __m512i z[8], a[8], b[8];
    for (int i = 0; i < 8; i++) {
        int r = (i & 3) + (i >> 2) * 8;
        z[i] = _mm512_inserti64x4(
            _mm512_castsi256_si512(
                _mm256_loadu_si256((const __m256i *)(R->p[r] + off))),
            _mm256_loadu_si256((const __m256i *)(R->p[r + 4] + off)), 1);
    }
    for (int h = 0; h < 8; h += 4) {
        a[h + 0] = _mm512_unpacklo_epi32(z[h + 0], z[h + 1]);
        a[h + 1] = _mm512_unpackhi_epi32(z[h + 0], z[h + 1]);
        a[h + 2] = _mm512_unpacklo_epi32(z[h + 2], z[h + 3]);
        a[h + 3] = _mm512_unpackhi_epi32(z[h + 2], z[h + 3]);
        b[h + 0] = _mm512_unpacklo_epi64(a[h + 0], a[h + 2]);
        b[h + 1] = _mm512_unpackhi_epi64(a[h + 0], a[h + 2]);
        b[h + 2] = _mm512_unpacklo_epi64(a[h + 1], a[h + 3]);
        b[h + 3] = _mm512_unpackhi_epi64(a[h + 1], a[h + 3]);
    }
    for (int k = 0; k < 4; k++) {
        T[k] = _mm512_shuffle_i32x4(b[k], b[4 + k], 0x88);
        T[k + 4] = _mm512_shuffle_i32x4(b[k], b[4 + k], 0xdd);
    }
}

// Lane r = the 4 bytes at p[r] + off: 16 scalar loads packed two to a
// 64-bit word (vector gathers are slow on Zen 4, and these loads run on
// the integer side beside the vector work).
Q512_INLINE __m512i q512_dwords(const q512_rows *R, size_t off)
{
    if (R->packed)
        return _mm512_loadu_si512(R->pk + 16 * off);
    uint64_t q[8];
    for (int i = 0; i < 8; i++) {
        uint32_t lo, hi;
        memcpy(&lo, R->p[2 * i] + off, 4);
        memcpy(&hi, R->p[2 * i + 1] + off, 4);
        q[i] = (uint64_t)lo | (uint64_t)hi << 32;
    }
    return _mm512_setr_epi64((long long)q[0], (long long)q[1],
                             (long long)q[2], (long long)q[3],
                             (long long)q[4], (long long)q[5],
                             (long long)q[6], (long long)q[7]);
}

// The fp16 in the low (high) 16 bits of each lane, as fp32 (exact).
Q512_INLINE __m512 q512_half_lo(__m512i v)
{
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

Q512_INLINE __m512 q512_half_hi(__m512i v)
{
    return q512_half_lo(_mm512_srli_epi32(v, 16));
}

// Lanes: the 16-row fp16 scale at p[r] + off (16 scalar loads).
Q512_INLINE __m512 q512_halves(const q512_rows *R, size_t off)
{
    if (R->packed)
        return _mm512_cvtph_ps(
            _mm256_loadu_si256((const __m256i *)(R->pk + 16 * off)));
    uint64_t q[4];
    for (int i = 0; i < 4; i++) {
        uint64_t v = 0;
        for (int j = 0; j < 4; j++) {
            uint16_t h;
            memcpy(&h, R->p[4 * i + j] + off, 2);
            v |= (uint64_t)h << 16 * j;
        }
        q[i] = v;
    }
    return _mm512_cvtph_ps(_mm256_setr_epi64x((long long)q[0],
                                              (long long)q[1],
                                              (long long)q[2],
                                              (long long)q[3]));
}

// The low and the high nibbles of every byte of T.
Q512_INLINE __m512i q512_lo4(__m512i t)
{
    return _mm512_and_si512(t, q512_bytes(0x0f));
}

Q512_INLINE __m512i q512_hi4(__m512i t)
{
    return _mm512_and_si512(_mm512_srli_epi32(t, 4), q512_bytes(0x0f));
}

// ---- one activation row's dot over a unit ----------------------------------

// The activation dword at p, in every lane.
Q512_INLINE __m512i q512_bcast(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

// s + sum over k < n of W[k] . q[4k..4k+3] in each lane (exact: integer).
// A tile of one activation row splits it in two chains (the latency of
// vpdpbusd), a wider one has a chain per row already (chains 1); the
// integer result is the same either way.
Q512_INLINE __m512i q512_dot(const __m512i *W, int n, const int8_t *q,
                             __m512i s, int chains)
{
    if (chains == 1) {
        for (int k = 0; k < n; k++)
            s = _mm512_dpbusd_epi32(s, W[k], q512_bcast(q + 4 * k));
        return s;
    }
    __m512i t = _mm512_setzero_si512();
    for (int k = 0; k + 1 < n; k += 2) {
        s = _mm512_dpbusd_epi32(s, W[k], q512_bcast(q + 4 * k));
        t = _mm512_dpbusd_epi32(t, W[k + 1], q512_bcast(q + 4 * k + 4));
    }
    if (n & 1)
        s = _mm512_dpbusd_epi32(s, W[n - 1], q512_bcast(q + 4 * (n - 1)));
    return _mm512_add_epi32(s, t);
}

// One block's fp32 step for 16 rows: acc + float(isum) * fl(dw * dx), one
// FMA (the step every element takes, whatever its tile).
Q512_INLINE __m512 q512_fma_block(__m512i isum, __m512 dw, float dx,
                                  __m512 acc)
{
    return _mm512_fmadd_ps(q512_cvt_ps(isum),
                           _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc);
}

// y[0..n) = acc (or y + acc) for the n real rows of the unit.
Q512_INLINE void q512_store(float *y, size_t n, int add, __m512 acc)
{
    if (n == 16) {
        if (add)
            acc = _mm512_add_ps(_mm512_loadu_ps(y), acc);
        _mm512_storeu_ps(y, acc);
    } else {
        __mmask16 mk = mhsa_mask16__avx512(n);
        if (add)
            acc = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, y), acc);
        _mm512_mask_storeu_ps(y, mk, acc);
    }
}

// ---- the loop of every product ----------------------------------------------

// name(...) (kernels/quant.h's qmm): units of 16 weight rows, and for
// each the activation rows in tiles of QA, then QA / 2, ... 1 (the
// remainders), each tile one call of
//   TILE(const q512_rows *R, size_t nb, const char *x, size_t ldx,
//        int n, __m512 acc[n])
// which leaves in acc[i] the 16 rows' dots with activation row i of x.
// TILE is always_inline and n a constant at each call, so each tile size
// is its own unrolled body; all of them run the same per-row steps.
// name16 is qmm16, the same on P16: a unit's rows one stream of whole
// vectors, the same steps in every lane, so the same bits. The units
// follow one another in memory, one stream the hardware prefetchers
// follow: no software prefetch (measured: it costs more than it brings
// on a model larger than the caches).
#define Q512_UNIT_TILES(TILE, QA)                                             \
    do {                                                                      \
        size_t j = 0;                                                         \
        for (int t = QA; t >= 1; t /= 2)                                      \
            for (; m - j >= (size_t)t; j += (size_t)t) {                      \
                __m512 acc[QA];                                               \
                const char *xj = (const char *)x + j * ldx;                   \
                switch (t) {                                                  \
                case QA: TILE(&R, nb, xj, ldx, QA, acc); break;               \
                case QA / 2 > 0 ? QA / 2 : -1:                                \
                    TILE(&R, nb, xj, ldx, QA / 2, acc); break;                \
                case QA / 4 > 0 ? QA / 4 : -2:                                \
                    TILE(&R, nb, xj, ldx, QA / 4, acc); break;                \
                case QA / 8 > 0 ? QA / 8 : -3:                                \
                    TILE(&R, nb, xj, ldx, QA / 8, acc); break;                \
                default: break;                                               \
                }                                                             \
                for (int i = 0; i < t; i++)                                   \
                    q512_store(y + (j + (size_t)i) * ldy + r0, nr, add,      \
                               acc[i]);                                       \
            }                                                                 \
    } while (0)

#define Q512_QMM(name, name16, TILE, QA)                                      \
    void name(MHSA_Q512_QMM_ARGS)                                             \
    {                                                                         \
        for (size_t r0 = 0; r0 < nw; r0 += 16) {                              \
            q512_rows R;                                                      \
            size_t nr = q512_rows_at(&R, w, ldw, r0, nw);                     \
            q512_prefetch_at(&R, w, ldw, r0 + 16, nw, nb, m <= QA);           \
            Q512_UNIT_TILES(TILE, QA);                                        \
        }                                                                     \
    }                                                                         \
    void name16(MHSA_Q512_QMM_ARGS)                                           \
    {                                                                         \
        for (size_t r0 = 0; r0 < nw; r0 += 16) {                              \
            q512_rows R;                                                      \
            size_t nr = nw - r0 < 16 ? nw - r0 : 16;                          \
            R.pk = (const unsigned char *)w + r0 * ldw;                       \
            R.packed = 1;                                                     \
            R.pf = NULL;                                                      \
            R.pf_step = 0;                                                    \
            Q512_UNIT_TILES(TILE, QA);                                        \
        }                                                                     \
    }

#endif
