// kv_dot.c — AVX2/FMA/F16C scores of m query rows against n cached keys
// stored as fp32, F16 or BF16 (contract in kernels.h), in the decode
// streaming plan of src/kernels/kv_plan.h (blocks of 8 keys, groups of up
// to 4 query rows, the block after next prefetched); this file holds the
// register tiles.
//  - keys x query rows accumulators (8x1, 4x2, 2x3, 2x4): 8 independent
//    chains, enough to cover the FMA latency;
//  - F16 is converted by vcvtph2ps, one per 8 elements, about one per
//    cycle on Zen 3: 24 G elements/s at 3 GHz, i.e. 48 GB/s, is the
//    ceiling of F16 from any level of the memory hierarchy (BF16 and F32
//    have none below the FMA rate); BF16 by a shift, 16 at a time against
//    a copy of q split into even and odd elements.
// Bits: every (query row, key) dot product is one chain over i in steps
// of 8 plus a masked tail, reduced by mhsa_hsum_ps__avx2, exactly as
// gemv_n does it; grouping and blocking do not change it, so a row's
// result has the same bits for any m, and F32 rows give gemv_n's bits
// (test_kernel_gemv.c checks both).
#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kv_plan.h"
#include "avx2/avx2.h"
#include "avx2/vhalf.h"
#include "avx2/vmath.h"

// The horizontal sums of eight accumulators at once, each added in exactly
// mhsa_hsum_ps__avx2's order ((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7)), so
// the bits are the same; about 3 operations per sum instead of 7. Returns
// (sum a[0], ..., sum a[7]).
MHSA_AVX2_INLINE __m256 hsum8(const __m256 a[8])
{
    __m256 t[4];   // t[k] = (lo + hi of a[2k] | lo + hi of a[2k+1])
    for (int k = 0; k < 4; k++)
        t[k] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * k], a[2 * k + 1],
                                                    0x20),
                             _mm256_permute2f128_ps(a[2 * k], a[2 * k + 1],
                                                    0x31));
    // (t0 + t2, t1 + t3) of a[0], a[2] | a[1], a[3]; then of a[4..7]
    __m256 u0 = _mm256_add_ps(_mm256_shuffle_ps(t[0], t[1], 0x44),
                              _mm256_shuffle_ps(t[0], t[1], 0xee));
    __m256 u1 = _mm256_add_ps(_mm256_shuffle_ps(t[2], t[3], 0x44),
                              _mm256_shuffle_ps(t[2], t[3], 0xee));
    // (u0 + u1) of a[0], a[2], a[4], a[6] | a[1], a[3], a[5], a[7]
    __m256 r = _mm256_add_ps(_mm256_shuffle_ps(u0, u1, 0x88),
                             _mm256_shuffle_ps(u0, u1, 0xdd));
    return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6,
                                                         3, 7));
}

// Row jb (< 8) of a tile: two bases 4 rows apart and the offsets 0, 1, 2
// and 3 rows, so that eight rows need four registers (base + index*scale
// addressing) instead of eight pointers, which would spill.
MHSA_AVX2_INLINE const char *tile_row(const char *k0, const char *k4,
                                      size_t r1, size_t r3, size_t jb)
{
    const char *base = jb < 4 ? k0 : k4;
    switch (jb & 3) {
    case 0: return base;
    case 1: return base + r1;
    case 2: return base + 2 * r1;
    default: return base + r3;
    }
}

