// test_dp.c — data-parallel training (mhsa_train.h, src/train/dp/) without MPI:
// ranks are threads (dp_threads.c) or the single-process transport. The fixed
// tree against hand-bracketed sums; per-group losses normalised by the batch's
// count; G = 1 against the plain mhsa_lm loop bit for bit; the same bits for
// every rank count and thread count at a given G; checkpoints that resume on
// another rank count to the same file; the weight check; errors that end every
// rank together instead of leaving one waiting.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "mhsa_train.h"
#include "train/dp/dp_internal.h"
#include "dp_threads.h"
#include "train/dp/dp_tree.h"
#include "io/safetensors.h"
#include "train/train_internal.h"
#include "util.h"
#include "tmpdir.h"

// ---- the tree --------------------------------------------------------------

typedef struct leaves {
    const float *v;   // (G, len)
    size_t len;
} leaves;

static int leaf_source(void *ctx, int lo, int hi, float *out,
                       const float **v)
{
    const leaves *l = ctx;
    (void)out;
    if (hi - lo != 1)
        return 0;
    *v = l->v + (size_t)lo * l->len;
    return 1;
}

// Partial sums of some nodes, as a rank would receive them.
typedef struct partials {
    int n, lo[64], hi[64];
    const float *v[64];
} partials;

static int partial_source(void *ctx, int lo, int hi, float *out,
                          const float **v)
{
    const partials *p = ctx;
    (void)out;
    for (int i = 0; i < p->n; i++)
        if (p->lo[i] == lo && p->hi[i] == hi) {
            *v = p->v[i];
            return 1;
        }
    return 0;
}

static void tree_of(const float *g, int G, size_t len, float *out)
{
    float *scratch[8];
    for (int i = 0; i < 8; i++)
        scratch[i] = malloc(len * sizeof(float));
    leaves l = { g, len };
    const float *res;
    ck_assert_int_eq(mhsa__dp_tree_sum(0, G, len, leaf_source, &l, out, scratch,
                                       &res), 0);
    if (res != out)
        memcpy(out, res, len * sizeof(float));
    for (int i = 0; i < 8; i++)
        free(scratch[i]);
}

// Values of very different sizes, so that each bracketing rounds differently.
static void spread_values(float *x, size_t n, uint64_t seed)
{
    rng r = { seed };
    for (size_t i = 0; i < n; i++) {
        float u;
        fill_uniform(&r, &u, 1, -1, 1);
        x[i] = ldexpf(u, (int)(i * 7 % 41) - 20);
    }
}

START_TEST(tree_brackets_as_documented)
{
    enum { LEN = 257 };
    float g[6][LEN], got[LEN];
    spread_values(&g[0][0], 6 * LEN, 3);
    int differs = 0;
    tree_of(&g[0][0], 4, LEN, got);
    for (int i = 0; i < LEN; i++) {
        float want = (g[0][i] + g[1][i]) + (g[2][i] + g[3][i]);
        ck_assert_msg(memcmp(&got[i], &want, 4) == 0, "G=4 element %d", i);
        float seq = ((g[0][i] + g[1][i]) + g[2][i]) + g[3][i];
        differs |= memcmp(&seq, &want, 4) != 0;
    }
    // The data tells bracketings apart, so the checks above can fail.
    ck_assert(differs);
    tree_of(&g[0][0], 3, LEN, got);
    for (int i = 0; i < LEN; i++) {
        float want = (g[0][i] + g[1][i]) + g[2][i];
        ck_assert_msg(memcmp(&got[i], &want, 4) == 0, "G=3 element %d", i);
    }
    tree_of(&g[0][0], 6, LEN, got);
    for (int i = 0; i < LEN; i++) {
        float want = ((g[0][i] + g[1][i]) + (g[2][i] + g[3][i])) +
                     (g[4][i] + g[5][i]);
        ck_assert_msg(memcmp(&got[i], &want, 4) == 0, "G=6 element %d", i);
    }
    tree_of(&g[0][0], 1, LEN, got);
    ck_assert_mem_eq(got, g[0], sizeof got);
    ck_assert_int_eq(mhsa__dp_tree_split(0, 2), 1);
    ck_assert_int_eq(mhsa__dp_tree_split(4, 9), 8);
    ck_assert_int_eq(mhsa__dp_tree_split(0, 8), 4);
    ck_assert_int_eq(mhsa__dp_tree_height(1), 0);
    ck_assert_int_eq(mhsa__dp_tree_height(5), 3);
}
END_TEST

// For every G up to 40 and every P dividing it: the ranks' nodes tile their
// ranges, and finishing the tree from those partial sums gives the bits of
// the tree over the leaves.
START_TEST(tree_from_partials_is_the_same_for_every_split)
{
    enum { LEN = 33, GMAX = 40 };
    float *g = malloc((size_t)GMAX * LEN * sizeof(float));
    float *part = malloc(64 * (size_t)LEN * sizeof(float));
    float want[LEN], got[LEN], *scratch[8];
    for (int i = 0; i < 8; i++)
        scratch[i] = malloc(LEN * sizeof(float));
    spread_values(g, (size_t)GMAX * LEN, 11);
    for (int G = 1; G <= GMAX; G++) {
        tree_of(g, G, LEN, want);
        int h = mhsa__dp_tree_height(G);
        ck_assert_int_le(1 << h, 2 * G);
        for (int P = 1; P <= G; P++) {
            if (G % P)
                continue;
            int L = G / P;
            partials p = { 0 };
            for (int q = 0; q < P; q++) {
                int lo[64], hi[64];
                int k = mhsa__dp_tree_cover(G, q * L, (q + 1) * L, lo, hi, 64);
                ck_assert_int_le(k, 2 * h + 2);
                int at = q * L;
                for (int j = 0; j < k; j++) {
                    ck_assert_int_eq(lo[j], at);   // contiguous, in order
                    at = hi[j];
                    ck_assert_int_lt(p.n, 64);
                    float *dst = part + (size_t)p.n * LEN;
                    leaves l = { g, LEN };
                    const float *res;
                    ck_assert_int_eq(mhsa__dp_tree_sum(lo[j], hi[j], LEN,
                                                       leaf_source, &l, dst,
                                                       scratch, &res), 0);
                    p.lo[p.n] = lo[j];
                    p.hi[p.n] = hi[j];
                    p.v[p.n++] = res;
                }
                ck_assert_int_eq(at, (q + 1) * L);
            }
            const float *res;
            ck_assert_int_eq(mhsa__dp_tree_sum(0, G, LEN, partial_source, &p,
                                               got, scratch, &res), 0);
            ck_assert_msg(memcmp(res, want, sizeof want) == 0,
                          "G=%d P=%d: not the bits of the whole tree", G, P);
        }
    }
    for (int i = 0; i < 8; i++)
        free(scratch[i]);
    free(part);
    free(g);
}
END_TEST

