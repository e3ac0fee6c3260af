// gpt_cached.c — generation with the KV cache: a prefill of several tokens
// or one decoding step, through mhsa_forward_cached in every layer.
//
// The layers are the training forward's own steps (gpt.c) on the n new
// rows; only the attention differs (it reads the cached keys and values of
// the earlier positions), and the positions start at the cache's length.
// With one row the linear layers use the table's gemv_n (linear.c), or
// gemv_n16 over a 16-bit model's rows.
#include <string.h>

#include "core/fpenv.h"
#include "core/threads.h"
#include "gemm/gemv_share.h"
#include "gpt_internal.h"
#include "nn/kv_layers.h"

struct mhsa_gpt_cache {
    const mhsa_gpt *g;
    mhsa_kv_cache **kv;    // (L): one per layer, batch 1
    int capacity, len;
};

void mhsa_gpt_cache_destroy(mhsa_gpt_cache *c)
{
    if (!c)
        return;
    mhsa__kv_layers_destroy(c->kv, c->g->L);
    mhsa__free(c);
}

static const mhsa_block *layer_block(const void *g, size_t l)
{
    return ((const mhsa_gpt *)g)->blk[l];
}

mhsa_status mhsa_gpt_cache_create(const mhsa_gpt *g, int capacity,
                                  mhsa_gpt_cache **out)
{
    if (!g || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_cache_create: %s "
                          "is NULL", !g ? "g" : "out");
    if (capacity < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_cache_create: "
                          "capacity = %d (need >= 1)", capacity);
    if (capacity > g->cfg.block_size)
        return mhsa__fail(MHSA_ERR_SHAPE, "mhsa_gpt_cache_create: capacity "
                          "= %d > block_size = %d", capacity,
                          g->cfg.block_size);
    mhsa_gpt_cache *c = mhsa__alloc(sizeof *c);
    if (!c)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_gpt_cache_create: no "
                          "memory");
    c->g = g;
    c->capacity = capacity;
    mhsa_kv_config kc = { 1, capacity, MHSA_F32 };
    mhsa_status st = mhsa__kv_layers_create("mhsa_gpt_cache_create", g->L,
                                            &kc, layer_block, g, &c->kv);
    if (st != MHSA_OK) {
        mhsa__free(c);
        return st;
    }
    *out = c;
    return MHSA_OK;
}

void mhsa_gpt_cache_reset(mhsa_gpt_cache *c)
{
    if (!c)
        return;
    mhsa__kv_layers_reset(c->kv, c->g->L);
    c->len = 0;
}

int mhsa_gpt_cache_len(const mhsa_gpt_cache *c) { return c ? c->len : 0; }

// ---- one row's MLP in one parallel region ----------------------------------

typedef struct mlp_row {
    const mhsa_gpt *g;
    const gpt_layer_off *o;
    gpt_layer_acts *a;
    float *x_next;
} mlp_row;

// fch = c_fc(ln2) and its GELU on this thread's rows of F, then (after
// the barrier: c_proj reads all of them) x_next = xmid + c_proj(gelu) on
// its rows of D: the steps of mhsa__gpt_layer_post, each row's arithmetic
// unchanged (the GELU is elementwise, each product row sums alone).
static void mlp_row_body(void *p)
{
    const mlp_row *c = p;
    const mhsa_gpt *g = c->g;
    gpt_layer_acts *a = c->a;
    size_t D = g->D, F = 4 * D, lo, hi;
    mhsa__gemv_share(g->k, F, D, gpt_s(g, c->o->fc_s), g->wdt,
                     gpt_p(g, c->o->fc_b), 0, a->ln2, a->fch, &lo, &hi);
    mhsa__gelu_forward_range(a->fch_gelu, a->fch, lo, hi);
#pragma omp barrier
    const float *b = gpt_p(g, c->o->mp_b);
    mhsa__gemv_my_rows(D, &lo, &hi);
    for (size_t o = lo; o < hi; o++)   // linear.c's start: add + b
        c->x_next[o] = a->xmid[o] + b[o];
    mhsa__gemv_share(g->k, D, F, gpt_s(g, c->o->mp_s), g->wdt, NULL, 1,
                     a->fch_gelu, c->x_next, &lo, &hi);
}

