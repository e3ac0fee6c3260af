// dp_cli.c — mhsa-train's training loop on the data-parallel trainer
// (dp_cli.h): the same data on every rank from one seed, rank 0's weights
// broadcast, checkpoints and resume, the periodic weight check, progress
// and the time each part of a step takes.
//
// Every rank draws the whole batch of every step from the same stream
// (cheap next to a step), so no data is ever sent and each group's rows
// and the batch's count of positions are known everywhere. The stream's
// state after step k is what a checkpoint at step k records, so a resumed
// run draws exactly the batches the uninterrupted one would have.
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "train/dp.h"
#include "train/dp_lm.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int dp_cli_wanted(const train_args *a, const dp_comm *c)
{
    return c->size > 1 || a->dp.grad_groups > 1 || a->dp.checkpoint ||
           a->dp.resume;
}

typedef struct loop {
    const train_args *a;
    dp_comm *c;
    dp_trainer *dp;
    int root;
    uint64_t data;   // the data stream's state
} loop;

// A failure: every rank saw it (agreed), so all return together; or only
// this rank did, and the others may be waiting in a collective, so the
// whole job ends here.
static int failed(const loop *l, const char *what, int agreed, int code)
{
    if (!agreed || l->root) {
        if (l->c->size > 1 && !agreed)
            fprintf(stderr, "mhsa-train: rank %d: %s: %s\n", l->c->rank,
                    what, mhsa_last_error());
        else
            fprintf(stderr, "mhsa-train: %s: %s\n", what, mhsa_last_error());
    }
    if (!agreed && l->c->size > 1 && l->c->ops->abort_job)
        l->c->ops->abort_job(l->c, code);
    return code;
}

// What a checkpoint records besides the trainer's own state; resume checks
// that the data would be the same (the task, batch and length).
enum { META_RNG, META_TASK, META_BATCH, META_SEQ, META_LR, META_N };
static const char *const meta_keys[META_N] = {
    "mhsa.data_rng", "mhsa.task", "mhsa.batch", "mhsa.seq_len", "mhsa.lr",
};

static int save(loop *l, const char *path)
{
    const train_args *a = l->a;
    char v[META_N][32];
    snprintf(v[META_RNG], 32, "%" PRIu64, l->data);
    snprintf(v[META_TASK], 32, "%s", mhsa_task_name(a->task));
    snprintf(v[META_BATCH], 32, "%d", a->batch);
    snprintf(v[META_SEQ], 32, "%d", a->seq_len);
    snprintf(v[META_LR], 32, "%.9g", (double)a->lr);
    mhsa_st_meta m[META_N];
    for (int i = 0; i < META_N; i++)
        m[i] = (mhsa_st_meta){ meta_keys[i], v[i] };
    if (dp_save(l->dp, path, m, META_N) != MHSA_OK)
        return failed(l, "--checkpoint", 1, CLI_FAIL);
    return CLI_OK;
}

static int resume(loop *l, const char *path)
{
    const train_args *a = l->a;
    dp_meta_value w[META_N];
    memset(w, 0, sizeof w);
    for (int i = 0; i < META_N; i++)
        w[i].key = meta_keys[i];
    if (dp_load(l->dp, path, w, META_N) != MHSA_OK)
        return failed(l, "--resume", 1, CLI_FAIL);
    char want[3][32];
    snprintf(want[0], 32, "%s", mhsa_task_name(a->task));
    snprintf(want[1], 32, "%d", a->batch);
    snprintf(want[2], 32, "%d", a->seq_len);
    static const char *const flag[3] = { "--task", "--batch", "--seq-len" };
    for (int i = 0; i < 3; i++)
        if (strcmp(w[META_TASK + i].value, want[i]) != 0) {
            if (l->root)
                fprintf(stderr, "mhsa-train: --resume %s: the checkpoint "
                        "was made with %s %s, this run has %s %s\n", path,
                        flag[i], w[META_TASK + i].present
                        ? w[META_TASK + i].value : "(none)", flag[i],
                        want[i]);
            return CLI_USAGE;
        }
    char *end;
    uint64_t s = strtoull(w[META_RNG].value, &end, 10);
    if (!w[META_RNG].present || *end) {
        if (l->root)
            fprintf(stderr, "mhsa-train: --resume %s: no data position "
                    "(mhsa.data_rng) in the checkpoint\n", path);
        return CLI_USAGE;
    }
    l->data = s;
    return CLI_OK;
}