// s[r*lds + jb] = q_r . K_{jb} for jb < JB keys (rows of k, row_bytes apart)
// and r < RB query rows: JB*RB chains, the i sum in gemv_n's order. TAIL
// (d % 8 != 0) is a constant too: without it the accumulators stay in
// registers up to the reduction. SPLIT (BF16 only): q holds each 16
// elements as their 8 even then 8 odd ones (split_q), and K is read 16
// at a time, its even and odd values one integer operation each, as in
// acc_tile_bf16; the last d % 16 elements go the usual way.
MHSA_AVX2_INLINE void dot_tile(size_t JB, size_t RB, int TAIL, int SPLIT,
                               size_t d, const float *q, size_t ldq,
                               const char *k, size_t row_bytes,
                               mhsa_dtype dt, float *s, size_t lds)
{
    __m256 acc[8][4];
    for (size_t jb = 0; jb < JB; jb++)
        for (size_t rb = 0; rb < RB; rb++)
            acc[jb][rb] = _mm256_setzero_ps();
    size_t d8 = d & ~(size_t)7, r1 = row_bytes, r3 = 3 * row_bytes, i = 0;
    const char *k4 = k + 4 * row_bytes;
    if (SPLIT) {
        const __m256i top = _mm256_set1_epi32((int)0xffff0000u);
        for (; i + 16 <= d; i += 16) {
            __m256 qe[4], qo[4];
            for (size_t rb = 0; rb < RB; rb++) {
                qe[rb] = _mm256_loadu_ps(q + rb * ldq + i);
                qo[rb] = _mm256_loadu_ps(q + rb * ldq + i + 8);
            }
            for (size_t jb = 0; jb < JB; jb++) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(
                    tile_row(k, k4, r1, r3, jb) + 2 * i));
                __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
                __m256 o = _mm256_castsi256_ps(_mm256_and_si256(x, top));
                for (size_t rb = 0; rb < RB; rb++) {
                    acc[jb][rb] = _mm256_fmadd_ps(e, qe[rb], acc[jb][rb]);
                    acc[jb][rb] = _mm256_fmadd_ps(o, qo[rb], acc[jb][rb]);
                }
            }
        }
    }
    for (; i < d8; i += 8) {
        __m256 qv[4];
        for (size_t rb = 0; rb < RB; rb++)
            qv[rb] = _mm256_loadu_ps(q + rb * ldq + i);
        for (size_t jb = 0; jb < JB; jb++) {
            __m256 kv = mhsa_load8_as_ps__avx2(tile_row(k, k4, r1, r3, jb),
                                               i, dt);
            for (size_t rb = 0; rb < RB; rb++)
                acc[jb][rb] = _mm256_fmadd_ps(kv, qv[rb], acc[jb][rb]);
        }
    }
    if (TAIL && d8 < d) {
        __m256i mk = mhsa_tail_mask__avx2(d - d8);
        __m256 qv[4];
        for (size_t rb = 0; rb < RB; rb++)
            qv[rb] = _mm256_maskload_ps(q + rb * ldq + d8, mk);
        for (size_t jb = 0; jb < JB; jb++) {
            __m256 kv = mhsa_load_tail_as_ps__avx2(k + jb * row_bytes, d8,
                                                   d - d8, mk, dt);
            for (size_t rb = 0; rb < RB; rb++)
                acc[jb][rb] = _mm256_fmadd_ps(kv, qv[rb], acc[jb][rb]);
        }
    }
    if (JB * RB == 8) {
        // Query row by query row, JB consecutive keys each, stored straight
        // from the register (through memory, a store-forwarding stall).
        __m256 a[8];
        for (size_t rb = 0; rb < RB; rb++)
            for (size_t jb = 0; jb < JB; jb++)
                a[rb * JB + jb] = acc[jb][rb];
        __m256 sum = hsum8(a);
        if (JB == 8) {
            _mm256_storeu_ps(s, sum);
        } else if (JB == 4) {
            _mm_storeu_ps(s, _mm256_castps256_ps128(sum));
            _mm_storeu_ps(s + lds, _mm256_extractf128_ps(sum, 1));
        } else {   // JB == 2, RB == 4
            __m128 lo = _mm256_castps256_ps128(sum);
            __m128 hi = _mm256_extractf128_ps(sum, 1);
            _mm_storel_pi((__m64 *)s, lo);
            _mm_storeh_pi((__m64 *)(s + lds), lo);
            _mm_storel_pi((__m64 *)(s + 2 * lds), hi);
            _mm_storeh_pi((__m64 *)(s + 3 * lds), hi);
        }
        return;
    }
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t jb = 0; jb < JB; jb++)
            s[rb * lds + jb] = mhsa_hsum_ps__avx2(acc[jb][rb]);
}

