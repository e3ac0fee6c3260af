// kv.c — AVX2/FMA/F16C decode products over cached K/V rows stored as
// fp32, F16 or BF16 (contracts in kernels.h): kv_dot (scores of m query
// rows against n keys) and kv_acc (m output rows += p V).
//
// Decoding one token reads the whole cache once and does one FMA per
// element per query row, so these run at the speed of memory (DRAM for
// long contexts); what matters is that every K/V byte is read once, as a
// stream, converted in registers (vcvtph2ps for F16, a zero-extend and a
// shift for BF16), while enough independent FMA chains keep the few
// operations per byte off the critical path:
//  - the n rows are taken in blocks (8 keys for kv_dot, 32 rows for
//    kv_acc) small enough to stay in L1; within a block all m query rows
//    are served, up to 4 at a time, so a block comes from memory once
//    whatever m is (a GQA group of query heads shares its kv head's rows);
//  - kv_dot holds keys x query rows accumulators (8x1, 4x2, 2x3, 2x4),
//    kv_acc holds query rows x column vectors (1x8, 2x4, 3x3, 4x2): 8 to
//    9 independent chains, enough to cover the FMA latency;
//  - kv_dot reads 8 rows side by side, which the hardware prefetchers
//    follow poorly from DRAM: it prefetches the block after next (+20%
//    from DRAM on Zen 3, no change from L3). kv_acc with 1 or 2 rows per
//    group reads whole lines in order and is left to the hardware
//    (prefetching cost a fifth of its speed from L3); with 3 or 4 its
//    narrow tiles read a block in many passes, and it prefetches the next
//    16-row block (+50% from memory at m = 4);
//  - F16 costs one vcvtph2ps per 8 elements, about one per cycle on Zen 3:
//    24 G elements/s at 3 GHz, i.e. 48 GB/s, is the ceiling of F16 from
//    any level of the memory hierarchy (BF16 and F32 have none below the
//    FMA rate).
// Bits: every (query row, key) dot product of kv_dot is one chain over i in
// steps of 8 plus a masked tail, reduced by mhsa_hsum_ps__avx2, exactly as
// gemv_n does it; every output element of kv_acc is one FMA chain over j in
// order from its old value, as in gemv_t. How rows are grouped or blocked
// changes neither, so a row's result has the same bits for any m, and F32
// rows give gemv_n / gemv_t's bits (test_kernel_gemv.c checks both).
#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vhalf.h"
#include "avx2/vmath.h"

enum {
    DOT_BLOCK = 8,     // keys per block of kv_dot
    ACC_BLOCK = 32,    // rows per block of kv_acc (8 KiB of F16 at d 128)
    // kv_acc with 3 or more rows per group: narrow tiles, so each block is
    // read in many passes; smaller blocks, the next one prefetched
    ACC_BLOCK_NARROW = 16,
};

// Prefetches rows [j0, j1) (row_bytes apart, `bytes` used per row) into
// L1, one 64-byte line per instruction: the rows of a block lie back to
// back when the cache row holds just the d elements used (its layout), so
// that is one plain loop; otherwise each row's used bytes.
MHSA_AVX2_INLINE void prefetch_rows(const char *base, size_t row_bytes,
                                    size_t bytes, size_t j0, size_t j1)
{
    if (row_bytes == bytes) {
        const char *p = base + j0 * row_bytes, *e = base + j1 * row_bytes;
        for (; p + 256 <= e; p += 256) {   // unrolled: the loop cost 9%
            _mm_prefetch(p, _MM_HINT_T0);
            _mm_prefetch(p + 64, _MM_HINT_T0);
            _mm_prefetch(p + 128, _MM_HINT_T0);
            _mm_prefetch(p + 192, _MM_HINT_T0);
        }
        for (; p < e; p += 64)
            _mm_prefetch(p, _MM_HINT_T0);
        return;
    }
    for (size_t j = j0; j < j1; j++)
        for (const char *p = base + j * row_bytes,
                        *e = base + j * row_bytes + bytes; p < e; p += 64)
            _mm_prefetch(p, _MM_HINT_T0);
}

// The even and odd elements of x[0..16) as two vectors, and back. BF16
// rows read 16 at a time come apart that way: the even values are the
// 32-bit lanes shifted up, the odd ones the lanes masked.
MHSA_AVX2_INLINE void split_even_odd(const float *x, __m256 *ev, __m256 *od)
{
    __m256 a = _mm256_loadu_ps(x), b = _mm256_loadu_ps(x + 8);
    *ev = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    *od = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
}