// Every rank must run the same kernels: AVX2 and scalar round differently,
// so ranks on machines that dispatch differently would drift apart (the
// weight check would stop them later; this says why, before the first
// step). Returns CLI_OK, or CLI_USAGE on every rank.
static int same_kernels(const loop *l)
{
    dp_comm *c = l->c;
    int P = c->size;
    int32_t *isa = calloc((size_t)P, sizeof *isa);
    size_t *cnt = calloc(2 * (size_t)P, sizeof *cnt);
    int ok = isa && cnt;
    // Every rank must take part in the collective, even one out of memory.
    if (!ok) {
        fprintf(stderr, "mhsa-train: rank %d: out of memory\n", c->rank);
        if (c->ops->abort_job)
            c->ops->abort_job(c, CLI_FAIL);
        free(isa);
        free(cnt);
        return CLI_FAIL;
    }
    for (int q = 0; q < P; q++) {
        cnt[q] = sizeof *isa;
        cnt[P + q] = (size_t)q * sizeof *isa;
    }
    isa[c->rank] = (int32_t)mhsa_active_isa();
    int rc = CLI_OK;
    if (c->ops->allgatherv(c, isa, cnt, cnt + P))
        rc = failed(l, "comparing kernels", 0, CLI_FAIL);
    for (int q = 1; q < P && rc == CLI_OK; q++)
        if (isa[q] != isa[0]) {
            if (l->root)
                fprintf(stderr, "mhsa-train: rank %d runs the %s kernels, "
                        "rank 0 the %s ones, which round differently: give "
                        "every rank the same --isa\n", q,
                        mhsa_isa_name((mhsa_isa)isa[q]),
                        mhsa_isa_name((mhsa_isa)isa[0]));
            rc = CLI_USAGE;
        }
    free(isa);
    free(cnt);
    return rc;
}

static void print_stats(const loop *l, double wall, int steps)
{
    const dp_stats *s = dp_get_stats(l->dp);
    const train_args *a = l->a;
    if (!l->root || s->steps == 0)
        return;
    double k = 1e3 / (double)s->steps;
    double step = wall * 1e3 / steps;
    double det = (s->reduce + s->gather) * k;
    fprintf(stderr, "mhsa-train: %d rank%s x %d thread%s, %d groups: %.2f "
            "ms/step (compute %.2f, reduce %.2f, update %.2f, gather %.2f); "
            "deterministic reduction %.1f%% of a step; %.0f tokens/s\n",
            l->c->size, l->c->size == 1 ? "" : "s", omp_get_max_threads(),
            omp_get_max_threads() == 1 ? "" : "s", a->dp.grad_groups, step,
            s->compute * k, s->reduce * k, s->update * k, s->gather * k,
            100.0 * det / step,
            (double)a->batch * a->seq_len * steps / wall);
}

