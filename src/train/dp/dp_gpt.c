// dp_gpt.c — mhsa_gpt as a mhsa_dp_model (mhsa_dp_gpt_bind, mhsa_train.h).
#include "dp.h"
#include "core/status.h"

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

mhsa_status mhsa_dp_gpt_bind(mhsa_gpt *g, mhsa_dp_model *m,
                             mhsa_dp_binding **out)
{
    if (!g || !m || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_gpt_bind: %s is "
                          "NULL", !g ? "g" : !m ? "m" : "out");
    if (!mhsa_gpt_grads(g))
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "mhsa_dp_gpt_bind: the model "
                          "has a 16-bit weight_dtype and does not train");
    int nt = mhsa_gpt_n_tensors(g);
    // norm_lanes 8: mhsa_gpt_step's eight interleaved lanes
    mhsa_dp_binding *b;
    mhsa_status st = mhsa__dp_bind("mhsa_dp_gpt_bind", g, nt, rows_grad,
                                   mhsa_gpt_params(g), mhsa_gpt_grads(g),
                                   mhsa_gpt_n_params(g), 8, m, &b);
    if (st != MHSA_OK)
        return st;
    for (int i = 0; i < nt; i++) {
        mhsa_gpt_tensor t;
        mhsa_gpt_get_tensor(g, i, &t);   // cannot fail: i < nt
        mhsa_dp_tensor *x = &b->tensors[i];
        x->name = t.name;
        x->ndim = t.rank;
        x->dims[0] = (size_t)t.shape[0];
        x->dims[1] = t.rank == 2 ? (size_t)t.shape[1] : 1;
        x->offset = t.offset;
        x->numel = t.numel;
        x->decay = t.decay;   // mhsa_gpt_step decays exactly these
    }
    *out = b;
    return MHSA_OK;
}
