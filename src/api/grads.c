// grads.c — gradient buffers for a block's four weight tensors.
#include <string.h>

#include "objects.h"

mhsa_status mhsa_grads_create(const mhsa_block *blk, mhsa_grads **out)
{
    if (!blk || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_grads_create: %s is "
                          "NULL", !blk ? "blk" : "out");
    mhsa_status st = mhsa__check_weights("mhsa_grads_create", blk);
    if (st != MHSA_OK)
        return st;
    size_t D = blk->D, nqkv = blk->nqkv;   // nqkv*D fits: the block exists
    mhsa_grads_impl *g = mhsa__alloc(sizeof *g);
    if (!g)
        goto oom;
    g->D = D;
    g->nqkv = nqkv;
    g->bias = blk->cfg.bias;
    g->pub.w_qkv = mhsa__alloc(nqkv * D * sizeof(float));
    g->pub.w_out = mhsa__alloc(D * D * sizeof(float));
    if (!g->pub.w_qkv || !g->pub.w_out)
        goto oom;
    if (g->bias) {
        g->pub.b_qkv = mhsa__alloc(nqkv * sizeof(float));
        g->pub.b_out = mhsa__alloc(D * sizeof(float));
        if (!g->pub.b_qkv || !g->pub.b_out)
            goto oom;
    }
    *out = &g->pub;
    return MHSA_OK;
oom:
    mhsa_grads_destroy(g ? &g->pub : NULL);
    return mhsa__fail(MHSA_ERR_NO_MEMORY,
                      "mhsa_grads_create: out of memory for d_model = %d",
                      blk->cfg.d_model);
}

void mhsa_grads_zero(mhsa_grads *pub)
{
    if (!pub)
        return;
    mhsa_grads_impl *g = (mhsa_grads_impl *)pub;
    size_t D = g->D, nqkv = g->nqkv;
    memset(pub->w_qkv, 0, nqkv * D * sizeof(float));
    memset(pub->w_out, 0, D * D * sizeof(float));
    if (g->bias) {
        memset(pub->b_qkv, 0, nqkv * sizeof(float));
        memset(pub->b_out, 0, D * sizeof(float));
    }
}

void mhsa_grads_destroy(mhsa_grads *pub)
{
    if (!pub)
        return;
    MHSA_FREE_ALL(pub->w_qkv, pub->b_qkv, pub->w_out, pub->b_out,
                  (mhsa_grads_impl *)pub);
}