static int run_steps(loop *l, dp_lm *ad, int32_t *tok, int32_t *tgt,
                     float *losses, dp_cli_result *res)
{
    const train_args *a = l->a;
    const dp_args *d = &a->dp;
    mhsa_optim_config oc = mhsa_optim_defaults(a->optim);
    oc.lr = a->lr;
    oc.weight_decay = a->weight_decay;
    oc.clip_norm = a->clip;
    int64_t total = (int64_t)a->epochs * a->steps;
    int64_t first = dp_steps(l->dp);
    res->first_step = (int)first;
    double tokens = (double)a->batch * a->seq_len;
    double t0 = now_s(), te = t0, sum = 0.0;
    int in_epoch = 0;
    for (int64_t step = first; step < total; step++) {
        float loss;
        if (mhsa_task_batch(a->task, &l->data, a->batch, a->seq_len,
                            a->vocab, tok, tgt) != MHSA_OK)
            return failed(l, "training", 0, CLI_FAIL);
        dp_lm_set_batch(ad, tok, tgt, a->batch, a->seq_len);
        if (dp_step(l->dp, &oc, &loss, NULL) != MHSA_OK)
            return failed(l, "training", 0, CLI_FAIL);
        if (!isfinite(loss)) {   // the same loss on every rank
            if (l->root)
                fprintf(stderr, "mhsa-train: loss is %g at step %lld; try a "
                        "smaller --lr or --clip 1\n", (double)loss,
                        (long long)step + 1);
            return CLI_FAIL;
        }
        losses[res->n_losses++] = loss;
        sum += loss;
        in_epoch++;
        int64_t done = step + 1;
        if (done % a->steps == 0 && l->root) {
            double t = now_s();
            fprintf(stderr, "epoch %d/%d  step %6lld  loss %.4f  %.0f "
                    "tokens/s\n", (int)(done / a->steps), a->epochs,
                    (long long)done, sum / in_epoch,
                    tokens * in_epoch / (t - te + 1e-9));
            te = t;
            sum = 0.0;
            in_epoch = 0;
        }
        if (done % d->verify_every == 0 && dp_verify(l->dp) != MHSA_OK)
            return failed(l, "weight check", 1, CLI_FAIL);
        if (d->checkpoint && d->checkpoint_every > 0 &&
            done % d->checkpoint_every == 0 && done < total &&
            save(l, d->checkpoint) != CLI_OK)
            return CLI_FAIL;
    }
    double wall = now_s() - t0;
    if (dp_verify(l->dp) != MHSA_OK)
        return failed(l, "weight check", 1, CLI_FAIL);
    if (d->checkpoint && save(l, d->checkpoint) != CLI_OK)
        return CLI_FAIL;
    if (total > first)
        print_stats(l, wall, (int)(total - first));
    return CLI_OK;
}

int dp_cli_train(const train_args *a, dp_comm *c, mhsa_lm *lm, int32_t *tok,
                 int32_t *tgt, uint64_t data_state, float *losses,
                 dp_cli_result *res)
{
    loop l = { a, c, NULL, c->rank == 0, data_state };
    memset(res, 0, sizeof *res);
    dp_lm ad;
    dp_model m;
    if (dp_lm_bind(&ad, lm, &m) != MHSA_OK)
        return failed(&l, "data parallel", 1, CLI_FAIL);
    if (a->dp.grad_groups % c->size != 0) {   // the same on every rank
        if (l.root)
            fprintf(stderr, "mhsa-train: --grad-groups %d is not a multiple "
                    "of the %d ranks: give a multiple of %d (the same "
                    "--grad-groups gives the same bits on any number of "
                    "ranks)\n", a->dp.grad_groups, c->size, c->size);
        return CLI_USAGE;
    }
    if (dp_create(&m, c, a->dp.grad_groups, a->optim, &l.dp) != MHSA_OK)
        return failed(&l, "data parallel", 1, CLI_FAIL);
    int rc = same_kernels(&l);
    if (rc == CLI_OK && dp_broadcast_params(l.dp) != MHSA_OK)
        rc = failed(&l, "broadcasting the weights", 0, CLI_FAIL);
    if (rc == CLI_OK && a->dp.resume)
        rc = resume(&l, a->dp.resume);
    if (rc == CLI_OK && l.root)
        fprintf(stderr, "mhsa-train: task %s, H=%d D=%d T=%d V=%d, %zu "
                "parameters, batch %d in %d group%s on %d rank%s (%s), %s "
                "lr %g, isa %s, %d thread%s per rank\n",
                mhsa_task_name(a->task), a->heads, a->d_model, a->seq_len,
                a->vocab, mhsa_lm_n_params(lm), a->batch, a->dp.grad_groups,
                a->dp.grad_groups == 1 ? "" : "s", c->size,
                c->size == 1 ? "" : "s", c->ops->name,
                a->optim == MHSA_OPTIM_SGD ? "sgd" : "adamw", (double)a->lr,
                mhsa_isa_name(mhsa_active_isa()), omp_get_max_threads(),
                omp_get_max_threads() == 1 ? "" : "s");
    if (rc == CLI_OK && a->dp.resume && l.root)
        fprintf(stderr, "mhsa-train: resumed from %s at step %lld\n",
                a->dp.resume, (long long)dp_steps(l.dp));
    if (rc == CLI_OK)
        rc = run_steps(&l, &ad, tok, tgt, losses, res);
    dp_destroy(l.dp);
    return rc;
}
