// dp_run.c — the data-parallel training loop (dp_run.h).
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

#include "args_util.h"
#include "dp_run.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct loop {
    const dp_run_job *j;
    mhsa_dp_comm *c;
    mhsa_dp_trainer *dp;
    int root;
    uint64_t data;   // the data stream's state
} loop;

// A failure: every rank saw it (agreed), so all return together; or only
// this rank did, and the others may be waiting in a collective, so the
// whole job ends here.
int dp_run_fail(mhsa_dp_comm *c, const char *what, int agreed, int code)
{
    if (!agreed || c->rank == 0) {
        if (c->size > 1 && !agreed)
            fprintf(stderr, "mhsa-train: rank %d: %s: %s\n", c->rank,
                    what, mhsa_last_error());
        else
            fprintf(stderr, "mhsa-train: %s: %s\n", what, mhsa_last_error());
    }
    if (!agreed && c->size > 1 && c->ops->abort_job)
        c->ops->abort_job(c, code);
    return code;
}

static int failed(const loop *l, const char *what, int agreed, int code)
{
    return dp_run_fail(l->c, what, agreed, code);
}

int dp_run_agree(mhsa_dp_comm *c, int rc)
{
    int P = c->size;
    if (P == 1)
        return rc;
    int32_t *all = calloc((size_t)P, sizeof *all);
    size_t *cnt = calloc(2 * (size_t)P, sizeof *cnt);
    if (!all || !cnt) {
        // Every rank must take part in the collective: end them all.
        fprintf(stderr, "mhsa-train: rank %d: out of memory\n", c->rank);
        if (c->ops->abort_job)
            c->ops->abort_job(c, CLI_FAIL);
        free(all);
        free(cnt);
        return CLI_FAIL;
    }
    for (int q = 0; q < P; q++) {
        cnt[q] = sizeof *all;
        cnt[P + q] = (size_t)q * sizeof *all;
    }
    all[c->rank] = rc;
    int out = CLI_OK;
    if (c->ops->allgatherv(c, all, cnt, cnt + P))
        out = dp_run_fail(c, "agreeing on the set-up", 0, CLI_FAIL);
    for (int q = 0; q < P && out == CLI_OK; q++)
        out = all[q];
    free(all);
    free(cnt);
    return out;
}

// ---- checkpoints -----------------------------------------------------------

// Besides the trainer's own state and the job's entries, a checkpoint holds
// the data stream's position and the learning rate of the next step.
static int save(loop *l, const char *path)
{
    const dp_run_job *j = l->j;
    size_t n = 2 + (size_t)j->n_ident + j->n_extra, k = 0;
    mhsa_meta *m = calloc(n, sizeof *m);
    if (!m) {
        fprintf(stderr, "mhsa-train: rank %d: out of memory\n", l->c->rank);
        if (l->c->size > 1 && l->c->ops->abort_job)
            l->c->ops->abort_job(l->c, CLI_FAIL);
        return CLI_FAIL;
    }
    char rng[32], lr[32];
    int64_t s = mhsa_dp_steps(l->dp);
    snprintf(rng, sizeof rng, "%" PRIu64, l->data);
    snprintf(lr, sizeof lr, "%.9g",
             (double)(j->lr_at ? j->lr_at(j->ctx, s) : j->cfg.lr));
    m[k++] = (mhsa_meta){ "mhsa.data_rng", rng };
    m[k++] = (mhsa_meta){ "mhsa.lr", lr };
    for (int i = 0; i < j->n_ident; i++)
        m[k++] = (mhsa_meta){ j->ident[i].key, j->ident[i].value };
    for (size_t i = 0; i < j->n_extra; i++)
        m[k++] = j->extra[i];
    mhsa_status st = mhsa_dp_save(l->dp, path, m, n);
    free(m);
    if (st != MHSA_OK)
        return failed(l, "--checkpoint", 1, CLI_FAIL);
    return CLI_OK;
}

static int resume(loop *l, const char *path)
{
    const dp_run_job *j = l->j;
    size_t n = 1 + (size_t)j->n_ident;
    mhsa_meta_value *w = calloc(n, sizeof *w);
    if (!w) {
        fprintf(stderr, "mhsa-train: rank %d: out of memory\n", l->c->rank);
        if (l->c->size > 1 && l->c->ops->abort_job)
            l->c->ops->abort_job(l->c, CLI_FAIL);
        return CLI_FAIL;
    }
    w[0].key = "mhsa.data_rng";
    for (int i = 0; i < j->n_ident; i++)
        w[1 + i].key = j->ident[i].key;
    int rc = CLI_OK;
    if (mhsa_dp_load(l->dp, path, w, n) != MHSA_OK)
        rc = failed(l, "--resume", 1, CLI_FAIL);
    // Every rank got the same values: all decide alike.
    for (int i = 0; i < j->n_ident && rc == CLI_OK; i++)
        if (strcmp(w[1 + i].value, j->ident[i].value) != 0) {
            if (l->root)
                fprintf(stderr, "mhsa-train: --resume %s: the checkpoint "
                        "was made with %s %s, this run has %s %s\n", path,
                        j->ident[i].flag, w[1 + i].present ? w[1 + i].value
                        : "(none)", j->ident[i].flag, j->ident[i].value);
            rc = CLI_USAGE;
        }
    char *end = NULL;
    uint64_t s = rc == CLI_OK ? strtoull(w[0].value, &end, 10) : 0;
    if (rc == CLI_OK && (!w[0].present || *end)) {
        if (l->root)
            fprintf(stderr, "mhsa-train: --resume %s: no data position "
                    "(mhsa.data_rng) in the checkpoint\n", path);
        rc = CLI_USAGE;
    }
    if (rc == CLI_OK)
        l->data = s;
    free(w);
    return rc;
}

