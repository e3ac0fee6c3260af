// workspace.c — one allocation per workspace, carved into named views.
//
// Memory (floats), for Bm = max_batch, Tm = max_seq_len (or the max_t of
// mhsa_workspace_create_sized), D, H, Hkv kv
// heads of dh, nqkv = (H + 2 Hkv) dh, threads n:
//   qkv Bm*Tm*nqkv, q Bm*Tm*D, k/v 2*Bm*Tm*Hkv*dh, ctx and dctx 2*Bm*Tm*D,
//   lse Bm*H*Tm, decode partials, plus per-thread attention tiles (dh x
//   block sizes) and GEMM packing buffers (D x block sizes): linear in Tm,
//   never Tm x Tm.
#include <omp.h>
#include <string.h>

#include "objects.h"
#include "attn/attention.h"
#include "attn/decode.h"
#include "attn/view.h"

mhsa_status mhsa__check_ws(const char *fn, const mhsa_block *blk,
                           const mhsa_workspace *ws)
{
    if (!blk || !ws)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !blk ? "blk" : "ws");
    if (ws->blk != blk || ws->blk_id != blk->id)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: ws was created for another block", fn);
    return MHSA_OK;
}

mhsa_status mhsa__check_rows(const char *fn, const mhsa_block *blk,
                             const mhsa_workspace *ws, int B,
                             const char *t_name, int t)
{
    if (B <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: B = %d must be > 0",
                          fn, B);
    if (t <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s = %d must be > 0",
                          fn, t_name, t);
    if ((size_t)B > ws->max_batch)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: B = %d exceeds the workspace's max_batch = %zu",
                          fn, B, ws->max_batch);
    if (t > blk->cfg.max_seq_len)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: %s = %d exceeds max_seq_len = %d", fn, t_name,
                          t, blk->cfg.max_seq_len);
    // A workspace of mhsa_workspace_create_sized holds max_t rows a
    // sequence.
    if ((size_t)t > ws->max_t)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: %s = %d exceeds the workspace's max_t = %zu",
                          fn, t_name, t, ws->max_t);
    return MHSA_OK;
}

mhsa_status mhsa__workspace_rebind(mhsa_workspace *ws, const mhsa_block *blk)
{
    if (!ws || !blk || !ws->blk)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__workspace_rebind: "
                          "NULL argument");
    // Every config field sizes or shapes some view: all must agree.
    if (memcmp(&ws->blk->cfg, &blk->cfg, sizeof blk->cfg) != 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__workspace_rebind: "
                          "the block's config differs from the one the "
                          "workspace was made for");
    ws->blk = blk;
    ws->blk_id = blk->id;
    ws->has_forward = 0;   // a backward must follow a forward of this block
    return MHSA_OK;
}

// The largest need over every table this build can run, so a later
// mhsa_select_isa never finds the workspace too small.
static size_t max_over_tables(size_t n,
                              size_t (*need)(const mhsa_kernels *, size_t))
{
    size_t most = 0;
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
        const mhsa_kernels *k = mhsa_kernels_for(i);
        if (k && need(k, n) > most)
            most = need(k, n);
    }
    return most;
}

// Floats of tile memory one thread needs: the attention tiles of the
// largest table for heads of size dh, and the decode scores of a group of
// `group` query heads over one chunk. 0 on overflow.
static size_t tile_floats(size_t dh, size_t group)
{
    size_t most = max_over_tables(dh, mhsa__attn_tile_floats);
    size_t dec = mhsa__decode_tile_floats(group);
    if (!dec)
        return 0;
    return dec > most ? dec : most;
}

static size_t gemm_a_need(const mhsa_kernels *k, size_t unused)
{
    (void)unused;
    return mhsa_gemm_a_floats(k);
}

static size_t gemm_b_need(const mhsa_kernels *k, size_t n)
{
    return mhsa_gemm_b_floats(k, n);
}

