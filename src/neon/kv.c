// kv.c — NEON decode products over cached K/V rows stored as fp32, F16 or
// BF16 (contracts in kernels.h): kv_dot (scores of m query rows against n
// keys) and kv_acc (m output rows += p V).
//
// Same plan as src/avx2/kv.c: decoding one token streams the whole cache
// once with one FMA per element per query row, so the kernels are built
// for memory bandwidth: rows in blocks small enough for L1 (8 keys for
// kv_dot, 32 rows for kv_acc), every query row of the group served from
// the block while it is in L1 (up to 4 at a time, so a GQA group reads its
// kv head once), F16 converted by FCVTL and BF16 by a widening shift in
// registers, and 8 to 16 independent FMA chains (AArch64 has 32 vector
// registers). As on x86, kv_dot (8 rows side by side) prefetches the block
// after next, and kv_acc prefetches its next block only for groups of 3 or
// 4 rows (narrow tiles, many passes per block); those choices were measured
// on Zen 3 only (no Arm hardware here: these kernels are checked under
// qemu, not timed).
// Bits: every (query row, key) dot product of kv_dot is one 4-lane chain
// over i in steps of 4, reduced by FADDP (vaddvq_f32), then the d % 4 last
// elements added one by one (multiply, then add: no contraction), exactly
// as gemv_n; every output element of kv_acc is one chain over j in order
// from its old value, fused for the columns below d & ~3 and a multiply and
// an add for the last d % 4, as in gemv_t. Grouping and blocking change
// neither, so a row's result has the same bits for any m, and F32 rows give
// gemv_n / gemv_t's bits (test_kernel_gemv.c checks both).
#include <arm_neon.h>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "neon/neon.h"
#include "neon/vhalf.h"

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
MHSA_NEON_INLINE void prefetch_rows(const char *base, size_t row_bytes,
                                    size_t bytes, size_t j0, size_t j1)
{
    if (row_bytes == bytes) {
        const char *p = base + j0 * row_bytes, *e = base + j1 * row_bytes;
        for (; p + 256 <= e; p += 256) {   // unrolled: the loop cost 9%
            __builtin_prefetch(p, 0, 3);
            __builtin_prefetch(p + 64, 0, 3);
            __builtin_prefetch(p + 128, 0, 3);
            __builtin_prefetch(p + 192, 0, 3);
        }
        for (; p < e; p += 64)
            __builtin_prefetch(p, 0, 3);
        return;
    }
    for (size_t j = j0; j < j1; j++)
        for (const char *p = base + j * row_bytes,
                        *e = base + j * row_bytes + bytes; p < e; p += 64)
            __builtin_prefetch(p, 0, 3);
}

// ---- kv_dot ---------------------------------------------------------------

// s[r*lds + jb] = q_r . K_{jb} for jb < JB keys and r < RB query rows.
MHSA_NEON_INLINE void dot_tile(size_t JB, size_t RB, size_t d,
                               const float *q, size_t ldq, const char *k,
                               size_t row_bytes, mhsa_dtype dt, float *s,
                               size_t lds)
{
    float32x4_t acc[8][4];
    for (size_t jb = 0; jb < JB; jb++)
        for (size_t rb = 0; rb < RB; rb++)
            acc[jb][rb] = vdupq_n_f32(0.0f);
    size_t d4 = d & ~(size_t)3, i = 0;
    for (; i + 8 <= d4; i += 8) {
        float32x4_t q0[4], q1[4];
        for (size_t rb = 0; rb < RB; rb++) {
            q0[rb] = vld1q_f32(q + rb * ldq + i);
            q1[rb] = vld1q_f32(q + rb * ldq + i + 4);
        }
        for (size_t jb = 0; jb < JB; jb++) {
            float32x4_t lo, hi;
            mhsa_neon_load8_as_f32(k + jb * row_bytes, i, dt, &lo, &hi);
            for (size_t rb = 0; rb < RB; rb++) {
                acc[jb][rb] = vfmaq_f32(acc[jb][rb], lo, q0[rb]);
                acc[jb][rb] = vfmaq_f32(acc[jb][rb], hi, q1[rb]);
            }
        }
    }
    if (i < d4) {   // one block of 4 left
        float32x4_t q0[4];
        for (size_t rb = 0; rb < RB; rb++)
            q0[rb] = vld1q_f32(q + rb * ldq + i);
        for (size_t jb = 0; jb < JB; jb++) {
            float32x4_t x = mhsa_neon_load4_as_f32(k + jb * row_bytes, i, dt);
            for (size_t rb = 0; rb < RB; rb++)
                acc[jb][rb] = vfmaq_f32(acc[jb][rb], x, q0[rb]);
        }
    }
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t jb = 0; jb < JB; jb++) {
            float t = vaddvq_f32(acc[jb][rb]);
            for (size_t ii = d4; ii < d; ii++)   // scalar tail, as gemv_n
                t += mhsa_load_as_f32(k + jb * row_bytes, ii, dt)
                   * q[rb * ldq + ii];
            s[rb * lds + jb] = t;
        }
}

// Keys [0, jn) of a block for RB query rows, JB keys at a time.
MHSA_NEON_INLINE void dot_rows(size_t JB, size_t RB, size_t jn, size_t d,
                               const float *q, size_t ldq, const char *k,
                               size_t row_bytes, mhsa_dtype dt, float *s,
                               size_t lds)
{
    size_t j = 0;
    for (; j + JB <= jn; j += JB)
        dot_tile(JB, RB, d, q, ldq, k + j * row_bytes, row_bytes, dt, s + j,
                 lds);
    for (; j < jn; j++)
        dot_tile(1, RB, d, q, ldq, k + j * row_bytes, row_bytes, dt, s + j,
                 lds);
}

