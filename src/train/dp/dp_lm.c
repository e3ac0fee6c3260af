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
    if (G < 1 || a->B % G != 0 || g < 0 || g >= G)
        return mhsa__fail(MHSA_ERR_SHAPE, "dp_lm: group %d of %d of a batch "
                          "of %d rows (the groups must divide the batch)",
                          g, G, a->B);
    int rows = a->B / G;
    size_t at = (size_t)g * (size_t)rows * (size_t)a->T;
    // A batch with no counted position: 0 keeps the model's own rule (loss
    // 0, no gradient) instead of asking for a count of 0.
    mhsa_status st = mhsa__lm_forward_over(a->lm, a->tokens + at,
                                           a->targets + at, rows, a->T,
                                           a->count, loss, NULL);
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
    memset(m, 0, sizeof *m);
    m->norm_lanes = 1;   // mhsa_lm_step's one running sum
    m->param = param;
    m->grad = grad;
    m->n_params = mhsa_lm_n_params(lm);
    m->tensors = a->tensors;
    m->n_tensors = nt;
    m->group_grad = group_grad;
    m->ctx = a;
    return MHSA_OK;
}

void dp_lm_set_batch(dp_lm *a, const int32_t *tokens, const int32_t *targets,
                     int B, int T)
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