// ---- the model's part ------------------------------------------------------

static mhsa_lm *make_lm(int V, int D, int H, int T, int B, uint64_t seed)
{
    mhsa_lm_config c = { V, D, H, T, B };
    mhsa_lm *lm = NULL;
    ck_assert_int_eq(mhsa_lm_create(&c, &lm), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_init_random(lm, seed), MHSA_OK);
    return lm;
}

static void lm_grads(mhsa_lm *lm, float *dst)
{
    float *p, *g;
    mhsa__lm_flat(lm, &p, &g);
    memcpy(dst, g, mhsa_lm_n_params(lm) * sizeof(float));
}

// One batch: the induction task with some targets dropped (at random), so
// that the groups count different numbers of positions.
static void make_batch(uint64_t *s, int B, int T, int V, int32_t *tok,
                       int32_t *tgt)
{
    ck_assert_int_eq(mhsa_task_batch(MHSA_TASK_INDUCTION, s, B, T, V, tok,
                                     tgt), MHSA_OK);
    for (int i = 0; i < B * T; i++) {
        uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
        if ((z >> 33) % 4 == 0)
            tgt[i] = -1;
    }
}

START_TEST(groups_normalised_by_the_batch_add_up)
{
    enum { V = 11, D = 8, H = 2, T = 6, B = 4 };
    mhsa_lm *lm = make_lm(V, D, H, T, B, 5);
    size_t n = mhsa_lm_n_params(lm);
    int32_t tok[B * T], tgt[B * T];
    uint64_t s = 9;
    make_batch(&s, B, T, V, tok, tgt);
    size_t count = 0, half = 0;
    for (int i = 0; i < B * T; i++) {
        count += tgt[i] >= 0;
        half += i < B * T / 2 && tgt[i] >= 0;
    }
    ck_assert_uint_ne(half, count - half);   // the halves count differently
    float *full = malloc(n * sizeof(float)), *sum = calloc(n, sizeof(float));
    float *g = malloc(n * sizeof(float));
    float lf, l0, l1, lc;
    ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, B, T, &lf, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
    lm_grads(lm, full);
    // Count 0 or the batch's own count: the same bits as mhsa_lm_forward.
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(mhsa__lm_forward_over(lm, tok, tgt, B, T,
                                               k ? count : 0, &lc, NULL),
                         MHSA_OK);
        ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
        lm_grads(lm, g);
        ck_assert_mem_eq(&lc, &lf, sizeof lc);
        ck_assert_mem_eq(g, full, n * sizeof(float));
    }
    // Two halves over the batch's count add up to the batch.
    ck_assert_int_eq(mhsa__lm_forward_over(lm, tok, tgt, B / 2, T, count,
                                           &l0, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
    lm_grads(lm, sum);
    ck_assert_int_eq(mhsa__lm_forward_over(lm, tok + B * T / 2,
                                           tgt + B * T / 2, B / 2, T, count,
                                           &l1, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
    lm_grads(lm, g);
    ck_assert_double_eq_tol(l0 + l1, lf, 2e-6 * fabs(lf));
    double maxg = 0, maxd = 0;
    // Not fmax: vectorising an fmax reduction stops aarch64 GCC 12 at -O3
    // with an internal compiler error (vect_transform_reduction).
    for (size_t i = 0; i < n; i++) {
        double a = fabs(full[i]), d = fabs(sum[i] + g[i] - full[i]);
        maxg = a > maxg ? a : maxg;
        maxd = d > maxd ? d : maxd;
    }
    ck_assert_double_gt(maxg, 1e-3);
    ck_assert_double_le(maxd, 1e-5 * maxg);
    // A count below the rows' own is a caller's mistake.
    ck_assert_int_eq(mhsa__lm_forward_over(lm, tok, tgt, B, T, count - 1,
                                           &lc, NULL), MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "count"));
    free(full);
    free(sum);
    free(g);
    mhsa_lm_destroy(lm);
}
END_TEST

// ---- training on ranks -----------------------------------------------------

enum { MV = 13, MD = 8, MH = 2, MT = 6, MB = 12 };

typedef struct job {
    // in
    int G, steps;
    mhsa_optim_kind kind;
    float clip, wd;
    const char *save_path;   // saved after save_at steps (0: never)
    int save_at;
    const char *resume;      // loaded before training
    int corrupt_rank;        // flips a weight bit on this rank (-1: none)
    int lanes;               // mhsa_dp_model.norm_lanes
    // A state handed over as one process holds it: exported at the end of
    // the run (rank 0: export_* malloc'd), imported before training.
    int export_state;
    const float *import_param, *import_m, *import_v;
    int64_t import_step;
    uint64_t import_rng;
    // out
    float *export_m, *export_v;
    int64_t export_step;
    uint64_t end_rng;
    float losses[64];
    float *params;           // (n) malloc'd
    size_t n;
    int64_t steps_done;
    mhsa_status st, verify_st;
    char msg[256];
} job;

static mhsa_optim_config job_cfg(const job *j)
{
    mhsa_optim_config c = mhsa_optim_defaults(j->kind);
    c.lr = j->kind == MHSA_OPTIM_SGD ? 0.2f : 1e-2f;
    c.clip_norm = j->clip;
    c.weight_decay = j->wd;
    return c;
}

static void fail_job(job *j, mhsa_status st)
{
    j->st = st;
    snprintf(j->msg, sizeof j->msg, "%s", mhsa_last_error());
}

// One rank's whole run. Ranks other than 0 start from other weights: the
// broadcast (or the checkpoint) must overwrite them.
static void rank_train(mhsa_dp_comm *c, void *arg)
{
    job *j = arg;
    mhsa_lm *lm = make_lm(MV, MD, MH, MT, MB / j->G, 1 + 1000 * c->rank);
    mhsa_dp_binding *a = NULL;
    mhsa_dp_model m;
    mhsa_dp_trainer *dp = NULL;
    int32_t tok[MB * MT], tgt[MB * MT];
    uint64_t s = 77;
    mhsa_optim_config cfg = job_cfg(j);
    mhsa_status st = mhsa_dp_lm_bind(lm, &m, &a);
    m.norm_lanes = j->lanes;
    if (st == MHSA_OK)
        st = mhsa_dp_create(&m, c, j->G, j->kind, &dp);
    if (st == MHSA_OK)
        st = mhsa_dp_broadcast_params(dp);
    if (st == MHSA_OK && j->import_param) {
        if (c->rank == 0)
            memcpy(m.param, j->import_param, m.n_params * sizeof(float));
        st = mhsa_dp_import_state(dp, c->rank == 0 ? j->import_m : NULL,
                                  c->rank == 0 ? j->import_v : NULL,
                                  j->import_step);
        s = j->import_rng;
    }
    if (st == MHSA_OK && j->resume) {
        mhsa_meta_value want = { .key = "test.rng" };
        st = mhsa_dp_load(dp, j->resume, &want, 1);
        if (st == MHSA_OK)
            s = strtoull(want.value, NULL, 10);
    }
    if (st != MHSA_OK) {
        fail_job(j, st);
        goto out;
    }
    for (int64_t step = mhsa_dp_steps(dp); step < j->steps; step++) {
        make_batch(&s, MB, MT, MV, tok, tgt);
        mhsa_dp_set_batch(a, tok, tgt, MB, MT);
        float norm;
        st = mhsa_dp_step(dp, &cfg, &j->losses[step], &norm);
        if (st != MHSA_OK) {
            fail_job(j, st);
            goto out;
        }
        if (step + 1 == j->save_at) {
            char rs[32];
            snprintf(rs, sizeof rs, "%llu", (unsigned long long)s);
            mhsa_meta meta = { "test.rng", rs };
            st = mhsa_dp_save(dp, j->save_path, &meta, 1);
            if (st != MHSA_OK) {
                fail_job(j, st);
                goto out;
            }
        }
    }
    if (j->export_state) {
        int root = c->rank == 0;
        j->export_m = root ? malloc(m.n_params * sizeof(float)) : NULL;
        j->export_v = root ? malloc(m.n_params * sizeof(float)) : NULL;
        st = mhsa_dp_export_state(dp, j->export_m, j->export_v,
                                  &j->export_step);
        if (st != MHSA_OK) {
            fail_job(j, st);
            goto out;
        }
    }
    j->end_rng = s;
    if (c->rank == j->corrupt_rank)
        m.param[m.n_params / 2] = nextafterf(m.param[m.n_params / 2], 1e9f);
    j->verify_st = mhsa_dp_verify(dp);
    if (j->verify_st != MHSA_OK)
        snprintf(j->msg, sizeof j->msg, "%s", mhsa_last_error());
    j->steps_done = mhsa_dp_steps(dp);
    j->n = m.n_params;
    j->params = malloc(j->n * sizeof(float));
    memcpy(j->params, m.param, j->n * sizeof(float));
out:
    mhsa_dp_destroy(dp);
    mhsa_dp_unbind(a);
    mhsa_lm_destroy(lm);
}

// Runs tmpl on P thread ranks (P = 0: the single-process transport);
// rank 0's job is copied to *out, and every rank must end with the same
// status, parameters and losses as rank 0.
static void run_ranks(int P, int omp, const job *tmpl, job *out)
{
    job *jobs = calloc((size_t)(P ? P : 1), sizeof *jobs);
    void *args[16];
    for (int r = 0; r < (P ? P : 1); r++) {
        jobs[r] = *tmpl;
        args[r] = &jobs[r];
    }
    if (P == 0) {
        omp_set_num_threads(omp);
        rank_train(mhsa_dp_comm_self(), &jobs[0]);
    } else {
        dp_threads_run(P, omp, rank_train, args);
    }
    for (int r = 1; r < P; r++) {
        ck_assert_int_eq(jobs[r].st, jobs[0].st);
        if (jobs[0].st != MHSA_OK)
            continue;
        ck_assert_int_eq(jobs[r].verify_st, jobs[0].verify_st);
        if (tmpl->corrupt_rank < 0)
            ck_assert_mem_eq(jobs[r].params, jobs[0].params,
                             jobs[0].n * sizeof(float));
        ck_assert_mem_eq(jobs[r].losses, jobs[0].losses,
                         sizeof jobs[0].losses);
        free(jobs[r].params);
    }
    *out = jobs[0];
    free(jobs);
}

static job base_job(int G)
{
    job j;
    memset(&j, 0, sizeof j);
    j.G = G;
    j.steps = 10;
    j.kind = MHSA_OPTIM_ADAMW;
    j.clip = 0.5f;   // small: most steps clip, so the norm matters
    j.wd = 0.1f;
    j.corrupt_rank = -1;
    return j;
}

static void same_run(const job *a, const job *b, const char *what)
{
    ck_assert_msg(a->st == MHSA_OK && b->st == MHSA_OK, "%s: %s / %s", what,
                  a->msg, b->msg);
    ck_assert_uint_eq(a->n, b->n);
    ck_assert_msg(memcmp(a->losses, b->losses, sizeof a->losses) == 0,
                  "%s: losses differ", what);
    ck_assert_msg(memcmp(a->params, b->params, a->n * sizeof(float)) == 0,
                  "%s: parameters differ", what);
}

// G = 1 is the plain loop of mhsa_lm_forward / backward / step, bit for bit.
START_TEST(one_group_is_the_plain_loop)
{
    for (int k = 0; k < 2; k++) {
        job j = base_job(1);
        j.kind = k ? MHSA_OPTIM_SGD : MHSA_OPTIM_ADAMW;
        job d;
        run_ranks(0, 1, &j, &d);
        ck_assert_msg(d.st == MHSA_OK, "%s", d.msg);

        mhsa_lm *lm = make_lm(MV, MD, MH, MT, MB, 1);
        int32_t tok[MB * MT], tgt[MB * MT];
        uint64_t s = 77;
        mhsa_optim_config cfg = job_cfg(&j);
        float losses[64] = { 0 };
        for (int step = 0; step < j.steps; step++) {
            make_batch(&s, MB, MT, MV, tok, tgt);
            ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, MB, MT,
                                             &losses[step], NULL), MHSA_OK);
            ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
            ck_assert_int_eq(mhsa_lm_step(lm, &cfg, NULL), MHSA_OK);
        }
        float *p, *g;
        mhsa__lm_flat(lm, &p, &g);
        ck_assert_mem_eq(losses, d.losses, sizeof losses);
        ck_assert_msg(memcmp(p, d.params, d.n * sizeof(float)) == 0,
                      "%s: parameters differ from the plain loop",
                      k ? "sgd" : "adamw");
        mhsa_lm_destroy(lm);
        free(d.params);
    }
}
END_TEST

