// dp_lm.c — mhsa_lm as a mhsa_dp_model (mhsa_dp_lm_bind, mhsa_train.h).
#include "dp.h"
#include "core/status.h"
#include "train/train_internal.h"

// Rows of a group, with the loss averaged over the whole batch's counted
// positions. With G = 1 the count is the batch's own: exactly
// mhsa_lm_forward. A batch with no counted position: 0 keeps the model's
// own rule (loss 0, no gradient) instead of asking for a count of 0.
static mhsa_status rows_grad(void *model, const int32_t *tokens,
                             const int32_t *targets, int rows, int T,
                             size_t count, float *loss)
{
    mhsa_status st = mhsa__lm_forward_over(model, tokens, targets, rows, T,
                                           count, loss, NULL);
    return st == MHSA_OK ? mhsa_lm_backward(model) : st;
}

mhsa_status mhsa_dp_lm_bind(mhsa_lm *lm, mhsa_dp_model *m,
                            mhsa_dp_binding **out)
{
    if (!lm || !m || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_lm_bind: %s is NULL",
                          !lm ? "lm" : !m ? "m" : "out");
    int nt = mhsa_lm_n_tensors(lm);
    float *param, *grad;
    mhsa__lm_flat(lm, &param, &grad);
    // norm_lanes 1: mhsa_lm_step's one running sum
    mhsa_dp_binding *b;
    mhsa_status st = mhsa__dp_bind("mhsa_dp_lm_bind", lm, nt, rows_grad,
                                   param, grad, mhsa_lm_n_params(lm), 1, m,
                                   &b);
    if (st != MHSA_OK)
        return st;
    for (int i = 0; i < nt; i++) {
        mhsa_lm_tensor t;
        mhsa_lm_get_tensor(lm, i, &t);
        mhsa_dp_tensor *x = &b->tensors[i];
        x->name = t.name;
        x->ndim = t.rank;
        x->dims[0] = (size_t)t.shape[0];
        x->dims[1] = t.rank == 2 ? (size_t)t.shape[1] : 1;
        x->offset = (size_t)(t.data - param);
        x->numel = t.numel;
        x->decay = t.rank == 2;   // mhsa_lm_step decays exactly these
    }
    *out = b;
    return MHSA_OK;
}