// ---- checks before the first step ------------------------------------------

// Every rank must run the same kernels: AVX2 and scalar round differently,
// so ranks on machines that dispatch differently would drift apart (the
// weight check would stop them later; this says why, before the first
// step). Returns CLI_OK, or CLI_USAGE on every rank.
static int same_kernels(mhsa_dp_comm *c)
{
    int P = c->size;
    int32_t *isa = calloc((size_t)P, sizeof *isa);
    size_t *cnt = calloc(2 * (size_t)P, sizeof *cnt);
    if (!isa || !cnt) {
        // Every rank must take part in the collective: end them all.
        fprintf(stderr, "mhsa-train: rank %d: out of memory\n", c->rank);
        if (P > 1 && c->ops->abort_job)
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
        rc = dp_run_fail(c, "comparing kernels", 0, CLI_FAIL);
    for (int q = 1; q < P && rc == CLI_OK; q++)
        if (isa[q] != isa[0]) {
            if (c->rank == 0)
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

// ---- the start every run shares -------------------------------------------

int dp_run_open(mhsa_dp_comm *c, const mhsa_dp_model *m, int G,
                mhsa_optim_kind kind, mhsa_dp_trainer **out)
{
    *out = NULL;
    if (G % c->size != 0) {   // the same on every rank
        if (c->rank == 0)
            fprintf(stderr, "mhsa-train: --grad-groups %d is not a multiple "
                    "of the %d ranks: give a multiple of %d (the same "
                    "--grad-groups gives the same bits on any number of "
                    "ranks)\n", G, c->size, c->size);
        return CLI_USAGE;
    }
    mhsa_dp_trainer *dp = NULL;
    if (mhsa_dp_create(m, c, G, kind, &dp) != MHSA_OK)
        return dp_run_fail(c, "data parallel", 1, CLI_FAIL);
    int rc = same_kernels(c);
    if (rc == CLI_OK && mhsa_dp_broadcast_params(dp) != MHSA_OK)
        rc = dp_run_fail(c, "broadcasting the weights", 0, CLI_FAIL);
    if (rc != CLI_OK) {
        mhsa_dp_destroy(dp);
        return rc;
    }
    *out = dp;
    return CLI_OK;
}

// ---- the loop --------------------------------------------------------------

// The time per step of every part, over all steps of this run; compute and
// wait as the range over the ranks (collective: every rank's stats are
// gathered to every rank, 48 bytes each).
void dp_run_print_stats(mhsa_dp_trainer *dp, double wall, int64_t steps,
                        double tokens_per_step)
{
    mhsa_dp_comm *c = mhsa_dp_get_comm(dp);
    int P = c->size;
    const mhsa_dp_stats *s = mhsa_dp_get_stats(dp);
    double *all = calloc((size_t)P * 6, sizeof *all);
    size_t *cnt = calloc(2 * (size_t)P, sizeof *cnt);
    if (!all || !cnt) {
        free(all);
        free(cnt);
        return;   // every rank has P doubles of room or none does
    }
    for (int q = 0; q < P; q++) {
        cnt[q] = 6 * sizeof *all;
        cnt[P + q] = (size_t)q * 6 * sizeof *all;
    }
    double k = s->steps ? 1e3 / (double)s->steps : 0.0;
    double *mine = all + (size_t)c->rank * 6;
    mine[0] = s->compute * k;
    mine[1] = s->wait * k;
    mine[2] = s->reduce * k;
    mine[3] = s->update * k;
    mine[4] = s->gather * k;
    int bad = c->ops->allgatherv(c, all, cnt, cnt + P);
    if (!bad && c->rank == 0 && s->steps > 0) {
        double lo[5], hi[5];
        for (int i = 0; i < 5; i++) {
            lo[i] = hi[i] = all[i];
            for (int q = 1; q < P; q++) {
                double x = all[(size_t)q * 6 + (size_t)i];
                lo[i] = x < lo[i] ? x : lo[i];
                hi[i] = x > hi[i] ? x : hi[i];
            }
        }
        double step = wall * 1e3 / (double)steps;
        int nt = omp_get_max_threads();
        // The reduction's cost: the slowest rank's reduce + gather.
        double det = 0.0;
        for (int q = 0; q < P; q++) {
            double x = all[(size_t)q * 6 + 2] + all[(size_t)q * 6 + 4];
            det = x > det ? x : det;
        }
        fprintf(stderr, "mhsa-train: %d rank%s x %d thread%s, %d groups: "
                "%.2f ms/step (compute %.2f..%.2f, wait %.2f..%.2f, reduce "
                "%.2f, update %.2f, gather %.2f; ms per rank); "
                "deterministic reduction %.1f%% of a step; %.0f tokens/s\n",
                P, P == 1 ? "" : "s", nt, nt == 1 ? "" : "s",
                mhsa_dp_groups(dp), step, lo[0], hi[0], lo[1], hi[1], hi[2],
                hi[3], hi[4], 100.0 * det / step,
                tokens_per_step * (double)steps / wall);
    }
    free(all);
    free(cnt);
}

static int run_steps(loop *l, dp_cli_result *res)
{
    const dp_run_job *j = l->j;
    const dp_args *d = j->opt;
    mhsa_optim_config oc = j->cfg;
    int64_t total = j->total_steps, first = mhsa_dp_steps(l->dp);
    res->first_step = (int)first;
    double t0 = now_s(), te = t0, sum = 0.0;
    int in_epoch = 0;
    for (int64_t step = first; step < total; step++) {
        float loss;
        if (j->lr_at)
            oc.lr = j->lr_at(j->ctx, step);
        if (j->next_batch(j->ctx, &l->data) != MHSA_OK)
            return failed(l, "making a batch", 0, CLI_FAIL);
        if (mhsa_dp_step(l->dp, &oc, &loss, NULL) != MHSA_OK)
            return failed(l, "training", 0, CLI_FAIL);
        if (!isfinite(loss)) {   // the same loss on every rank
            if (l->root)
                fprintf(stderr, "mhsa-train: loss is %g at step %lld; try a "
                        "smaller --lr or --clip 1\n", (double)loss,
                        (long long)step + 1);
            return CLI_FAIL;
        }
        j->losses[res->n_losses++] = loss;
        sum += loss;
        in_epoch++;
        int64_t done = step + 1;
        if (done % j->steps_per_epoch == 0 && l->root) {
            double t = now_s();
            fprintf(stderr, "epoch %d/%d  step %6lld  loss %.4f  %.0f "
                    "tokens/s\n", (int)(done / j->steps_per_epoch),
                    j->epochs, (long long)done, sum / in_epoch,
                    j->tokens_per_step * in_epoch / (t - te + 1e-9));
            te = t;
            sum = 0.0;
            in_epoch = 0;
        }
        if (done % d->verify_every == 0 && mhsa_dp_verify(l->dp) != MHSA_OK)
            return failed(l, "weight check", 1, CLI_FAIL);
        if (d->checkpoint && d->checkpoint_every > 0 &&
            done % d->checkpoint_every == 0 && done < total &&
            save(l, d->checkpoint) != CLI_OK)
            return CLI_FAIL;
    }
    double wall = now_s() - t0;
    if (mhsa_dp_verify(l->dp) != MHSA_OK)
        return failed(l, "weight check", 1, CLI_FAIL);
    if (d->checkpoint && save(l, d->checkpoint) != CLI_OK)
        return CLI_FAIL;
    if (total > first)
        dp_run_print_stats(l->dp, wall, total - first, j->tokens_per_step);
    return CLI_OK;
}

int dp_run(const dp_run_job *j, dp_cli_result *res)
{
    mhsa_dp_comm *c = j->comm;
    loop l = { j, c, NULL, c->rank == 0, j->rng };
    memset(res, 0, sizeof *res);
    int G = j->opt->grad_groups;
    int rc = dp_run_open(c, j->model, G, j->kind, &l.dp);
    if (rc != CLI_OK)
        return rc;
    if (rc == CLI_OK && j->opt->resume)
        rc = resume(&l, j->opt->resume);
    int nt = omp_get_max_threads();
    if (rc == CLI_OK && l.root)
        fprintf(stderr, "mhsa-train: %s, %d group%s on %d rank%s (%s), isa "
                "%s, %d thread%s per rank\n", j->what, G, G == 1 ? "" : "s",
                c->size, c->size == 1 ? "" : "s", c->ops->name,
                mhsa_isa_name(mhsa_active_isa()), nt, nt == 1 ? "" : "s");
    if (rc == CLI_OK && j->opt->resume && l.root)
        fprintf(stderr, "mhsa-train: resumed from %s at step %lld\n",
                j->opt->resume, (long long)mhsa_dp_steps(l.dp));
    if (rc == CLI_OK)
        rc = run_steps(&l, res);
    mhsa_dp_destroy(l.dp);
    return rc;
}