// At G = 4: one process, 1, 2 and 4 thread ranks; at G = 6 (ranks with
// several tree nodes): 1, 2, 3 and 6 ranks. Always the same bits.
START_TEST(same_bits_on_every_rank_count)
{
    static const int plan[][5] = {
        { 4, 0, 1, 2, 4 }, { 6, 1, 2, 3, 6 },
    };
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        job j = base_job(plan[i][0]), ref, d;
        run_ranks(plan[i][1], 1, &j, &ref);
        for (int k = 2; k < 5; k++) {
            run_ranks(plan[i][k], 1, &j, &d);
            char what[64];
            snprintf(what, sizeof what, "G=%d P=%d", plan[i][0], plan[i][k]);
            same_run(&ref, &d, what);
            free(d.params);
        }
        // The groups are really summed by a tree: G = 1 rounds otherwise,
        // but trains the same model (the groups add up to the batch).
        job one = base_job(1);
        run_ranks(0, 1, &one, &d);
        ck_assert(memcmp(d.params, ref.params, d.n * sizeof(float)) != 0);
        ck_assert_double_eq_tol(d.losses[0], ref.losses[0],
                                1e-6 * d.losses[0]);
        for (int s = 1; s < j.steps; s++)
            ck_assert_double_eq_tol(d.losses[s], ref.losses[s],
                                    1e-3 * d.losses[s]);
        free(d.params);
        free(ref.params);
    }
}
END_TEST

