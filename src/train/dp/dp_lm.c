// dp_lm.c — mhsa_lm as a dp_model (dp_lm.h).
#include <string.h>

#include "dp_lm.h"
#include "core/status.h"
#include "train/train_internal.h"

// Group g of the batch: its rows, with the loss averaged over the whole
// batch's counted positions so that the G groups add up to the batch.
// With G = 1 the count is the batch's own: exactly mhsa_lm_forward.
static mhsa_status group_grad(void *ctx, int g, int G, float *loss)
{
    dp_lm *a = ctx;
    const dp_batch *b = &a->batch;
    int rows;
    size_t at;
    mhsa_status st = dp_batch_group(b, g, G, "dp_lm", &rows, &at);
    // A batch with no counted position: 0 keeps the model's own rule (loss
    // 0, no gradient) instead of asking for a count of 0.
    if (st == MHSA_OK)
        st = mhsa__lm_forward_over(a->lm, b->tokens + at, b->targets + at,
                                   rows, b->T, b->count, loss, NULL);
    return st == MHSA_OK ? mhsa_lm_backward(a->lm) : st;
}

mhsa_status dp_lm_bind(dp_lm *a, mhsa_lm *lm, dp_model *m)
{
    if (!a || !lm || !m)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "dp_lm_bind: %s is NULL",
                          !a ? "a" : !lm ? "lm" : "m");
    int nt = mhsa_lm_n_tensors(lm);
    if (nt > DP_LM_MAX_TENSORS)
        return mhsa__fail(MHSA_ERR_STATE, "dp_lm_bind: %d tensors", nt);
    a->lm = lm;
    float *param, *grad;
    mhsa__lm_flat(lm, &param, &grad);
    for (int i = 0; i < nt; i++) {
        mhsa_lm_tensor t;
        mhsa_lm_get_tensor(lm, i, &t);
        dp_tensor *x = &a->tensors[i];
        x->name = t.name;
        x->ndim = t.rank;
        x->dims[0] = (size_t)t.shape[0];
        x->dims[1] = t.rank == 2 ? (size_t)t.shape[1] : 1;
        x->offset = (size_t)(t.data - param);
        x->numel = t.numel;
        x->decay = t.rank == 2;   // mhsa_lm_step decays exactly these
    }
    // norm_lanes 1: mhsa_lm_step's one running sum
    dp_model_set(m, param, grad, mhsa_lm_n_params(lm), a->tensors, nt,
                 group_grad, a, 1);
    return MHSA_OK;
}

void dp_lm_set_batch(dp_lm *a, const int32_t *tokens, const int32_t *targets,
                     int B, int T)
{
    dp_batch_set(&a->batch, tokens, targets, B, T);
}