// mhsa__gpt_layer_post for one row (a decoding step, fp32 compute): the
// residual and the second norm on the calling thread, the MLP's two
// products in one region (one wake-up of the pool, not two), by the
// library's work rule over both products.
static void layer_post_row(mhsa_gpt *g, size_t l, float *x_next)
{
    gpt_layer_acts *a = &g->la[l];
    const gpt_layer_off *o = &g->lo[l];
    size_t D = g->D;
    for (size_t i = 0; i < D; i++)
        a->xmid[i] = a->x[i] + a->att[i];
    mhsa__layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->xmid,
                            gpt_p(g, o->ln2_w), gpt_p(g, o->ln2_b), 1, D);
    mlp_row c = { g, o, a, x_next };
    int nt = mhsa__threads(g->gs.max_threads, 16.0 * (double)D * (double)D,
                           (D + 63) / 64);
    mhsa__team_run(nt, mlp_row_body, &c);
}

static mhsa_status gpt_forward_cached(mhsa_gpt *g, mhsa_gpt_cache *c,
                                      const int32_t *tokens, int n,
                                      float *logits)
{
    static const char fn[] = "mhsa_gpt_forward_cached";
    if (!g || !c || !tokens || !logits)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !g ? "g" : !c ? "c" : !tokens ? "tokens"
                          : "logits");
    if (c->g != g)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: the cache belongs to "
                          "another model", fn);
    if (n < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: n = %d (need >= 1)",
                          fn, n);
    if (n > c->capacity - c->len)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: %d cached + %d new tokens > "
                          "capacity %d", fn, c->len, n, c->capacity);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= g->cfg.vocab)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: tokens[%d] = %d is "
                              "outside [0, %d)", fn, i, (int)tokens[i],
                              g->cfg.vocab);
    g->have_forward = 0;   // the buffers are reused below
    size_t N = (size_t)n, D = g->D;
    // The blocks (and a 16-bit model's store) take the parameters at a
    // sequence's first call only: the cached keys and values belong to
    // those weights anyway, and copying and repacking 4 D^2 floats per
    // layer would double a decoding step.
    if (c->len == 0) {
        mhsa__gpt_sync_weights(g);
        for (size_t l = 0; l < g->L; l++) {
            mhsa_status st = mhsa__gpt_sync_block(g, l);
            if (st != MHSA_OK)
                return st;
        }
    }
    // x (N, D) = wte[token] + wpe[len + i]
    float *x = g->la[0].x;
    mhsa__embed_forward(g->k, x, tokens, gpt_s(g, g->wte_s),
                        g->cfg.rope_dim ? NULL : gpt_s(g, g->wpe_s), g->wdt,
                        N, N, (size_t)c->len, D);
    for (size_t l = 0; l < g->L; l++) {
        gpt_layer_acts *a = &g->la[l];
        mhsa__gpt_layer_pre(g, l, N);
        // Cannot fail on shapes (checked above) once layer 0 has run, so
        // the caches stay in step with each other.
        mhsa_status st = mhsa_forward_cached(g->blk[l], g->ws[l], c->kv[l],
                                             a->ln1, 1, n, a->att);
        if (st != MHSA_OK)
            return st;
        float *x_next = l + 1 < g->L ? g->la[l + 1].x : g->x_out;
        if (N == 1 && g->cdt == MHSA_F32)
            layer_post_row(g, l, x_next);
        else
            mhsa__gpt_layer_post(g, l, N, x_next, 0);
    }
    // Only the last position's logits are wanted.
    mhsa__gpt_head(g, g->x_out + (N - 1) * D, 1);
    memcpy(logits, g->logits, g->V * sizeof(float));
    c->len += n;
    return MHSA_OK;
}

mhsa_status mhsa_gpt_forward_cached(mhsa_gpt *g, mhsa_gpt_cache *c,
                                    const int32_t *tokens, int n,
                                    float *logits)
{
    MHSA__FP_RETURN(gpt_forward_cached(g, c, tokens, n, logits));
}