// With eight norm lanes (the GPT's rule) too, every rank count clips alike.
START_TEST(eight_norm_lanes_are_the_same_on_every_rank_count)
{
    job j = base_job(4), ref, d;
    j.lanes = 8;
    run_ranks(0, 1, &j, &ref);
    for (int P = 2; P <= 4; P += 2) {
        run_ranks(P, 1, &j, &d);
        same_run(&ref, &d, "norm_lanes 8");
        free(d.params);
    }
    free(ref.params);
}
END_TEST

// The norm mhsa_dp_step uses is the model's own sum over the batch gradient,
// bit for bit in double, for both rules (G = 1: the model's gradient is the
// batch's), and the two rules do round differently.
START_TEST(norm_is_the_models_own_sum)
{
    mhsa_lm *lm = make_lm(MV, MD, MH, MT, MB, 1);
    mhsa_dp_binding *a = NULL;
    mhsa_dp_model m;
    ck_assert_int_eq(mhsa_dp_lm_bind(lm, &m, &a), MHSA_OK);
    int32_t tok[MB * MT], tgt[MB * MT];
    uint64_t s = 5;
    mhsa_optim_config cfg = mhsa_optim_defaults(MHSA_OPTIM_SGD);
    int differ = 0;
    for (int lanes = 1; lanes <= 8; lanes += 7) {
        m.norm_lanes = lanes;
        mhsa_dp_trainer *dp = NULL;
        ck_assert_int_eq(mhsa_dp_create(&m, mhsa_dp_comm_self(), 1,
                                        MHSA_OPTIM_SGD, &dp), MHSA_OK);
        for (int step = 0; step < 8; step++) {
            make_batch(&s, MB, MT, MV, tok, tgt);
            mhsa_dp_set_batch(a, tok, tgt, MB, MT);
            float loss, norm;
            ck_assert_int_eq(mhsa_dp_step(dp, &cfg, &loss, &norm), MHSA_OK);
            double acc[8] = { 0 }, seq = 0.0;
            for (size_t i = 0; i < m.n_params; i++) {
                double g2 = (double)m.grad[i] * (double)m.grad[i];
                acc[i % 8] += g2;
                seq += g2;
            }
            double eight = sqrt(((acc[0] + acc[4]) + (acc[2] + acc[6])) +
                                ((acc[1] + acc[5]) + (acc[3] + acc[7])));
            double one = sqrt(seq), want = lanes == 8 ? eight : one;
            differ |= memcmp(&eight, &one, sizeof one) != 0;
            ck_assert_msg(memcmp(&dp->last_norm, &want, sizeof want) == 0,
                          "lanes %d: %.17g vs %.17g", lanes, dp->last_norm,
                          want);
            float wf = (float)want;
            ck_assert_mem_eq(&norm, &wf, sizeof wf);
        }
        mhsa_dp_destroy(dp);
    }
    // The two rules rounded differently on some batch: the check can fail.
    ck_assert(differ);
    m.norm_lanes = 3;
    mhsa_dp_trainer *dp = NULL;
    ck_assert_int_eq(mhsa_dp_create(&m, mhsa_dp_comm_self(), 1,
                                    MHSA_OPTIM_SGD, &dp),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "norm_lanes = 3"));
    mhsa_dp_unbind(a);
    mhsa_lm_destroy(lm);
}
END_TEST

