// kv_acc.c — AVX2/FMA/F16C: m output rows += p V over n cached rows
// stored as fp32, F16 or BF16 (contract in kernels.h), in the decode
// streaming plan of src/kernels/kv_plan.h (blocks of 32 rows, or 16 with
// the next one prefetched for groups of 3 or 4); this file holds the
// register tiles.
//  - query rows x column vectors (1x8, 2x4, 3x3, 4x2): 8 to 9 independent
//    chains, enough to cover the FMA latency;
//  - F16 is converted by vcvtph2ps, BF16 16 at a time by one integer
//    operation each for the even and the odd values.
// Bits: every output element is one FMA chain over j in order from its
// old value, as in gemv_t; grouping and blocking do not change it, so a
// row's result has the same bits for any m, and F32 rows give gemv_t's
// bits (test_kernel_gemv.c checks both).
#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kv_plan.h"
#include "avx2/avx2.h"
#include "avx2/vhalf.h"
#include "avx2/vmath.h"

// pb[rb] = p[rb*ldp + j] in every lane, rb < RB: the weights of row j
// for the tiles' RB output rows.
MHSA_AVX2_INLINE void broadcast_p(size_t RB, const float *p, size_t ldp,
                                  size_t j, __m256 pb[4])
{
    for (size_t rb = 0; rb < RB; rb++)
        pb[rb] = _mm256_broadcast_ss(p + rb * ldp + j);
}

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
        broadcast_p(RB, p, ldp, j, pb);
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
            mhsa_split_even_odd__avx2(o + rb * ldo + i + 16 * np, &ev[rb][np],
                           &od[rb][np]);
    const __m256i top = _mm256_set1_epi32((int)0xffff0000u);
    const char *vi = v + i * 2;
    for (size_t j = 0; j < jn; j++) {
        const char *row = vi + j * row_bytes;
        __m256 pb[4];
        broadcast_p(RB, p, ldp, j, pb);
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
            mhsa_merge_even_odd__avx2(o + rb * ldo + i + 16 * np, ev[rb][np],
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

// The plan's group (kv_plan.h): query rows x column vectors 1x8, 2x4, 3x3
// and 4x2, 8 to 9 independent chains, enough to cover the FMA latency.
MHSA_AVX2_INLINE void acc_group(size_t rows, size_t jn, size_t d,
                                const float *p, size_t ldp, const char *v,
                                size_t row_bytes, mhsa_dtype dt, float *o,
                                size_t ldo)
{
    // column vectors per tile: 8, 4, 3, 2 for 1 to 4 rows
    size_t nv = rows == 1 ? 8 : rows == 2 ? 4 : rows == 3 ? 3 : 2;
    acc_rows(rows, nv, jn, d, p, ldp, v, row_bytes, dt, o, ldo);
}

void mhsa_kv_acc__avx2(size_t m, size_t n, size_t d, const float *p,
                       size_t ldp, const void *v, size_t ldv, mhsa_dtype dt,
                       float *o, size_t ldo)
{
    mhsa_kv_acc_plan_dt(acc_group, m, n, d, p, ldp, v, ldv, dt, o, ldo);
}