// A workspace for max_batch sequences of up to max_t tokens: every view is
// sized as for a block whose max_seq_len were max_t.
static mhsa_status create(const char *fn, const mhsa_block *blk,
                          int max_batch, int max_t, mhsa_workspace **out)
{
    if (!blk || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !blk ? "blk" : "out");
    if (max_batch < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: max_batch = %d must be >= 1", fn, max_batch);
    if (max_t < 1 || max_t > blk->cfg.max_seq_len)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: max_t = %d must be in 1..max_seq_len = %d",
                          fn, max_t, blk->cfg.max_seq_len);

    size_t D = blk->D, H = blk->H, dh = blk->dh, kvd = blk->Hkv * dh;
    size_t tm = (size_t)max_t, bm = (size_t)max_batch;
    int nt = omp_get_max_threads();
    if (nt < 1)
        nt = 1;
    size_t tile = tile_floats(dh, blk->group);
    size_t ga = max_over_tables(0, gemm_a_need);
    size_t gb = max_over_tables(blk->nqkv, gemm_b_need);
    size_t dec = 0;

    // Overflow-checked total, before anything is allocated.
    size_t bt, btd, qkv = 0, total = 0;
    int ok = mhsa__mul(bm, tm, &bt) && mhsa__mul(bt, D, &btd) &&
             mhsa__mul(bt, blk->nqkv, &qkv) && gb != 0 && tile != 0 &&
             mhsa__mul_add(&total, 1, qkv) &&
             mhsa__mul_add(&total, 3, btd) &&       // q, ctx, dctx
             mhsa__mul_add(&total, 2 * bt, kvd) &&  // k, v (kvd <= D)
             mhsa__mul_add(&total, bm * H, tm) &&   // bm*H <= bm*D: no wrap
             mhsa__mul_add(&total, (size_t)nt, tile) &&
             mhsa__mul_add(&total, (size_t)nt, ga) &&
             mhsa__mul_add(&total, 1, gb) &&
             (dec = mhsa__decode_partial_floats(bm, H, tm, dh)) != 0 &&
             mhsa__mul_add(&total, 1, dec) &&
             mhsa__mul_add(&total, 1, dh) &&
             total <= SIZE_MAX / sizeof(float) - 64;
    if (!ok)
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: max_batch = %d x %s = %d x d_model = %d "
                          "overflows size_t", fn, max_batch,
                          max_t == blk->cfg.max_seq_len ? "max_seq_len"
                                                         : "max_t",
                          max_t, blk->cfg.d_model);

    size_t plan_n = mhsa__plan_entries(bm);
    mhsa_workspace *ws = mhsa__alloc(sizeof *ws);
    float *mem = ws ? mhsa__alloc(total * sizeof(float)) : NULL;
    size_t *plan = mem ? mhsa__alloc(plan_n * sizeof(size_t)) : NULL;
    attn_seq *seqs = plan ? mhsa__alloc(bm * sizeof *seqs) : NULL;
    if (!seqs) {
        mhsa__free(plan);
        mhsa__free(mem);
        mhsa__free(ws);
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: cannot allocate %zu bytes for max_batch = %d",
                          fn, total * sizeof(float), max_batch);
    }
    ws->blk = blk;
    ws->blk_id = blk->id;
    ws->max_batch = bm;
    ws->max_t = tm;
    ws->max_threads = nt;
    ws->bytes = total * sizeof(float) + plan_n * sizeof(size_t) +
                bm * sizeof *seqs + sizeof *ws;
    float *p = mem;
    ws->qkv = p;   p += qkv;
    ws->qkv_floats = qkv;
    ws->q = p;     p += btd;
    ws->k = p;     p += bt * kvd;
    ws->v = p;     p += bt * kvd;
    ws->ctx = p;   p += btd;
    ws->dctx = p;  p += btd;
    ws->lse = p;   p += bm * H * tm;
    ws->attn.decode = p; p += dec;
    ws->attn.tiles = p; p += (size_t)nt * tile;
    ws->attn.tile_floats = tile;
    ws->attn.max_threads = nt;
    ws->attn.plan = plan;
    ws->attn.seqs = seqs;
    ws->attn.pack = ws->qkv;
    ws->attn.pack_floats = qkv;
    ws->row = p;   p += dh;
    ws->gemm.a = p; p += (size_t)nt * ga;
    ws->gemm.b = p;
    ws->gemm.b_floats = gb;
    ws->gemm.max_threads = nt;
    *out = ws;
    return MHSA_OK;
}

mhsa_status mhsa_workspace_create(const mhsa_block *blk, int max_batch,
                                  mhsa_workspace **out)
{
    return create("mhsa_workspace_create", blk, max_batch,
                  blk ? blk->cfg.max_seq_len : 1, out);
}

mhsa_status mhsa_workspace_create_sized(const mhsa_block *blk,
                                         int max_batch, int max_t,
                                         mhsa_workspace **out)
{
    return create("mhsa_workspace_create_sized", blk, max_batch, max_t, out);
}

void mhsa_workspace_destroy(mhsa_workspace *ws)
{
    if (!ws)
        return;
    mhsa__free(ws->qkv);   // the start of the one float allocation
    mhsa__free(ws->attn.plan);
    mhsa__free(ws->attn.seqs);
    mhsa__free(ws);
}

size_t mhsa_workspace_bytes(const mhsa_workspace *ws)
{
    return ws ? ws->bytes : 0;
}