MHSA_AVX2_INLINE void merge_even_odd(float *x, __m256 ev, __m256 od)
{
    __m256 lo = _mm256_unpacklo_ps(ev, od), hi = _mm256_unpackhi_ps(ev, od);
    _mm256_storeu_ps(x, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(x + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

// ---- kv_dot ---------------------------------------------------------------

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

MHSA_AVX2_INLINE void kv_dot_blocks(int SPLIT, size_t m, size_t n, size_t d,
                                    const float *q, size_t ldq,
                                    const char *k, size_t ldk, mhsa_dtype dt,
                                    float *s, size_t lds)
{
    size_t es = dt == MHSA_F32 ? 4 : 2, row_bytes = ldk * es;
    for (size_t j = 0; j < n; j += DOT_BLOCK) {
        size_t jn = n - j < DOT_BLOCK ? n - j : DOT_BLOCK;
        // The block after next: a block takes ~100 ns at DRAM speed.
        size_t pf = j + 2 * DOT_BLOCK;
        if (pf < n)
            prefetch_rows(k, row_bytes, d * es, pf,
                          pf + DOT_BLOCK < n ? pf + DOT_BLOCK : n);
        const char *kb = k + j * row_bytes;
        size_t r = 0;
        for (; r + 4 <= m; r += 4)
            dot_rows(2, 4, SPLIT, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,
                     s + r * lds + j, lds);
        switch (m - r) {
        case 3:
            dot_rows(2, 3, SPLIT, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,
                     s + r * lds + j, lds);
            break;
        case 2:
            dot_rows(4, 2, SPLIT, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,
                     s + r * lds + j, lds);
            break;
        case 1:
            dot_rows(8, 1, SPLIT, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,
                     s + r * lds + j, lds);
            break;
        default:
            break;
        }
    }
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
            split_even_odd(qr + i, &ev, &od);
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
        kv_dot_blocks(0, m, n, d, q, ldq, k, ldk, MHSA_F16, s, lds);
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
                kv_dot_blocks(1, rn, n, d, qs, d, k, ldk, MHSA_BF16,
                              s + r * lds, lds);
            }
        } else {
            kv_dot_blocks(0, m, n, d, q, ldq, k, ldk, MHSA_BF16, s, lds);
        }
        return;
    case MHSA_F32:
        break;
    }
    kv_dot_blocks(0, m, n, d, q, ldq, k, ldk, MHSA_F32, s, lds);
}

// ---- kv_acc ---------------------------------------------------------------

// o[r*ldo + i + 8*v] += sum_j p[r*ldp + j] * V[j][i + 8*v] for r < RB,
// v < NV, j < jn: RB*NV chains, each over j in order.
MHSA_AVX2_INLINE void acc_tile(size_t RB, size_t NV, size_t jn,
                               const float *p, size_t ldp, const char *v,
                               size_t row_bytes, size_t i, mhsa_dtype dt,
                               float *o, size_t ldo)
{
    __m256 acc[4][8];
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t nv = 0; nv < NV; nv++)
            acc[rb][nv] = _mm256_loadu_ps(o + rb * ldo + i + 8 * nv);
    // Column i of row 0: the NV loads of a row are then at constant offsets.
    const char *vi = v + i * (dt == MHSA_F32 ? 4 : 2);
    for (size_t j = 0; j < jn; j++) {
        const char *row = vi + j * row_bytes;
        __m256 pb[4];
        for (size_t rb = 0; rb < RB; rb++)
            pb[rb] = _mm256_broadcast_ss(p + rb * ldp + j);
        for (size_t nv = 0; nv < NV; nv++) {
            __m256 x = mhsa_load8_as_ps__avx2(row, 8 * nv, dt);
            for (size_t rb = 0; rb < RB; rb++)
                acc[rb][nv] = _mm256_fmadd_ps(pb[rb], x, acc[rb][nv]);
        }
    }
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t nv = 0; nv < NV; nv++)
            _mm256_storeu_ps(o + rb * ldo + i + 8 * nv, acc[rb][nv]);
}

// BF16 rows 16 columns at a time: one 256-bit load holds 16 values, and
// the even ones shifted up and the odd ones masked are two fp32 vectors,
// one integer operation each (instead of a widening load and a shift per
// 8). The accumulators hold o's even and odd columns, split when loaded and
// merged when stored; each element's chain is the FMA sequence acc_tile
// gives it, so the bits are the same.
MHSA_AVX2_INLINE void acc_tile_bf16(size_t RB, size_t NP, size_t jn,
                                    const float *p, size_t ldp,
                                    const char *v, size_t row_bytes,
                                    size_t i, float *o, size_t ldo)
{
    __m256 ev[4][4], od[4][4];
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t np = 0; np < NP; np++)
            split_even_odd(o + rb * ldo + i + 16 * np, &ev[rb][np],
                           &od[rb][np]);
    const __m256i top = _mm256_set1_epi32((int)0xffff0000u);
    const char *vi = v + i * 2;
    for (size_t j = 0; j < jn; j++) {
        const char *row = vi + j * row_bytes;
        __m256 pb[4];
        for (size_t rb = 0; rb < RB; rb++)
            pb[rb] = _mm256_broadcast_ss(p + rb * ldp + j);
        for (size_t np = 0; np < NP; np++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(row + 32 * np));
            __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
            __m256 d = _mm256_castsi256_ps(_mm256_and_si256(x, top));
            for (size_t rb = 0; rb < RB; rb++) {
                ev[rb][np] = _mm256_fmadd_ps(pb[rb], e, ev[rb][np]);
                od[rb][np] = _mm256_fmadd_ps(pb[rb], d, od[rb][np]);
            }
        }
    }
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t np = 0; np < NP; np++)
            merge_even_odd(o + rb * ldo + i + 16 * np, ev[rb][np],
                           od[rb][np]);
}