START_TEST(same_bits_on_one_and_two_openmp_threads)
{
    job j = base_job(4), a, b;
    run_ranks(2, 1, &j, &a);
    run_ranks(2, 2, &j, &b);
    same_run(&a, &b, "P=2, 1 vs 2 OpenMP threads");
    free(a.params);
    free(b.params);
}
END_TEST

// Exported after 4 steps on 3 ranks (as a model's own checkpoint would
// hold it), imported on 2 ranks and on one process: the rest of the run
// gives the uninterrupted run's bits.
START_TEST(export_then_import_continues_the_same_run)
{
    job whole = base_job(6), part = base_job(6), ref, cut, d;
    run_ranks(2, 1, &whole, &ref);
    part.steps = 4;
    part.export_state = 1;
    run_ranks(3, 1, &part, &cut);
    ck_assert_msg(cut.st == MHSA_OK, "%s", cut.msg);
    ck_assert_int_eq(cut.export_step, 4);
    for (int P = 0; P <= 2; P += 2) {
        job rest = base_job(6);
        rest.import_param = cut.params;
        rest.import_m = cut.export_m;
        rest.import_v = cut.export_v;
        rest.import_step = cut.export_step;
        rest.import_rng = cut.end_rng;
        run_ranks(P, 1, &rest, &d);
        ck_assert_msg(d.st == MHSA_OK, "%s", d.msg);
        ck_assert_int_eq(d.steps_done, 10);
        ck_assert_mem_eq(d.params, ref.params, d.n * sizeof(float));
        ck_assert_mem_eq(d.losses + 4, ref.losses + 4, 6 * sizeof(float));
        free(d.params);
    }
    // The moments are really carried: zero moments give other bits.
    job zero = base_job(6);
    float *z = calloc(cut.n, sizeof(float));
    zero.import_param = cut.params;
    zero.import_m = z;
    zero.import_v = z;
    zero.import_step = cut.export_step;
    zero.import_rng = cut.end_rng;
    run_ranks(2, 1, &zero, &d);
    ck_assert(memcmp(d.params, ref.params, d.n * sizeof(float)) != 0);
    free(d.params);
    free(z);
    free(cut.export_m);
    free(cut.export_v);
    free(cut.params);
    free(ref.params);
}
END_TEST

// ---- checkpoints (need the safetensors writer: jansson) --------------------
#if MHSA_TEST_SAFETENSORS

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void same_file(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    ck_assert_msg(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a,
                  b);
    free(x);
    free(y);
}

// Uninterrupted on 2 ranks vs 4 steps on 4 ranks, resumed on 1 process and
// on 3 ranks: the same final checkpoint, byte for byte. The checkpoint at
// step 4 is the same file from 2 or 4 ranks.
START_TEST(resume_on_another_rank_count_gives_the_same_file)
{
    job j = base_job(12), d;
    j.save_path = tpath("full");
    j.save_at = j.steps;
    run_ranks(2, 1, &j, &d);
    ck_assert_msg(d.st == MHSA_OK, "%s", d.msg);
    free(d.params);

    job k = base_job(12);
    k.steps = 4;
    k.save_at = 4;
    k.save_path = tpath("at4_p4");
    run_ranks(4, 1, &k, &d);
    ck_assert_msg(d.st == MHSA_OK, "%s", d.msg);
    free(d.params);
    k.save_path = tpath("at4_p2");
    run_ranks(2, 1, &k, &d);
    free(d.params);
    same_file(tpath("at4_p4"), tpath("at4_p2"));

    mhsa_st_file *f = NULL;
    ck_assert_int_eq(mhsa__st_open(tpath("at4_p4"), &f), MHSA_OK);
    ck_assert_str_eq(mhsa__st_meta(f, "mhsa.step"), "4");
    ck_assert_str_eq(mhsa__st_meta(f, "mhsa.optim"), "adamw");
    ck_assert_str_eq(mhsa__st_meta(f, "mhsa.grad_groups"), "12");
    ck_assert_ptr_nonnull(mhsa__st_meta(f, "test.rng"));
    int nd;
    size_t dims[MHSA_ST_MAX_DIMS];
    ck_assert(mhsa__st_shape(f, "optim.v", &nd, dims));
    ck_assert_int_eq(nd, 1);
    ck_assert_uint_eq(dims[0], (size_t)MV * MD * 2 + MV + MT * MD +
                      4 * MD * MD + 4 * MD);
    mhsa__st_close(f);

    for (int P = 0; P < 4; P += 3) {
        job r = base_job(12);
        r.resume = tpath("at4_p4");
        r.save_path = tpath("resumed");
        r.save_at = r.steps;
        run_ranks(P, 1, &r, &d);
        ck_assert_msg(d.st == MHSA_OK, "%s", d.msg);
        ck_assert_int_eq(d.steps_done, 10);
        free(d.params);
        same_file(tpath("full"), tpath("resumed"));
        unlink(tpath("resumed"));
    }
    tpath_remove();   // CK_FORK=no: the next test makes a new folder
}
END_TEST

