// kv_plan.h — the streaming plan of the decode products kv_dot and kv_acc
// (contracts in kernels.h), written once for the ISAs that build them from
// register tiles: src/avx2/kv_{dot,acc}.c and src/neon/kv_{dot,acc}.c
// instantiate it with their tiles (src/avx512/kv_{dot,acc}.c, a plan of
// their own, take its dtype switch). Every function here is static inline and
// forced inline, so it is compiled with the flags of the ISA file that
// includes it (never include it from baseline files: BUILD-NOTES, pitfalls).
//
// Decoding one token reads the whole cache once and does one FMA per
// element per query row, so these run at the speed of memory (DRAM for
// long contexts); what matters is that every K/V byte is read once, as a
// stream, converted in registers, while enough independent FMA chains
// (the ISA's tiles) keep the few operations per byte off the critical
// path. The plan:
//  - the n rows are taken in blocks (8 keys for kv_dot, 32 rows for
//    kv_acc) small enough to stay in L1; within a block all m query rows
//    are served, up to 4 at a time (a group), so a block comes from memory
//    once whatever m is (a GQA group of query heads shares its kv head's
//    rows);
//  - kv_dot reads 8 rows side by side, which the hardware prefetchers
//    follow poorly from DRAM: it prefetches the block after next (faster
//    from DRAM, no change from L3). kv_acc with 1 or 2 rows per group
//    reads whole lines in order and is left to the hardware (prefetching
//    slowed it from L3); with 3 or 4 its narrow tiles read a block in many
//    passes, and it prefetches the next 16-row block (faster from memory
//    at m = 4).
// Where those choices come from: measured with the AVX2 tiles on Zen 3
// (AMD EPYC) only (docs/performance.md, "Measurements behind the code").
// The NEON tiles follow the same plan unmeasured: no Arm hardware was at
// hand, so on AArch64 these kernels are checked for their bits under qemu,
// and their speed was never timed.
//
// Bits: the plan only chooses which rows a tile reads when; each
// (query row, key) product and each output element is one chain in the
// tile, whatever the block or group, so a row's result has the same bits
// for any m (the tiles' files say how they match gemv_n / gemv_t).
//
// The tiles an ISA passes in (forced-inline functions, so each call below
// with a constant group size and dtype becomes its own loop):
//   dot_group(rows, variant, jn, d, q, ldq, k, row_bytes, dt, s, lds):
//     s[r*lds + j] = q_r . K_j for r < rows (a constant, 1 to 4),
//     j < jn keys of a block (rows of k, row_bytes apart); variant is the
//     ISA's own (AVX2: q split for BF16), passed through;
//   acc_group(rows, jn, d, p, ldp, v, row_bytes, dt, o, ldo):
//     o[r*ldo + i] += sum_j p[r*ldp + j] * V_j[i], r < rows (1 to 4),
//     i < d, j < jn in order.
#ifndef MHSA_KV_PLAN_H
#define MHSA_KV_PLAN_H

#include <stddef.h>

#include "kernels/kernels.h"

#define MHSA_KV_PLAN_INLINE static inline __attribute__((always_inline))

enum {
    MHSA_KV_DOT_BLOCK = 8,     // keys per block of kv_dot
    MHSA_KV_ACC_BLOCK = 32,    // rows per block of kv_acc (8 KiB of F16 at
                               // d 128)
    // kv_acc with 3 or more rows per group: narrow tiles, so each block is
    // read in many passes; smaller blocks, the next one prefetched
    MHSA_KV_ACC_BLOCK_NARROW = 16,
};

typedef void mhsa_kv_dot_group_fn(size_t rows, int variant, size_t jn,
                                  size_t d, const float *q, size_t ldq,
                                  const char *k, size_t row_bytes,
                                  mhsa_dtype dt, float *s, size_t lds);
typedef void mhsa_kv_acc_group_fn(size_t rows, size_t jn, size_t d,
                                  const float *p, size_t ldp, const char *v,
                                  size_t row_bytes, mhsa_dtype dt, float *o,
                                  size_t ldo);

// The body of a void function: CALL(t) with t the one of MHSA_F16,
// MHSA_BF16 and MHSA_F32 that dt is (any other value: MHSA_F32), a
// constant in each call, so that each call compiles to loops for that
// storage type alone; then returns.
#define MHSA_KV_BY_DTYPE(dt, CALL)                                            \
    switch (dt) {                                                             \
    case MHSA_F16:                                                            \
        CALL(MHSA_F16);                                                       \
        return;                                                               \
    case MHSA_BF16:                                                           \
        CALL(MHSA_BF16);                                                      \
        return;                                                               \
    case MHSA_F32:                                                            \
        break;                                                                \
    }                                                                         \
    CALL(MHSA_F32)

// GROUP(g) over the m query rows from r: groups of g = 4
// rows, then the last m % 4 as one group, each size a constant of its own
// call (GROUP reads r as the group's first row).
#define MHSA_KV_GROUPS(r, m, GROUP)                                           \
    do {                                                                      \
        for (; (r) + 4 <= (m); (r) += 4)                                      \
            GROUP(4);                                                         \
        switch ((m) - (r)) {                                                  \
        case 3:                                                               \
            GROUP(3);                                                         \
            break;                                                            \
        case 2:                                                               \
            GROUP(2);                                                         \
            break;                                                            \
        case 1:                                                               \
            GROUP(1);                                                         \
            break;                                                            \
        default:                                                              \
            break;                                                            \
        }                                                                     \
    } while (0)

