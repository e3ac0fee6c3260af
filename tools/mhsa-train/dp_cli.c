// dp_cli.c — mhsa-train's synthetic tasks on the data-parallel loop: the
// job of dp_run.c for mhsa_lm (mhsa_dp_lm_bind) and mhsa_task_batch.
#include <stdio.h>
#include <string.h>

#include "dp_cli.h"
#include "dp_run.h"
#include "train_args.h"

int dp_cli_wanted(const train_args *a, const mhsa_dp_comm *c)
{
    return c->size > 1 || a->dp.grad_groups > 1 || a->dp.checkpoint ||
           a->dp.resume;
}

typedef struct task_data {
    const train_args *a;
    mhsa_dp_binding *model;
    int32_t *tok, *tgt;
} task_data;

static mhsa_status next_batch(void *ctx, uint64_t *rng)
{
    task_data *t = ctx;
    const train_args *a = t->a;
    mhsa_status st = mhsa_task_batch(a->task, rng, a->batch, a->seq_len,
                                     a->vocab, t->tok, t->tgt);
    if (st == MHSA_OK)
        mhsa_dp_set_batch(t->model, t->tok, t->tgt, a->batch, a->seq_len);
    return st;
}

int dp_cli_train(const train_args *a, mhsa_dp_comm *c, mhsa_lm *lm,
                 int32_t *tok, int32_t *tgt, uint64_t data_state,
                 float *losses, dp_cli_result *res)
{
    mhsa_dp_binding *ad;
    mhsa_dp_model m;
    memset(res, 0, sizeof *res);
    if (mhsa_dp_lm_bind(lm, &m, &ad) != MHSA_OK) {
        fprintf(stderr, "mhsa-train: %s\n", mhsa_last_error());
        return CLI_FAIL;
    }
    task_data td = { a, ad, tok, tgt };
    // What must match for a resumed run to see the same batches and compute
    // the same attention (the shapes of the tensors are checked on load).
    dp_run_ident id[4] = {
        { "mhsa.task", "--task", "" }, { "mhsa.batch", "--batch", "" },
        { "mhsa.seq_len", "--seq-len", "" },
        { "mhsa.attention", "--kv-heads/--rope/--window", "" },
    };
    snprintf(id[0].value, sizeof id[0].value, "%s", mhsa_task_name(a->task));
    snprintf(id[1].value, sizeof id[1].value, "%d", a->batch);
    snprintf(id[2].value, sizeof id[2].value, "%d", a->seq_len);
    snprintf(id[3].value, sizeof id[3].value, "kv_heads=%d rope=%d/%.9g/%d "
             "window=%d", a->kv_heads, a->rope_dim, (double)a->rope_theta,
             a->rope_interleaved, a->window);
    char what[160];
    snprintf(what, sizeof what, "task %s, H=%d D=%d T=%d V=%d, %zu "
             "parameters, batch %d, %s lr %g", mhsa_task_name(a->task),
             a->heads, a->d_model, a->seq_len, a->vocab,
             mhsa_lm_n_params(lm), a->batch,
             a->optim == MHSA_OPTIM_SGD ? "sgd" : "adamw", (double)a->lr);

    dp_run_job j;
    memset(&j, 0, sizeof j);
    j.comm = c;
    j.opt = &a->dp;
    j.model = &m;
    j.kind = a->optim;
    j.next_batch = next_batch;
    j.ctx = &td;
    j.rng = data_state;
    j.cfg = mhsa_optim_defaults(a->optim);
    j.cfg.lr = a->lr;
    j.cfg.weight_decay = a->weight_decay;
    j.cfg.clip_norm = a->clip;
    j.total_steps = (int64_t)a->epochs * a->steps;
    j.epochs = a->epochs;
    j.steps_per_epoch = a->steps;
    j.tokens_per_step = (double)a->batch * a->seq_len;
    j.ident = id;
    j.n_ident = 4;
    j.what = what;
    j.losses = losses;
    int rc = dp_run(&j, res);
    mhsa_dp_unbind(ad);
    return rc;
}