START_TEST(load_errors_reach_every_rank)
{
    // Missing file: every rank fails, none waits for the others.
    job j = base_job(4), d;
    j.resume = tpath("missing");
    run_ranks(4, 1, &j, &d);
    ck_assert_int_eq(d.st, MHSA_ERR_IO);
    ck_assert_ptr_nonnull(strstr(d.msg, "missing"));

    // An SGD checkpoint does not resume AdamW (and vice versa).
    job s = base_job(4);
    s.kind = MHSA_OPTIM_SGD;
    s.steps = 2;
    s.save_at = 2;
    s.save_path = tpath("sgd");
    run_ranks(2, 1, &s, &d);
    ck_assert_msg(d.st == MHSA_OK, "%s", d.msg);
    free(d.params);
    j.resume = tpath("sgd");
    run_ranks(2, 1, &j, &d);
    ck_assert_int_eq(d.st, MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(d.msg, "sgd"));
    // ... but SGD resumes it.
    s.resume = tpath("sgd");
    s.steps = 3;
    s.save_at = 0;
    run_ranks(2, 1, &s, &d);
    ck_assert_msg(d.st == MHSA_OK, "%s", d.msg);
    ck_assert_int_eq(d.steps_done, 3);
    free(d.params);

    // A plain weights file (no training state) is not a checkpoint.
    float w = 1;
    mhsa_st_tensor t = { .name = "w", .ndim = 1, .dims = { 1 }, .data = &w };
    ck_assert_int_eq(mhsa__st_write_f32(tpath("sgd"), &t, 1), MHSA_OK);
    run_ranks(2, 1, &s, &d);
    ck_assert_int_eq(d.st, MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(d.msg, "not a training checkpoint"));
    tpath_remove();   // CK_FORK=no: the next test makes a new folder
}
END_TEST

#endif

// ---- the weight check and errors -------------------------------------------

START_TEST(verify_names_the_rank_that_differs)
{
    job j = base_job(3), d;
    j.steps = 2;
    run_ranks(3, 1, &j, &d);
    ck_assert_int_eq(d.verify_st, MHSA_OK);
    free(d.params);
    j.corrupt_rank = 2;
    run_ranks(3, 1, &j, &d);
    ck_assert_int_eq(d.verify_st, MHSA_ERR_STATE);   // on every rank
    ck_assert_ptr_nonnull(strstr(d.msg, "rank 2 differ from rank 0's after "
                                 "step 2"));
    free(d.params);
}
END_TEST

static void rank_bad_groups(mhsa_dp_comm *c, void *arg)
{
    mhsa_lm *lm = make_lm(MV, MD, MH, MT, 1, 1);
    mhsa_dp_binding *a = NULL;
    mhsa_dp_model m;
    mhsa_dp_trainer *dp = NULL;
    ck_assert_int_eq(mhsa_dp_lm_bind(lm, &m, &a), MHSA_OK);
    *(mhsa_status *)arg = mhsa_dp_create(&m, c, 3, MHSA_OPTIM_ADAMW, &dp);
    ck_assert_ptr_null(dp);
    mhsa_dp_unbind(a);
    mhsa_lm_destroy(lm);
}

START_TEST(groups_must_be_a_multiple_of_the_ranks)
{
    mhsa_status st[2];
    void *args[2] = { &st[0], &st[1] };
    dp_threads_run(2, 1, rank_bad_groups, args);
    ck_assert_int_eq(st[0], MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(st[1], MHSA_ERR_INVALID_ARG);

    mhsa_lm *lm = make_lm(MV, MD, MH, MT, 2, 1);
    mhsa_dp_binding *a = NULL;
    mhsa_dp_model m;
    mhsa_dp_trainer *dp = NULL;
    ck_assert_int_eq(mhsa_dp_lm_bind(lm, &m, &a), MHSA_OK);
    ck_assert_int_eq(mhsa_dp_create(&m, mhsa_dp_comm_self(), 0,
                                    MHSA_OPTIM_ADAMW, &dp),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "groups = 0"));
    // A batch the groups do not divide: the step fails, naming both.
    ck_assert_int_eq(mhsa_dp_create(&m, mhsa_dp_comm_self(), 5,
                                    MHSA_OPTIM_ADAMW, &dp), MHSA_OK);
    int32_t tok[MB * MT] = { 0 }, tgt[MB * MT] = { 0 };
    mhsa_dp_set_batch(a, tok, tgt, MB, MT);
    mhsa_optim_config cfg = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    float loss;
    ck_assert_int_eq(mhsa_dp_step(dp, &cfg, &loss, NULL), MHSA_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "group 0 of 5 of a "
                                 "batch of 12 rows"));
    cfg.kind = MHSA_OPTIM_SGD;
    ck_assert_int_eq(mhsa_dp_step(dp, &cfg, &loss, NULL), MHSA_ERR_INVALID_ARG);
    mhsa_dp_destroy(dp);
    mhsa_dp_unbind(a);
    mhsa_lm_destroy(lm);
}
END_TEST