// Keys [0, jn) of a block for RB query rows, JB keys at a time.
MHSA_AVX2_INLINE void dot_rows(size_t JB, size_t RB, int SPLIT, size_t jn,
                               size_t d, const float *q, size_t ldq,
                               const char *k, size_t row_bytes, mhsa_dtype dt,
                               float *s, size_t lds)
{
    size_t j = 0;
    if (d & 7) {
        for (; j + JB <= jn; j += JB)
            dot_tile(JB, RB, 1, SPLIT, d, q, ldq, k + j * row_bytes,
                     row_bytes, dt, s + j, lds);
    } else {
        for (; j + JB <= jn; j += JB)
            dot_tile(JB, RB, 0, SPLIT, d, q, ldq, k + j * row_bytes,
                     row_bytes, dt, s + j, lds);
    }
    for (; j < jn; j++)
        dot_tile(1, RB, 1, SPLIT, d, q, ldq, k + j * row_bytes, row_bytes,
                 dt, s + j, lds);
}

// The plan's group (kv_plan.h): keys x query rows accumulators 8x1, 4x2,
// 2x3 and 2x4, 8 independent chains (6 at 3 rows), enough to cover the
// FMA latency.
MHSA_AVX2_INLINE void dot_group(size_t rows, int split, size_t jn, size_t d,
                                const float *q, size_t ldq, const char *k,
                                size_t row_bytes, mhsa_dtype dt, float *s,
                                size_t lds)
{
    // keys per tile: 8, 4, 2, 2 for 1 to 4 rows
    dot_rows(8 / rows, rows, split, jn, d, q, ldq, k, row_bytes, dt, s, lds);
}

// q's rows (m of them, ld ldq) into qs (ld d): every 16 elements as their
// 8 even then 8 odd ones, the last d % 16 as they are.
static void split_q(size_t m, size_t d, const float *q, size_t ldq,
                    float *qs)
{
    for (size_t r = 0; r < m; r++) {
        const float *qr = q + r * ldq;
        float *out = qs + r * d;
        size_t i = 0;
        for (; i + 16 <= d; i += 16) {
            __m256 ev, od;
            mhsa_split_even_odd__avx2(qr + i, &ev, &od);
            _mm256_storeu_ps(out + i, ev);
            _mm256_storeu_ps(out + i + 8, od);
        }
        for (; i < d; i++)
            out[i] = qr[i];
    }
}

enum { SPLIT_Q_MAX = 2048 };   // floats of split q on the stack (8 KiB)

void mhsa_kv_dot__avx2(size_t m, size_t n, size_t d, const float *q,
                       size_t ldq, const void *k, size_t ldk, mhsa_dtype dt,
                       float *s, size_t lds)
{
    switch (dt) {
    case MHSA_F16:
        mhsa_kv_dot_plan(dot_group, 0, m, n, d, q, ldq, k, ldk, MHSA_F16, s,
                         lds);
        return;
    case MHSA_BF16:
        // BF16 is read 16 at a time against a split copy of q, as many
        // query rows at a time as the stack buffer holds (all of a GQA
        // group for head sizes up to 512/m); rows longer than the buffer
        // take the 8-wide path. Which method a row gets depends on d only,
        // never on m, so its bits do not either.
        if (d >= 16 && d <= SPLIT_Q_MAX) {
            float qs[SPLIT_Q_MAX];
            size_t mc = SPLIT_Q_MAX / d;
            for (size_t r = 0; r < m; r += mc) {
                size_t rn = m - r < mc ? m - r : mc;
                split_q(rn, d, q + r * ldq, ldq, qs);
                mhsa_kv_dot_plan(dot_group, 1, rn, n, d, qs, d, k, ldk,
                                 MHSA_BF16, s + r * lds, lds);
            }
        } else {
            mhsa_kv_dot_plan(dot_group, 0, m, n, d, q, ldq, k, ldk, MHSA_BF16, s,
                             lds);
        }
        return;
    case MHSA_F32:
        break;
    }
    mhsa_kv_dot_plan(dot_group, 0, m, n, d, q, ldq, k, ldk, MHSA_F32, s, lds);
}
