// tiles.h — what one attention block is and the tile memory it works in:
// the block's arguments (head_args), its query and key tile sizes, the
// views carved from a thread's tile memory, and the backward's per-row
// pieces. The floor of attn/: the tiled path (attention.c) and the small
// fused paths (small_view.c, small_bwd.c) both stand on it, so neither
// reaches into the other for a size or a view.
#ifndef MHSA_ATTN_TILES_H
#define MHSA_ATTN_TILES_H

#include <stddef.h>

#include "kernels/kernels.h"

// One query block of rows [r0, r0 + tq) of one (b, h) head against keys
// [0, tk). Pointers are already offset to the head (and q, o, lse, dq, do_,
// attn to row r0), k and v to the head's kv head (grouped-query attention).
// Strides in elements. Which keys a row sees: the rules of mhsa_mask_view
// (causal, window, klen, mask) with q0 = q_pos; tiles no row sees are
// skipped.
typedef struct head_args {
    size_t tq, tk, dh;
    size_t q_pos;             // absolute position of query row 0
    int causal;
    size_t window;            // 0, or a sliding window of W keys
    size_t klen;              // 0, or keys >= klen are padding (blocked)
    const float *mask;        // additive (tq, ldmask) at (r0, key 0), or NULL
    size_t ldmask;
    float scale;              // 1/sqrt(dh), already folded into q
    const float *q;           // (tq, dh), row stride dh, pre-scaled
    // 0, or q, k and v are read in place in the QKV projection's rows,
    // ldqkv apart, and q is not scaled yet (attn_job.ldqkv): only the
    // fused small view (small_view.c) takes such a block.
    size_t ldqkv;
    // (tk, dh), row stride dh: fp32 (k, v), or in the KV cache's 16-bit
    // type (k16, v16, forward only), converted tile by tile.
    const float *k, *v;
    const void *k16, *v16;
    mhsa_dtype kv_dtype;
    float *o;  size_t ldo;    // (tq, dh) context out (merged layout row)
    float *lse;               // (tq) log-sum-exp out / in (backward)
    // forward, or NULL: lse gets each row's max and lsum its sum instead,
    // log-sum-exp = lse + log(lsum) (attn_job.lsum)
    float *lsum;
    float *attn; size_t ldattn;  // (tq, tk) weights out, or NULL
    // forward only: the head's K^T and V tiles packed once by
    // mhsa__head_pack_kv for all its query blocks, or NULL (packed per
    // block into the tile memory)
    const float *kpack, *vpack;
    // with them: per key tile, the first key (from the tile's start) whose
    // V row holds a non-finite value, or more than the tile's keys if none,
    // and the same for K rows
    const float *vbad, *kbad;
    // backward only
    const float *dout; size_t lddo;  // (tq, dh) dL/dO
    float *dq, *dk, *dv; size_t ldg; // rows of dqkv: dq (tq), dk/dv (tk)
    // backward only, to split one head over threads (all 0: everything):
    // leave dq or dk/dv alone, and only visit the key tiles that start in
    // [key0, key1) (key1 == 0: no upper bound; key0 a multiple of bc).
    int skip_dq, skip_dkv;
    size_t key0, key1;
    // backward only: dq's rows are +0 already (a one-thread backward
    // zeroes all of dqkv at once), so the block does not zero them.
    int dq_zeroed;
    // The whole call's q, k, v (and in the backward dout) were checked
    // finite at once (one thread, fp32 K/V of this call only), so the
    // block does not check its own rows.
    int inputs_finite;
    // mhsa_config.compute_dtype: MHSA_BF16 rounds every tile product's
    // packed operands (Q, K, V, P, dO, dS) to bf16 (gemm.h's tile
    // helpers); scores, softmax statistics and outputs stay fp32.
    mhsa_dtype compute;
} head_args;

// Keys [0, result) of the tile at key j0 (n keys) that some row of
// [0, row_end) can see: all n without the causal mask, else up to the last
// of those rows' positions. (Padding is cut by key_end, the window's lower
// edge left to the softmax.) Inline here because the tiled backward
// (attention.c) and the small tile's (small_bwd.c) must agree on it.
static inline size_t mhsa__attn_panel_keys(const head_args *a, size_t j0,
                                           size_t n, size_t row_end)
{
    if (!a->causal)
        return n;
    size_t last = a->q_pos + row_end;   // one past the last visible key
    if (last <= j0)
        return 0;
    return last - j0 < n ? last - j0 : n;
}

// Measured (bench attention/fused, dh = 64, AVX2): 72 x 128 beats 48 x 64
// at T = 512 and 2048 (docs/performance.md, "Measurements behind the
// code"): each K/V tile packed per query block is reused by more rows, and
// the online rescale of O runs half as often. The tiles (Q 18 KiB, K^T and
// V 32 KiB each, S 36 KiB) stay in L2.
enum { BR_ROWS = 72, BC_KEYS = 128 };