START_TEST(steps_allocate_nothing)
{
    mhsa_lm *lm = make_lm(MV, MD, MH, MT, MB / 4, 1);
    mhsa_dp_binding *a = NULL;
    mhsa_dp_model m;
    mhsa_dp_trainer *dp = NULL;
    ck_assert_int_eq(mhsa_dp_lm_bind(lm, &m, &a), MHSA_OK);
    ck_assert_int_eq(mhsa_dp_create(&m, mhsa_dp_comm_self(), 4,
                                    MHSA_OPTIM_ADAMW, &dp), MHSA_OK);
    int32_t tok[MB * MT], tgt[MB * MT];
    uint64_t s = 1;
    mhsa_optim_config cfg = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    cfg.clip_norm = 1.0f;
    float loss, norm;
    mhsa__alloc_fail_at(1);
    for (int i = 0; i < 3; i++) {
        make_batch(&s, MB, MT, MV, tok, tgt);
        mhsa_dp_set_batch(a, tok, tgt, MB, MT);
        ck_assert_int_eq(mhsa_dp_step(dp, &cfg, &loss, &norm), MHSA_OK);
    }
    ck_assert_int_eq(mhsa_dp_verify(dp), MHSA_OK);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);
    ck_assert_int_eq(mhsa_dp_get_stats(dp)->steps, 3);
    mhsa_dp_destroy(dp);
    mhsa_dp_unbind(a);
    mhsa_lm_destroy(lm);
}
END_TEST

// ---- the GPT (mhsa_dp_gpt_bind) --------------------------------------------

enum { GV = 29, GL = 2, GD = 16, GH = 2, GT = 8, GB = 8, GSTEPS = 6 };

static mhsa_gpt *make_gpt(int max_batch, uint64_t seed)
{
    mhsa_gpt_config c = { 0 };
    c.vocab = GV;
    c.n_layer = GL;
    c.n_embd = GD;
    c.n_head = GH;
    c.block_size = GT;
    c.max_batch = max_batch;
    mhsa_gpt *g = NULL;
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_init_random(g, seed), MHSA_OK);
    return g;
}

static mhsa_optim_config gpt_cfg(void)
{
    mhsa_optim_config c = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    c.lr = 1e-2f;
    c.clip_norm = 0.5f;   // small: most steps clip, so the norm matters
    c.weight_decay = 0.1f;
    return c;
}

typedef struct gpt_job {
    int G;
    float losses[GSTEPS];
    float *params;   // (n) malloc'd
    size_t n;
    mhsa_status st;
    char msg[256];
} gpt_job;

// One rank's run of the GPT. Ranks other than 0 start from other weights:
// the broadcast must overwrite them. Each rank's model holds one group.
static void rank_gpt(mhsa_dp_comm *c, void *arg)
{
    gpt_job *j = arg;
    mhsa_gpt *g = make_gpt(GB / j->G, 1 + 1000 * (uint64_t)c->rank);
    mhsa_dp_binding *a = NULL;
    mhsa_dp_model m;
    mhsa_dp_trainer *dp = NULL;
    int32_t tok[GB * GT], tgt[GB * GT];
    uint64_t s = 77;
    mhsa_optim_config cfg = gpt_cfg();
    mhsa_status st = mhsa_dp_gpt_bind(g, &m, &a);
    if (st == MHSA_OK)
        st = mhsa_dp_create(&m, c, j->G, MHSA_OPTIM_ADAMW, &dp);
    if (st == MHSA_OK)
        st = mhsa_dp_broadcast_params(dp);
    for (int step = 0; step < GSTEPS && st == MHSA_OK; step++) {
        make_batch(&s, GB, GT, GV, tok, tgt);
        mhsa_dp_set_batch(a, tok, tgt, GB, GT);
        st = mhsa_dp_step(dp, &cfg, &j->losses[step], NULL);
    }
    if (st == MHSA_OK)
        st = mhsa_dp_verify(dp);
    j->st = st;
    if (st != MHSA_OK)
        snprintf(j->msg, sizeof j->msg, "%s", mhsa_last_error());
    j->n = m.n_params;
    j->params = malloc(j->n * sizeof(float));
    memcpy(j->params, m.param, j->n * sizeof(float));
    mhsa_dp_destroy(dp);
    mhsa_dp_unbind(a);
    mhsa_gpt_destroy(g);
}

// P = 0: the single-process transport. Every rank must end with rank 0's
// parameters and losses; rank 0's job is copied to *out.
static void run_gpt(int P, int G, gpt_job *out)
{
    gpt_job jobs[4];
    void *args[4];
    memset(jobs, 0, sizeof jobs);
    for (int r = 0; r < 4; r++) {
        jobs[r].G = G;
        args[r] = &jobs[r];
    }
    if (P == 0)
        rank_gpt(mhsa_dp_comm_self(), &jobs[0]);
    else
        dp_threads_run(P, 1, rank_gpt, args);
    ck_assert_msg(jobs[0].st == MHSA_OK, "P=%d G=%d: %s", P, G, jobs[0].msg);
    for (int r = 1; r < P; r++) {
        ck_assert_int_eq(jobs[r].st, MHSA_OK);
        ck_assert_mem_eq(jobs[r].params, jobs[0].params,
                         jobs[0].n * sizeof(float));
        ck_assert_mem_eq(jobs[r].losses, jobs[0].losses,
                         sizeof jobs[0].losses);
        free(jobs[r].params);
    }
    *out = jobs[0];
}

// G = 4: one process, 1, 2 and 4 thread ranks give the same bits; G = 1
// rounds otherwise (the tree really sums groups) but trains the same model.
START_TEST(gpt_same_bits_on_every_rank_count)
{
    static const int ranks[] = { 1, 2, 4 };
    gpt_job ref, d;
    run_gpt(0, 4, &ref);
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++) {
        run_gpt(ranks[i], 4, &d);
        ck_assert_uint_eq(d.n, ref.n);
        ck_assert_msg(memcmp(d.params, ref.params, d.n * sizeof(float)) == 0,
                      "GPT, G=4: parameters on %d ranks differ from one "
                      "process", ranks[i]);
        ck_assert_mem_eq(d.losses, ref.losses, sizeof d.losses);
        free(d.params);
    }
    run_gpt(0, 1, &d);
    ck_assert(memcmp(d.params, ref.params, d.n * sizeof(float)) != 0);
    ck_assert_double_eq_tol(d.losses[0], ref.losses[0], 1e-6 * d.losses[0]);
    for (int s = 1; s < GSTEPS; s++)
        ck_assert_double_eq_tol(d.losses[s], ref.losses[s],
                                1e-3 * d.losses[s]);
    free(d.params);
    free(ref.params);
}
END_TEST