// The last t < 8 columns from i: masked loads and stores of o.
MHSA_AVX2_INLINE void acc_tail(size_t RB, size_t jn, const float *p,
                               size_t ldp, const char *v, size_t row_bytes,
                               size_t i, size_t t, mhsa_dtype dt, float *o,
                               size_t ldo)
{
    __m256i mk = mhsa_tail_mask__avx2(t);
    __m256 acc[4];
    for (size_t rb = 0; rb < RB; rb++)
        acc[rb] = _mm256_maskload_ps(o + rb * ldo + i, mk);
    for (size_t j = 0; j < jn; j++) {
        __m256 x = mhsa_load_tail_as_ps__avx2(v + j * row_bytes, i, t, mk,
                                              dt);
        for (size_t rb = 0; rb < RB; rb++)
            acc[rb] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + rb * ldp + j),
                                      x, acc[rb]);
    }
    for (size_t rb = 0; rb < RB; rb++)
        _mm256_maskstore_ps(o + rb * ldo + i, mk, acc[rb]);
}

// Rows [0, jn) of a block for RB output rows, all d columns: NV vectors
// at a time, then single vectors, then the masked tail.
MHSA_AVX2_INLINE void acc_rows(size_t RB, size_t NV, size_t jn, size_t d,
                               const float *p, size_t ldp, const char *v,
                               size_t row_bytes, mhsa_dtype dt, float *o,
                               size_t ldo)
{
    size_t i = 0;
    if (dt == MHSA_BF16) {
        // 16-column pairs, as many as the registers allow
        size_t NP = NV / 2 ? NV / 2 : 1;
        for (; i + 16 * NP <= d; i += 16 * NP)
            acc_tile_bf16(RB, NP, jn, p, ldp, v, row_bytes, i, o, ldo);
    }
    for (; i + 8 * NV <= d; i += 8 * NV)
        acc_tile(RB, NV, jn, p, ldp, v, row_bytes, i, dt, o, ldo);
    for (; i + 8 <= d; i += 8)
        acc_tile(RB, 1, jn, p, ldp, v, row_bytes, i, dt, o, ldo);
    if (i < d)
        acc_tail(RB, jn, p, ldp, v, row_bytes, i, d - i, dt, o, ldo);
}

MHSA_AVX2_INLINE void kv_acc_dt(size_t m, size_t n, size_t d, const float *p,
                                size_t ldp, const char *v, size_t ldv,
                                mhsa_dtype dt, float *o, size_t ldo)
{
    size_t es = dt == MHSA_F32 ? 4 : 2, row_bytes = ldv * es;
    // Groups of 3 or 4 rows take 16 to 24 columns per pass over a block,
    // so a block's lines arrive over many passes: there the next block is
    // prefetched (+50% from memory at m = 4); with 1 or 2 rows a pass
    // takes whole lines in order, and prefetching only costs.
    int narrow = m >= 3;
    size_t blk = narrow ? ACC_BLOCK_NARROW : ACC_BLOCK;
    for (size_t j = 0; j < n; j += blk) {
        size_t jn = n - j < blk ? n - j : blk;
        if (narrow && j + blk < n)
            prefetch_rows(v, row_bytes, d * es, j + blk,
                          j + 2 * blk < n ? j + 2 * blk : n);
        const char *vb = v + j * row_bytes;
        size_t r = 0;
        for (; r + 4 <= m; r += 4)
            acc_rows(4, 2, jn, d, p + r * ldp + j, ldp, vb, row_bytes, dt,
                     o + r * ldo, ldo);
        switch (m - r) {
        case 3:
            acc_rows(3, 3, jn, d, p + r * ldp + j, ldp, vb, row_bytes, dt,
                     o + r * ldo, ldo);
            break;
        case 2:
            acc_rows(2, 4, jn, d, p + r * ldp + j, ldp, vb, row_bytes, dt,
                     o + r * ldo, ldo);
            break;
        case 1:
            acc_rows(1, 8, jn, d, p + r * ldp + j, ldp, vb, row_bytes, dt,
                     o + r * ldo, ldo);
            break;
        default:
            break;
        }
    }
}

void mhsa_kv_acc__avx2(size_t m, size_t n, size_t d, const float *p,
                       size_t ldp, const void *v, size_t ldv, mhsa_dtype dt,
                       float *o, size_t ldo)
{
    switch (dt) {
    case MHSA_F16:
        kv_acc_dt(m, n, d, p, ldp, v, ldv, MHSA_F16, o, ldo);
        return;
    case MHSA_BF16:
        kv_acc_dt(m, n, d, p, ldp, v, ldv, MHSA_BF16, o, ldo);
        return;
    case MHSA_F32:
        break;
    }
    kv_acc_dt(m, n, d, p, ldp, v, ldv, MHSA_F32, o, ldo);
}
