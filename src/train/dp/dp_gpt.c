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
    if (G < 1 || a->B % G != 0 || k < 0 || k >= G)
        return mhsa__fail(MHSA_ERR_SHAPE, "dp_gpt: group %d of %d of a "
                          "batch of %d rows (the groups must divide the "
                          "batch)", k, G, a->B);
    int rows = a->B / G;
    size_t at = (size_t)k * (size_t)rows * (size_t)a->T;
    // No counted position at all: 0 keeps the model's own rule (loss 0,
    // no gradient).
    mhsa_status st = mhsa_gpt_forward(a->g, a->tokens + at, a->targets + at,
                                      rows, a->T, (double)a->count, loss);
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
    memset(m, 0, sizeof *m);
    m->norm_lanes = 8;   // mhsa_gpt_step's eight interleaved lanes
    m->param = mhsa_gpt_params(g);
    m->grad = mhsa_gpt_grads(g);
    m->n_params = mhsa_gpt_n_params(g);
    m->tensors = a->tensors;
    m->n_tensors = nt;
    m->group_grad = group_grad;
    m->ctx = a;
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
    a->tokens = tokens;
    a->targets = targets;
    a->B = B;
    a->T = T;
    size_t n = (size_t)B * (size_t)T, c = 0;
    for (size_t i = 0; i < n; i++)
        c += targets[i] >= 0;
    a->count = c;
}