// G = 1 is the plain loop of mhsa_gpt_forward / backward / step, bit for
// bit (the same normaliser, the same eight-lane norm, the same updates).
START_TEST(gpt_one_group_is_the_plain_loop)
{
    gpt_job d;
    run_gpt(0, 1, &d);
    mhsa_gpt *g = make_gpt(GB, 1);
    int32_t tok[GB * GT], tgt[GB * GT];
    uint64_t s = 77;
    mhsa_optim_config cfg = gpt_cfg();
    float losses[GSTEPS];
    for (int step = 0; step < GSTEPS; step++) {
        make_batch(&s, GB, GT, GV, tok, tgt);
        ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, GB, GT, 0.0,
                                          &losses[step]), MHSA_OK);
        ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
        ck_assert_int_eq(mhsa_gpt_step(g, &cfg, NULL), MHSA_OK);
    }
    ck_assert_uint_eq(d.n, mhsa_gpt_n_params(g));
    ck_assert_mem_eq(losses, d.losses, sizeof losses);
    ck_assert_msg(memcmp(mhsa_gpt_params(g), d.params,
                         d.n * sizeof(float)) == 0,
                  "GPT, G=1: parameters differ from the plain loop");
    mhsa_gpt_destroy(g);
    free(d.params);
}
END_TEST

// The norm mhsa_dp_step clips with is the GPT's own (mhsa_gpt_step's eight
// lanes), bit for bit in double, over the batch gradient (G = 1: the
// model's gradient buffer); the one-lane rule rounds otherwise on some
// batch, so the check can fail; and the steps really clip.
START_TEST(gpt_norm_is_the_gpts_own_sum)
{
    mhsa_gpt *g = make_gpt(GB, 1);
    mhsa_dp_binding *a = NULL;
    mhsa_dp_model m;
    mhsa_dp_trainer *dp = NULL;
    ck_assert_int_eq(mhsa_dp_gpt_bind(g, &m, &a), MHSA_OK);
    ck_assert_int_eq(mhsa_dp_create(&m, mhsa_dp_comm_self(), 1,
                                    MHSA_OPTIM_ADAMW, &dp), MHSA_OK);
    int32_t tok[GB * GT], tgt[GB * GT];
    uint64_t s = 5;
    mhsa_optim_config cfg = gpt_cfg();
    int differ = 0, clipped = 0;
    for (int step = 0; step < 8; step++) {
        make_batch(&s, GB, GT, GV, tok, tgt);
        mhsa_dp_set_batch(a, tok, tgt, GB, GT);
        float loss;
        ck_assert_int_eq(mhsa_dp_step(dp, &cfg, &loss, NULL), MHSA_OK);
        double acc[8] = { 0 }, seq = 0.0;
        for (size_t i = 0; i < m.n_params; i++) {
            double g2 = (double)m.grad[i] * (double)m.grad[i];
            acc[i % 8] += g2;
            seq += g2;
        }
        double eight = sqrt(((acc[0] + acc[4]) + (acc[2] + acc[6])) +
                            ((acc[1] + acc[5]) + (acc[3] + acc[7])));
        differ |= sqrt(seq) != eight;
        clipped += eight > (double)cfg.clip_norm;
        ck_assert_msg(memcmp(&dp->last_norm, &eight, sizeof eight) == 0,
                      "step %d: %.17g, the GPT's rule %.17g", step,
                      dp->last_norm, eight);
    }
    ck_assert(differ);
    ck_assert_int_gt(clipped, 4);
    mhsa_dp_destroy(dp);
    mhsa_dp_unbind(a);
    mhsa_gpt_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dp");
    TCase *tt = tcase_create("tree");
    tcase_add_test(tt, tree_brackets_as_documented);
    tcase_add_test(tt, tree_from_partials_is_the_same_for_every_split);
    tcase_add_test(tt, groups_normalised_by_the_batch_add_up);
    suite_add_tcase(s, tt);
    TCase *tr = tcase_create("ranks");
    tcase_add_test(tr, one_group_is_the_plain_loop);
    tcase_add_test(tr, same_bits_on_every_rank_count);
    tcase_add_test(tr, eight_norm_lanes_are_the_same_on_every_rank_count);
    tcase_add_test(tr, norm_is_the_models_own_sum);
    tcase_add_test(tr, same_bits_on_one_and_two_openmp_threads);
    tcase_add_test(tr, export_then_import_continues_the_same_run);
#if MHSA_TEST_SAFETENSORS
    tcase_add_test(tr, resume_on_another_rank_count_gives_the_same_file);
    tcase_add_test(tr, load_errors_reach_every_rank);
#endif
    tcase_add_test(tr, verify_names_the_rank_that_differs);
    tcase_add_test(tr, groups_must_be_a_multiple_of_the_ranks);
    tcase_add_test(tr, steps_allocate_nothing);
    tcase_add_test(tr, gpt_same_bits_on_every_rank_count);
    tcase_add_test(tr, gpt_one_group_is_the_plain_loop);
    tcase_add_test(tr, gpt_norm_is_the_gpts_own_sum);
    suite_add_tcase(s, tr);
    return s;
}

int main(void) { return run_suite(suite()); }