MHSA_NEON_INLINE void kv_dot_dt(size_t m, size_t n, size_t d, const float *q,
                                size_t ldq, const char *k, size_t ldk,
                                mhsa_dtype dt, float *s, size_t lds)
{
    size_t es = dt == MHSA_F32 ? 4 : 2, row_bytes = ldk * es;
    for (size_t j = 0; j < n; j += DOT_BLOCK) {
        size_t jn = n - j < DOT_BLOCK ? n - j : DOT_BLOCK;
        size_t pf = j + 2 * DOT_BLOCK;   // the block after next
        if (pf < n)
            prefetch_rows(k, row_bytes, d * es, pf,
                          pf + DOT_BLOCK < n ? pf + DOT_BLOCK : n);
        const char *kb = k + j * row_bytes;
        size_t r = 0;
        for (; r + 4 <= m; r += 4)
            dot_rows(4, 4, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,
                     s + r * lds + j, lds);
        switch (m - r) {
        case 3:
            dot_rows(4, 3, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,
                     s + r * lds + j, lds);
            break;
        case 2:
            dot_rows(8, 2, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,
                     s + r * lds + j, lds);
            break;
        case 1:
            dot_rows(8, 1, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,
                     s + r * lds + j, lds);
            break;
        default:
            break;
        }
    }
}

void mhsa_kv_dot__neon(size_t m, size_t n, size_t d, const float *q,
                       size_t ldq, const void *k, size_t ldk, mhsa_dtype dt,
                       float *s, size_t lds)
{
    switch (dt) {
    case MHSA_F16:
        kv_dot_dt(m, n, d, q, ldq, k, ldk, MHSA_F16, s, lds);
        return;
    case MHSA_BF16:
        kv_dot_dt(m, n, d, q, ldq, k, ldk, MHSA_BF16, s, lds);
        return;
    case MHSA_F32:
        break;
    }
    kv_dot_dt(m, n, d, q, ldq, k, ldk, MHSA_F32, s, lds);
}

// ---- kv_acc ---------------------------------------------------------------

// o[r*ldo + i + 4*v] += sum_j p[r*ldp + j] * V[j][i + 4*v] for r < RB,
// v < NV (NV even, or 1), j < jn: RB*NV fused chains, each over j in order.
MHSA_NEON_INLINE void acc_tile(size_t RB, size_t NV, size_t jn,
                               const float *p, size_t ldp, const char *v,
                               size_t row_bytes, size_t i, mhsa_dtype dt,
                               float *o, size_t ldo)
{
    float32x4_t acc[4][8];
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t nv = 0; nv < NV; nv++)
            acc[rb][nv] = vld1q_f32(o + rb * ldo + i + 4 * nv);
    for (size_t j = 0; j < jn; j++) {
        const char *row = v + j * row_bytes;
        float32x4_t pb[4];
        for (size_t rb = 0; rb < RB; rb++)
            pb[rb] = vld1q_dup_f32(p + rb * ldp + j);
        if (NV == 1) {
            float32x4_t x = mhsa_neon_load4_as_f32(row, i, dt);
            for (size_t rb = 0; rb < RB; rb++)
                acc[rb][0] = vfmaq_f32(acc[rb][0], pb[rb], x);
            continue;
        }
        for (size_t nv = 0; nv < NV; nv += 2) {
            float32x4_t lo, hi;
            mhsa_neon_load8_as_f32(row, i + 4 * nv, dt, &lo, &hi);
            for (size_t rb = 0; rb < RB; rb++) {
                acc[rb][nv] = vfmaq_f32(acc[rb][nv], pb[rb], lo);
                acc[rb][nv + 1] = vfmaq_f32(acc[rb][nv + 1], pb[rb], hi);
            }
        }
    }
    for (size_t rb = 0; rb < RB; rb++)
        for (size_t nv = 0; nv < NV; nv++)
            vst1q_f32(o + rb * ldo + i + 4 * nv, acc[rb][nv]);
}

// Rows [0, jn) of a block for RB output rows, all d columns: NV vectors at
// a time, then single vectors, then the last d % 4 columns one by one
// (multiply, then add, as gemv_t).
MHSA_NEON_INLINE void acc_rows(size_t RB, size_t NV, size_t jn, size_t d,
                               const float *p, size_t ldp, const char *v,
                               size_t row_bytes, mhsa_dtype dt, float *o,
                               size_t ldo)
{
    size_t i = 0;
    for (; i + 4 * NV <= d; i += 4 * NV)
        acc_tile(RB, NV, jn, p, ldp, v, row_bytes, i, dt, o, ldo);
    for (; i + 4 <= d; i += 4)
        acc_tile(RB, 1, jn, p, ldp, v, row_bytes, i, dt, o, ldo);
    for (; i < d; i++)
        for (size_t rb = 0; rb < RB; rb++) {
            float acc = o[rb * ldo + i];
            for (size_t j = 0; j < jn; j++)
                acc += p[rb * ldp + j]
                     * mhsa_load_as_f32(v + j * row_bytes, i, dt);
            o[rb * ldo + i] = acc;
        }
}

MHSA_NEON_INLINE void kv_acc_dt(size_t m, size_t n, size_t d, const float *p,
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
            acc_rows(4, 4, jn, d, p + r * ldp + j, ldp, vb, row_bytes, dt,
                     o + r * ldo, ldo);
        switch (m - r) {
        case 3:
            acc_rows(3, 4, jn, d, p + r * ldp + j, ldp, vb, row_bytes, dt,
                     o + r * ldo, ldo);
            break;
        case 2:
            acc_rows(2, 8, jn, d, p + r * ldp + j, ldp, vb, row_bytes, dt,
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

void mhsa_kv_acc__neon(size_t m, size_t n, size_t d, const float *p,
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