// Prefetches rows [j0, j1) (row_bytes apart, `bytes` used per row) into
// L1, one 64-byte line per instruction: the rows of a block lie back to
// back when the cache row holds just the d elements used (its layout), so
// that is one plain loop; otherwise each row's used bytes.
MHSA_KV_PLAN_INLINE void mhsa_kv_prefetch_rows(const char *base,
                                               size_t row_bytes,
                                               size_t bytes, size_t j0,
                                               size_t j1)
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

// kv_dot over all n keys of a K cache stored as dt (a constant).
MHSA_KV_PLAN_INLINE void mhsa_kv_dot_plan(mhsa_kv_dot_group_fn *group,
                                          int variant, size_t m, size_t n,
                                          size_t d, const float *q,
                                          size_t ldq, const char *k,
                                          size_t ldk, mhsa_dtype dt,
                                          float *s, size_t lds)
{
    size_t es = mhsa_dtype_size(dt), row_bytes = ldk * es;
    for (size_t j = 0; j < n; j += MHSA_KV_DOT_BLOCK) {
        size_t jn = n - j < MHSA_KV_DOT_BLOCK ? n - j : MHSA_KV_DOT_BLOCK;
        // The block after next: a block takes ~100 ns at DRAM speed.
        size_t pf = j + 2 * MHSA_KV_DOT_BLOCK;
        if (pf < n)
            mhsa_kv_prefetch_rows(k, row_bytes, d * es, pf,
                                  pf + MHSA_KV_DOT_BLOCK < n
                                      ? pf + MHSA_KV_DOT_BLOCK : n);
        const char *kb = k + j * row_bytes;
        size_t r = 0;
#define DOT_GROUP(g)                                                          \
    group(g, variant, jn, d, q + r * ldq, ldq, kb, row_bytes, dt,            \
          s + r * lds + j, lds)
        MHSA_KV_GROUPS(r, m, DOT_GROUP);
#undef DOT_GROUP
    }
}

// kv_acc over all n rows of a V cache stored as dt (a constant).
MHSA_KV_PLAN_INLINE void mhsa_kv_acc_plan(mhsa_kv_acc_group_fn *group,
                                          size_t m, size_t n, size_t d,
                                          const float *p, size_t ldp,
                                          const char *v, size_t ldv,
                                          mhsa_dtype dt, float *o,
                                          size_t ldo)
{
    size_t es = mhsa_dtype_size(dt), row_bytes = ldv * es;
    // Groups of 3 or 4 rows take 16 to 24 columns per pass over a block,
    // so a block's lines arrive over many passes: there the next block is
    // prefetched; with 1 or 2 rows a pass takes whole lines in order, and
    // prefetching only costs.
    int narrow = m >= 3;
    size_t blk = narrow ? MHSA_KV_ACC_BLOCK_NARROW : MHSA_KV_ACC_BLOCK;
    for (size_t j = 0; j < n; j += blk) {
        size_t jn = n - j < blk ? n - j : blk;
        if (narrow && j + blk < n)
            mhsa_kv_prefetch_rows(v, row_bytes, d * es, j + blk,
                                  j + 2 * blk < n ? j + 2 * blk : n);
        const char *vb = v + j * row_bytes;
        size_t r = 0;
#define ACC_GROUP(g)                                                          \
    group(g, jn, d, p + r * ldp + j, ldp, vb, row_bytes, dt, o + r * ldo,    \
          ldo)
        MHSA_KV_GROUPS(r, m, ACC_GROUP);
#undef ACC_GROUP
    }
}

// The kernels' entry points: one plan per dtype, each with dt a constant.
MHSA_KV_PLAN_INLINE void mhsa_kv_dot_plan_dt(mhsa_kv_dot_group_fn *group,
                                             size_t m, size_t n, size_t d,
                                             const float *q, size_t ldq,
                                             const void *k, size_t ldk,
                                             mhsa_dtype dt, float *s,
                                             size_t lds)
{
#define DOT_PLAN(t)                                                           \
    mhsa_kv_dot_plan(group, 0, m, n, d, q, ldq, k, ldk, t, s, lds)
    MHSA_KV_BY_DTYPE(dt, DOT_PLAN);
#undef DOT_PLAN
}

MHSA_KV_PLAN_INLINE void mhsa_kv_acc_plan_dt(mhsa_kv_acc_group_fn *group,
                                             size_t m, size_t n, size_t d,
                                             const float *p, size_t ldp,
                                             const void *v, size_t ldv,
                                             mhsa_dtype dt, float *o,
                                             size_t ldo)
{
#define ACC_PLAN(t)                                                           \
    mhsa_kv_acc_plan(group, m, n, d, p, ldp, v, ldv, t, o, ldo)
    MHSA_KV_BY_DTYPE(dt, ACC_PLAN);
#undef ACC_PLAN
}

#endif
