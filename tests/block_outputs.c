// block_outputs.c — see block_outputs.h.
#include "block_outputs.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "util.h"

block_weights block_weights_make(const mhsa_config *c, rng *r)
{
    size_t D = (size_t)c->d_model, H = (size_t)c->n_heads, dh = D / H;
    size_t hkv = c->n_kv_heads ? (size_t)c->n_kv_heads : H;
    block_weights w = { (H + 2 * hkv) * dh, D, NULL, NULL, NULL, NULL };
    w.w_qkv = malloc(w.nqkv * D * 4);
    w.w_out = malloc(D * D * 4);
    w.b_qkv = malloc(w.nqkv * 4);
    w.b_out = malloc(D * 4);
    ck_assert(w.w_qkv && w.w_out && w.b_qkv && w.b_out);
    float s = 1.0f / sqrtf((float)D);
    fill_uniform(r, w.w_qkv, w.nqkv * D, -2 * s, 2 * s);
    fill_uniform(r, w.w_out, D * D, -2 * s, 2 * s);
    fill_uniform(r, w.b_qkv, w.nqkv, -0.5f, 0.5f);
    fill_uniform(r, w.b_out, D, -0.5f, 0.5f);
    return w;
}

void block_weights_free(block_weights *w)
{
    free(w->w_qkv);
    free(w->b_qkv);
    free(w->w_out);
    free(w->b_out);
}

mhsa_block *block_new(const mhsa_config *c)
{
    mhsa_block *b = NULL;
    ck_assert_msg(mhsa_block_create(c, &b) == MHSA_OK, "%s",
                  mhsa_last_error());
    return b;
}

block_outputs block_outputs_run(const mhsa_block *blk, const float *x,
                                const float *dy, int B, int T,
                                int mixed_steps, int threads)
{
    const mhsa_config *c = mhsa_block_config(blk);
    size_t D = (size_t)c->d_model, H = (size_t)c->n_heads;
    size_t hkv = c->n_kv_heads ? (size_t)c->n_kv_heads : H;
    size_t nqkv = (H + 2 * hkv) * (D / H);
    block_outputs o;
    o.ny = (size_t)B * T * D;
    o.nattn = (size_t)B * H * T * T;
    o.ngw = nqkv * D;
    o.ngb = c->bias ? nqkv : 0;
    o.ngwo = D * D;
    o.ngbo = c->bias ? D : 0;
    o.y = malloc(o.ny * 4);
    o.attn = malloc(o.nattn * 4);
    o.dx = malloc(o.ny * 4);
    o.yc = malloc(o.ny * 4);
    omp_set_num_threads(threads);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
    ck_assert_msg(mhsa_forward(blk, ws, x, B, T, NULL, o.y, o.attn) ==
                  MHSA_OK, "%s", mhsa_last_error());
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    ck_assert_msg(mhsa_backward(blk, ws, dy, o.dx, g) == MHSA_OK, "%s",
                  mhsa_last_error());
    o.gw = malloc(o.ngw * 4);
    o.gwo = malloc(o.ngwo * 4);
    o.gb = malloc((o.ngb ? o.ngb : 1) * 4);
    o.gbo = malloc((o.ngbo ? o.ngbo : 1) * 4);
    memcpy(o.gw, g->w_qkv, o.ngw * 4);
    memcpy(o.gwo, g->w_out, o.ngwo * 4);
    if (c->bias) {
        memcpy(o.gb, g->b_qkv, o.ngb * 4);
        memcpy(o.gbo, g->b_out, o.ngbo * 4);
    }
    mhsa_grads_destroy(g);
    // Cached (causal blocks): a prefill of 4 positions, then one token at
    // a time (the one-row products), y in (B, T, D).
    o.nyc = c->causal ? o.ny : 0;
    for (size_t i = 0; !c->causal && i < o.ny; i++)
        o.yc[i] = 0.0f;
    // One sequence at a time (B = 1), so a decoding step is one row.
    float *ys = malloc(o.ny * 4);
    for (int b = 0; c->causal && b < B; b++) {
        mhsa_kv_cache *kc = NULL;
        ck_assert_int_eq(mhsa_kv_cache_create(blk, 1, c->max_seq_len, &kc),
                         MHSA_OK);
        for (int t0 = 0; t0 < T;) {
            int n = t0 == 0 ? 4 : (mixed_steps && t0 < T - 3 && t0 % 2 ? 2 : 1);
            size_t off = ((size_t)b * T + t0) * D;
            ck_assert_msg(mhsa_forward_cached(blk, ws, kc, x + off, 1, n,
                                              ys) == MHSA_OK, "%s",
                          mhsa_last_error());
            memcpy(o.yc + off, ys, (size_t)n * D * 4);
            t0 += n;
        }
        mhsa_kv_cache_destroy(kc);
    }
    free(ys);
    mhsa_workspace_destroy(ws);
    return o;
}

void block_outputs_free(block_outputs *o)
{
    free(o->y); free(o->attn); free(o->dx); free(o->gw); free(o->gb);
    free(o->gwo); free(o->gbo); free(o->yc);
}

void block_outputs_compare(const block_outputs *a, const block_outputs *b,
                           double tol, const char *what)
{
    struct { const char *name; const float *x, *y; size_t n; } parts[] = {
        { "y", a->y, b->y, a->ny },
        { "attn", a->attn, b->attn, a->nattn },
        { "dx", a->dx, b->dx, a->ny },
        { "dw_qkv", a->gw, b->gw, a->ngw },
        { "db_qkv", a->gb, b->gb, a->ngb },
        { "dw_out", a->gwo, b->gwo, a->ngwo },
        { "db_out", a->gbo, b->gbo, a->ngbo },
        { "y cached", a->yc, b->yc, a->nyc },
    };
    for (size_t p = 0; p < sizeof parts / sizeof *parts; p++) {
        if (!parts[p].n)
            continue;
        if (tol == 0.0) {
            ck_assert_msg(!memcmp(parts[p].x, parts[p].y, parts[p].n * 4),
                          "%s: %s bits differ", what, parts[p].name);
        } else {
            double e = rel_err(parts[p].x, parts[p].y, parts[p].n);
            ck_assert_msg(e <= tol, "%s: %s differs by %.3g", what,
                          parts[p].name, e);
        }
    }
}

