// dp_gpt.c — mhsa_gpt as a dp_model (dp_gpt.h).
#include <string.h>

#include "dp_gpt.h"
#include "core/status.h"
#include "core/alloc.h"

// Group k of the batch: its rows, with the loss divided by the whole
// batch's counted positions so that the G groups' gradients add up to the
// batch's. With G = 1 the normaliser is the batch's own count, which is
// what mhsa_gpt_forward divides by when given none: the same bits.
static mhsa_status group_grad(void *ctx, int k, int G, float *loss)
{
    dp_gpt *a = ctx;
    const dp_batch *b = &a->batch;
    int rows;
    size_t at;
    mhsa_status st = dp_batch_group(b, k, G, "dp_gpt", &rows, &at);
    // No counted position at all: 0 keeps the model's own rule (loss 0,
    // no gradient).
    if (st == MHSA_OK)
        st = mhsa_gpt_forward(a->g, b->tokens + at, b->targets + at, rows,
                              b->T, (double)b->count, loss);
    return st == MHSA_OK ? mhsa_gpt_backward(a->g) : st;
}

mhsa_status dp_gpt_bind(dp_gpt *a, mhsa_gpt *g, dp_model *m)
{
    if (!a || !g || !m)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "dp_gpt_bind: %s is NULL",
                          !a ? "a" : !g ? "g" : "m");
    if (!mhsa_gpt_grads(g))
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "dp_gpt_bind: the model "
                          "has a 16-bit weight_dtype and does not train");
    memset(a, 0, sizeof *a);
    int nt = mhsa_gpt_n_tensors(g);
    a->tensors = mhsa__alloc((size_t)nt * sizeof *a->tensors);
    if (!a->tensors)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "dp_gpt_bind: out of memory");
    a->g = g;
    for (int i = 0; i < nt; i++) {
        mhsa_gpt_tensor t;
        mhsa_gpt_get_tensor(g, i, &t);   // cannot fail: i < nt
        dp_tensor *x = &a->tensors[i];
        x->name = t.name;
        x->ndim = t.rank;
        x->dims[0] = (size_t)t.shape[0];
        x->dims[1] = t.rank == 2 ? (size_t)t.shape[1] : 1;
        x->offset = t.offset;
        x->numel = t.numel;
        x->decay = t.decay;   // mhsa_gpt_step decays exactly these
    }
    // norm_lanes 8: mhsa_gpt_step's eight interleaved lanes
    dp_model_set(m, mhsa_gpt_params(g), mhsa_gpt_grads(g),
                 mhsa_gpt_n_params(g), a->tensors, nt, group_grad, a, 8);
    return MHSA_OK;
}

void dp_gpt_unbind(dp_gpt *a)
{
    if (!a)
        return;
    mhsa__free(a->tensors);
    a->tensors = NULL;
}

void dp_gpt_set_batch(dp_gpt *a, const int32_t *tokens,
                      const int32_t *targets, int B, int T)
{
    dp_batch_set(&a->batch, tokens, targets, B, T);
}
