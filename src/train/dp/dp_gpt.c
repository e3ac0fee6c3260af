// dp_gpt.c — mhsa_gpt as a mhsa_dp_model (mhsa_dp_gpt_bind, mhsa_train.h).
#include <string.h>

#include "dp.h"
#include "core/status.h"
#include "core/alloc.h"

// Rows of a group, with the loss divided by the whole batch's counted
// positions. With G = 1 the normaliser is the batch's own count, which is
// what mhsa_gpt_forward divides by when given none: the same bits. No
// counted position at all: 0 keeps the model's own rule (loss 0, no
// gradient).
static mhsa_status rows_grad(void *model, const int32_t *tokens,
                             const int32_t *targets, int rows, int T,
                             size_t count, float *loss)
{
    mhsa_status st = mhsa_gpt_forward(model, tokens, targets, rows, T,
                                      (double)count, loss);
    return st == MHSA_OK ? mhsa_gpt_backward(model) : st;
}

mhsa_status mhsa_dp_gpt_bind(mhsa_dp_gpt *a, mhsa_gpt *g, mhsa_dp_model *m)
{
    if (!a || !g || !m)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_gpt_bind: %s is NULL",
                          !a ? "a" : !g ? "g" : "m");
    if (!mhsa_gpt_grads(g))
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "mhsa_dp_gpt_bind: the model "
                          "has a 16-bit weight_dtype and does not train");
    memset(a, 0, sizeof *a);
    int nt = mhsa_gpt_n_tensors(g);
    a->tensors = mhsa__alloc((size_t)nt * sizeof *a->tensors);
    if (!a->tensors)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_dp_gpt_bind: out of "
                          "memory");
    a->g = g;
    for (int i = 0; i < nt; i++) {
        mhsa_gpt_tensor t;
        mhsa_gpt_get_tensor(g, i, &t);   // cannot fail: i < nt
        mhsa_dp_tensor *x = &a->tensors[i];
        x->name = t.name;
        x->ndim = t.rank;
        x->dims[0] = (size_t)t.shape[0];
        x->dims[1] = t.rank == 2 ? (size_t)t.shape[1] : 1;
        x->offset = t.offset;
        x->numel = t.numel;
        x->decay = t.decay;   // mhsa_gpt_step decays exactly these
    }
    // norm_lanes 8: mhsa_gpt_step's eight interleaved lanes
    mhsa__dp_model_set(m, mhsa_gpt_params(g), mhsa_gpt_grads(g),
                       mhsa_gpt_n_params(g), a->tensors, nt, 8, &a->batch, g,
                       "mhsa_dp_gpt", rows_grad);
    return MHSA_OK;
}

void mhsa_dp_gpt_unbind(mhsa_dp_gpt *a)
{
    if (!a)
        return;
    mhsa__free(a->tensors);
    a->tensors = NULL;
}

void mhsa_dp_gpt_set_batch(mhsa_dp_gpt *a, const int32_t *tokens,
                           const int32_t *targets, int B, int T)
{
    mhsa__dp_batch_set(&a->batch, tokens, targets, B, T);
}