// x rounded up to a multiple of `to`, a tile size. The tables' tiles are
// 4x8 (scalar), 6x16 (AVX2), 12x32 (AVX-512) and 8x12 (NEON): for these
// each case divides by a constant, which the compiler makes a multiply.
// These run for every block (carve's ~7, br and bc), and a division by a
// run-time size takes tens of cycles: ~10 of them were a measurable part
// of a tiny backward, whose blocks are short (docs/performance.md,
// "Measurements behind the code").
static inline size_t mhsa__attn_up(size_t x, size_t to)
{
#define UP_CASE(c)                                                            \
    case c:                                                                   \
        return (x + (c) - 1) / (c) * (c)
    switch (to) {
    UP_CASE(4);
    UP_CASE(6);
    UP_CASE(8);
    UP_CASE(12);
    UP_CASE(16);
    UP_CASE(32);
    default:
        return (x + to - 1) / to * to;
    }
#undef UP_CASE
}

static inline size_t mhsa__attn_br(const mhsa_kernels *k)
{
    return mhsa__attn_up(BR_ROWS, (size_t)k->mr);
}

static inline size_t mhsa__attn_bc(const mhsa_kernels *k)
{
    return mhsa__attn_up(BC_KEYS, (size_t)k->nr);
}

// The views one thread carves from its tile memory.
typedef struct tile_views {
    float *qa;    // Q block as A       (br x dh)
    float *da;    // dO block as A      (br x dh)
    float *qb;    // Q block as B       (br x dh)
    float *db;    // dO block as B      (br x dh)
    float *kb;    // K tile as B        (K^T: dh x bc, or K: bc x dh)
    float *vb;    // V tile as B        (V: bc x dh, or V^T: dh x bc)
    float *pa;    // P / dS (or transposed) as A (max(br, bc) x max(br, bc))
    float *s;     // scores / P         (br x bc)
    float *dp;    // dP / dS            (br x bc)
    float *m, *l, *delta;   // (br); forward: delta flags non-finite q rows
    float *infw;  // (br) backward: weight of a +inf score, see kernels.h
    float *kc, *vc;   // K and V tile rows converted from 16-bit (bc x dh)
} tile_views;

// Sizes of the views, in the order mhsa__attn_carve lays them out.
enum { N_VIEWS = 15 };
static inline void mhsa__attn_view_sizes(const mhsa_kernels *k, size_t dh,
                                         size_t sz[N_VIEWS])
{
    size_t br = mhsa__attn_br(k), bc = mhsa__attn_bc(k);
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    size_t qa = mhsa__attn_up(br, mr) * dh, qb = mhsa__attn_up(dh, nr) * br;
    size_t kt = mhsa__attn_up(bc, nr) * dh, kn = mhsa__attn_up(dh, nr) * bc;
    size_t big = br > bc ? br : bc;
    size_t i = 0;
    sz[i++] = qa;                  // qa
    sz[i++] = qa;                  // da
    sz[i++] = qb;                  // qb
    sz[i++] = qb;                  // db
    sz[i++] = kt > kn ? kt : kn;   // kb
    sz[i++] = kt > kn ? kt : kn;   // vb
    sz[i++] = mhsa__attn_up(big, mr) * big;   // pa
    sz[i++] = br * bc;             // s
    sz[i++] = br * bc;             // dp
    sz[i++] = br;                  // m
    sz[i++] = br;                  // l
    sz[i++] = br;                  // delta
    sz[i++] = br;                  // infw
    sz[i++] = bc * dh;             // kc
    sz[i++] = bc * dh;             // vc
}

static inline tile_views mhsa__attn_carve(const mhsa_kernels *k, size_t dh,
                                          float *t)
{
    size_t sz[N_VIEWS];
    mhsa__attn_view_sizes(k, dh, sz);
    tile_views v;
    float **order[N_VIEWS] = { &v.qa, &v.da, &v.qb, &v.db, &v.kb, &v.vb,
                               &v.pa, &v.s, &v.dp, &v.m, &v.l, &v.delta,
                               &v.infw, &v.kc, &v.vc };
    for (int i = 0; i < N_VIEWS; i++) {
        *order[i] = t;
        t += sz[i];
    }
    return v;
}

// Tile floats one thread needs for heads of size dh.
size_t mhsa__attn_tile_floats(const mhsa_kernels *k, size_t dh);
// The backward's score, dP and delta rows (bc wide, bc wide, tq) in a
// thread's tile memory: the views the tiled path carves, for the small
// backward's three calls (small_bwd.c), which carve only when they run.
void mhsa__attn_bwd_rows(const mhsa_kernels *k, size_t dh, float *tiles,
                         float **s, float **dp, float **delta);
// delta[r] = rowsum(dO * O) over the block's rows: the softmax gradient's
// term, each row's products summed in order from +0 (plain C, one rounding
// per product and per sum; the fused small kernels give the same per lane).
void mhsa__attn_deltas(const head_args *a, float *delta);

#endif
