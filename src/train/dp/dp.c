// dp.c — the data-parallel trainer (mhsa_train.h): set-up of shards and tree
// nodes, one step (groups, reduce-scatter, tree, norm, update, allgather),
// and the weight check. Checkpoints are in dp_ckpt.c.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dp_internal.h"
#include "core/status.h"
#include "core/alloc.h"
#include "train/train_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mhsa_dp_destroy(mhsa_dp_trainer *dp)
{
    if (!dp)
        return;
    MHSA_FREE_ALL(dp->buf, dp->sizes, dp->ints, dp->hashes, dp);
}

void mhsa_dp_set_batch(mhsa_dp_binding *b, const int32_t *tokens,
                       const int32_t *targets, int B, int T)
{
    b->tokens = tokens;
    b->targets = targets;
    b->B = B;
    b->T = T;
    size_t n = (size_t)B * (size_t)T, c = 0;
    for (size_t i = 0; i < n; i++)
        c += targets[i] >= 0;
    b->count = c;
}

// A binding's group_grad: the group's rows with the whole batch's count.
static mhsa_status binding_group_grad(void *ctx, int k, int G, float *loss)
{
    const mhsa_dp_binding *b = ctx;
    if (G < 1 || b->B % G != 0 || k < 0 || k >= G)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: group %d of %d of a batch of "
                          "%d rows (the groups must divide the batch)",
                          b->who, k, G, b->B);
    int rows = b->B / G;
    size_t at = (size_t)k * (size_t)rows * (size_t)b->T;
    return b->rows_grad(b->model, b->tokens + at, b->targets + at, rows,
                        b->T, b->count, loss);
}

mhsa_status mhsa__dp_bind(const char *who, void *model, int n_tensors,
                          mhsa__dp_rows_grad rows_grad, float *param,
                          float *grad, size_t n_params, int norm_lanes,
                          mhsa_dp_model *m, mhsa_dp_binding **out)
{
    mhsa_dp_binding *b = mhsa__alloc(sizeof *b);
    mhsa_dp_tensor *t = mhsa__alloc((size_t)n_tensors * sizeof *t);
    if (!b || !t) {
        MHSA_FREE_ALL(b, t);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: out of memory", who);
    }
    memset(b, 0, sizeof *b);
    memset(t, 0, (size_t)n_tensors * sizeof *t);
    b->tensors = t;
    b->n_tensors = n_tensors;
    b->rows_grad = rows_grad;
    b->model = model;
    b->who = who;
    memset(m, 0, sizeof *m);
    m->param = param;
    m->grad = grad;
    m->n_params = n_params;
    m->tensors = t;
    m->n_tensors = n_tensors;
    m->group_grad = binding_group_grad;
    m->ctx = b;
    m->norm_lanes = norm_lanes;
    *out = b;
    return MHSA_OK;
}

void mhsa_dp_unbind(mhsa_dp_binding *b)
{
    if (b)
        MHSA_FREE_ALL(b->tensors, b);
}

// Shard boundaries: P nearly equal slices of [0, n), inner boundaries on
// 16-float (64-byte) multiples. Only elementwise work ever sees them.
static void plan_shards(size_t n, int P, size_t *off)
{
    for (int q = 0; q <= P; q++) {
        size_t b = n / (size_t)P * (size_t)q +
                   n % (size_t)P * (size_t)q / (size_t)P;
        off[q] = q == P ? n : b / 16 * 16;
    }
}

static mhsa_status check_model(const mhsa_dp_model *m)
{
    if (!m->param || !m->grad || !m->tensors || !m->group_grad ||
        m->n_params < 1 || m->n_tensors < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_create: the model "
                          "lacks parameters, gradients, tensors or "
                          "group_grad");
    if (m->norm_lanes != 0 && m->norm_lanes != 1 && m->norm_lanes != 8)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_create: "
                          "norm_lanes = %d (0 or 1: one running sum; 8: "
                          "eight lanes)",
                          m->norm_lanes);
    size_t at = 0;
    for (int t = 0; t < m->n_tensors; t++) {
        const mhsa_dp_tensor *x = &m->tensors[t];
        size_t prod = x->dims[0] * (x->ndim == 2 ? x->dims[1] : 1);
        if (!x->name || x->offset != at || x->numel != prod ||
            x->ndim < 1 || x->ndim > 2)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_create: tensor %d "
                              "('%s') does not follow the previous one or "
                              "its shape", t, x->name ? x->name : "(null)");
        at += x->numel;
    }
    if (at != m->n_params)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_create: the tensors "
                          "cover %zu of %zu parameters", at, m->n_params);
    return MHSA_OK;
}

// Every rank's tree nodes, in rank order, and the scratch heights.
static mhsa_status plan_nodes(mhsa_dp_trainer *dp, int cap)
{
    int P = dp->comm->size, r = dp->comm->rank, L = dp->G / P, total = 0;
    for (int q = 0; q < P; q++) {
        dp->node_first[q] = (size_t)total;
        int k = mhsa__dp_tree_cover(dp->G, q * L, (q + 1) * L,
                                    dp->node_lo + total, dp->node_hi + total,
                                    cap - total);
        if (total + k > cap)   // cannot happen: cap is the proven bound
            return mhsa__fail(MHSA_ERR_STATE, "mhsa_dp_create: more than %d "
                              "tree nodes", cap);
        total += k;
    }
    dp->node_first[P] = (size_t)total;
    dp->n_nodes = total;
    dp->my_nodes = (int)(dp->node_first[r + 1] - dp->node_first[r]);
    for (size_t j = dp->node_first[r]; j < dp->node_first[r + 1]; j++) {
        int h = mhsa__dp_tree_height(dp->node_hi[j] - dp->node_lo[j]);
        dp->h_local = h > dp->h_local ? h : dp->h_local;
    }
    dp->h_root = mhsa__dp_tree_height(dp->G);
    return MHSA_OK;
}

// Byte counts and displacements of the three collectives of a step.
static void plan_counts(mhsa_dp_trainer *dp)
{
    int P = dp->comm->size, r = dp->comm->rank, L = dp->G / P;
    size_t shard = dp->off[r + 1] - dp->off[r], k = (size_t)dp->my_nodes;
    for (int q = 0; q < P; q++) {
        size_t kq = dp->node_first[q + 1] - dp->node_first[q];
        size_t sq = dp->off[q + 1] - dp->off[q];
        // Send layout: for each destination q, my nodes' slices of q's
        // shard one after the other (with one node: the node itself).
        dp->scount[q] = k * sq * sizeof(float);
        dp->sdispl[q] = k * dp->off[q] * sizeof(float);
        // Receive layout: node k's slice of my shard at recv + k * shard.
        dp->rcount[q] = kq * shard * sizeof(float);
        dp->rdispl[q] = dp->node_first[q] * shard * sizeof(float);
        dp->gcount[q] = sq * sizeof(float);
        dp->gdispl[q] = dp->off[q] * sizeof(float);
        dp->lcount[q] = (size_t)L * sizeof(float);
        dp->ldispl[q] = (size_t)q * (size_t)L * sizeof(float);
        dp->hcount[q] = sizeof(uint64_t);
        dp->hdispl[q] = (size_t)q * sizeof(uint64_t);
    }
}

// Carves dp->buf into the float buffers (sizes as in dp_internal.h).
static void carve(mhsa_dp_trainer *dp, size_t n, size_t shard)
{
    float *p = dp->buf;
    dp->nodes = p;
    p += (size_t)dp->my_nodes * n;
    if (dp->my_nodes > 1) {
        dp->pack = p;
        p += (size_t)dp->my_nodes * n;
    }
    for (int i = 0; i < dp->h_local; i++, p += n)
        dp->scratch_local[i] = p;
    dp->recv = p;
    p += (size_t)dp->n_nodes * shard;
    for (int i = 0; i < dp->h_root; i++, p += shard)
        dp->scratch_root[i] = p;
    dp->gshard = p;
    p += shard;
    dp->mom_m = p;
    p += shard;
    dp->mom_v = p;
    p += shard;
    dp->losses = p;
    p += dp->G;
    for (int i = 0; i < dp->h_root; i++, p++)
        dp->scratch_loss[i] = p;
    dp->loss_out = p;
}

mhsa_status mhsa_dp_create(const mhsa_dp_model *m, mhsa_dp_comm *comm,
                           int groups, mhsa_optim_kind kind,
                           mhsa_dp_trainer **out)
{
    if (!m || !comm || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_create: %s is NULL",
                          !m ? "m" : !comm ? "comm" : "out");
    mhsa_status st = check_model(m);
    if (st != MHSA_OK)
        return st;
    int P = comm->size;
    if (P < 1 || comm->rank < 0 || comm->rank >= P)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_create: rank %d of %d",
                          comm->rank, P);
    if (groups < 1 || groups > DP_MAX_GROUPS || groups % P != 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_create: groups = %d "
                          "(need 1..%d and a multiple of the %d ranks)",
                          groups, DP_MAX_GROUPS, P);
    if (kind != MHSA_OPTIM_ADAMW && kind != MHSA_OPTIM_SGD)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_create: optimiser "
                          "kind %d unknown", (int)kind);
    mhsa_dp_trainer *dp = mhsa__alloc(sizeof *dp);
    if (!dp)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_dp_create: out of memory");
    dp->m = *m;
    dp->comm = comm;
    dp->G = groups;
    dp->kind = kind;
    size_t n = m->n_params, np1 = (size_t)P + 1;
    // A rank's range is covered by at most 2 nodes per level of the tree.
    int cap = P * (2 * mhsa__dp_tree_height(groups) + 2);
    dp->sizes = mhsa__alloc(12 * np1 * sizeof(size_t));
    dp->ints = mhsa__alloc(2 * (size_t)cap * sizeof(int));
    dp->hashes = mhsa__alloc((size_t)P * sizeof(uint64_t));
    if (!dp->sizes || !dp->ints || !dp->hashes) {
        mhsa_dp_destroy(dp);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_dp_create: out of memory");
    }
    size_t **views[] = { &dp->off, &dp->node_first, &dp->scount,
                         &dp->sdispl, &dp->rcount, &dp->rdispl, &dp->gcount,
                         &dp->gdispl, &dp->lcount, &dp->ldispl,
                         &dp->hcount, &dp->hdispl };
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        *views[i] = dp->sizes + i * np1;
    dp->node_lo = dp->ints;
    dp->node_hi = dp->ints + cap;
    plan_shards(n, P, dp->off);
    st = plan_nodes(dp, cap);
    if (st != MHSA_OK) {
        mhsa_dp_destroy(dp);
        return st;
    }
    plan_counts(dp);

    int r = comm->rank;
    size_t shard = dp->off[r + 1] - dp->off[r];
    size_t floats = 0, bytes = 0, mine = (size_t)dp->my_nodes;
    int ok = mhsa__mul_add(&floats, mine * (dp->my_nodes > 1 ? 2 : 1) +
                           (size_t)dp->h_local, n) &&
             mhsa__mul_add(&floats, (size_t)dp->n_nodes +
                           (size_t)dp->h_root + 3, shard) &&
             mhsa__mul_add(&floats, 1, (size_t)groups +
                           (size_t)dp->h_root + 1) &&
             mhsa__mul(floats, sizeof(float), &bytes);
    dp->buf = ok ? mhsa__alloc(bytes) : NULL;
    if (!dp->buf) {
        mhsa_dp_destroy(dp);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_dp_create: out of memory "
                          "(%zu parameters, %d groups)", n, groups);
    }
    carve(dp, n, shard);
    *out = dp;
    return MHSA_OK;
}

int64_t mhsa_dp_steps(const mhsa_dp_trainer *dp) { return dp ? dp->step : 0; }

int mhsa_dp_groups(const mhsa_dp_trainer *dp) { return dp ? dp->G : 0; }

const mhsa_dp_stats *mhsa_dp_get_stats(const mhsa_dp_trainer *dp)
{
    return dp ? &dp->stats : NULL;
}

mhsa_dp_comm *mhsa_dp_get_comm(const mhsa_dp_trainer *dp)
{
    return dp ? dp->comm : NULL;
}

mhsa_status mhsa__dp_comm_fail(const char *what)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s", mhsa_last_error());
    return mhsa__fail(MHSA_ERR_STATE, "%s: %s", what, msg);
}

mhsa_status mhsa_dp_broadcast_params(mhsa_dp_trainer *dp)
{
    if (!dp)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_dp_broadcast_params: dp is NULL");
    mhsa_dp_comm *c = dp->comm;
    if (c->ops->bcast(c, dp->m.param, dp->m.n_params * sizeof(float), 0))
        return mhsa__dp_comm_fail("mhsa_dp_broadcast_params");
    return MHSA_OK;
}

// ---- one step --------------------------------------------------------------

// Leaves of this rank's nodes: run the group and keep its gradient.
static int local_source(void *ctx, int lo, int hi, float *out,
                        const float **v)
{
    mhsa_dp_trainer *dp = ctx;
    if (hi - lo != 1)
        return 0;
    double t0 = now_s();
    float loss = 0.0f;
    if (dp->m.group_grad(dp->m.ctx, lo, dp->G, &loss) != MHSA_OK)
        return -1;
    dp->losses[lo] = loss;
    memcpy(out, dp->m.grad, dp->m.n_params * sizeof(float));
    *v = out;
    dp->t_compute += now_s() - t0;
    return 1;
}

// The nodes received from every rank (slices of my shard in dp->recv), in
// left-to-right order. The tree is walked depth first, left first, so the
// next node asked for starts where the last one taken ended: it is either
// the next received node or one of its ancestors (which gets split).
static int remote_source(void *ctx, int lo, int hi, float *out,
                         const float **v)
{
    mhsa_dp_trainer *dp = ctx;
    (void)out;
    int k = dp->cursor;
    if (k >= dp->n_nodes || dp->node_lo[k] != lo)
        return -1;   // cannot happen: the nodes tile [0, G)
    if (dp->node_hi[k] != hi)
        return 0;
    int r = dp->comm->rank;
    *v = dp->recv + (size_t)k * (dp->off[r + 1] - dp->off[r]);
    dp->cursor++;
    return 1;
}

// The groups' losses, gathered into dp->losses.
static int loss_source(void *ctx, int lo, int hi, float *out,
                       const float **v)
{
    mhsa_dp_trainer *dp = ctx;
    (void)out;
    if (hi - lo != 1)
        return 0;
    *v = dp->losses + lo;
    return 1;
}

// The model's own squared-norm sum, so that G = 1 clips exactly as its
// plain step: one running double sum in parameter order (norm_lanes 1,
// mhsa_lm_step), or eight interleaved lanes, element i into lane i % 8,
// closed by a fixed tree (norm_lanes 8, mhsa_gpt_step). Rank q continues
// the running lanes of rank q - 1 over its shard (8 doubles each way), so
// the chain of additions is exactly the single process's.
static int grad_norm(mhsa_dp_trainer *dp, const float *g, double *norm)
{
    mhsa_dp_comm *c = dp->comm;
    int r = c->rank, P = c->size;
    double acc[8] = { 0 };
    if (r > 0 && c->ops->recv(c, acc, sizeof acc, r - 1))
        return -1;
    size_t s0 = dp->off[r], shard = dp->off[r + 1] - s0;
    if (dp->m.norm_lanes == 8) {
        for (size_t i = 0; i < shard; i++)
            acc[(s0 + i) % 8] += (double)g[i] * (double)g[i];
    } else {
        for (size_t i = 0; i < shard; i++)
            acc[0] += (double)g[i] * (double)g[i];
    }
    if (r + 1 < P && c->ops->send(c, acc, sizeof acc, r + 1))
        return -1;
    if (c->ops->bcast(c, acc, sizeof acc, P - 1))
        return -1;
    *norm = dp->m.norm_lanes == 8
            ? sqrt(((acc[0] + acc[4]) + (acc[2] + acc[6])) +
                   ((acc[1] + acc[5]) + (acc[3] + acc[7])))
            : sqrt(acc[0]);
    return 0;
}

// 1. This rank's groups, summed up to its whole nodes, in send layout.
static mhsa_status local_nodes(mhsa_dp_trainer *dp)
{
    int r = dp->comm->rank, P = dp->comm->size, k = dp->my_nodes;
    size_t n = dp->m.n_params;
    for (int j = 0; j < k; j++) {
        size_t node = dp->node_first[r] + (size_t)j;
        float *dst = dp->nodes + (size_t)j * n;
        const float *res;
        if (mhsa__dp_tree_sum(dp->node_lo[node], dp->node_hi[node], n,
                              local_source, dp, dst, dp->scratch_local,
                              &res) != 0)
            return mhsa__dp_comm_fail("mhsa_dp_step: a group's gradient");
        if (res != dst)
            memcpy(dst, res, n * sizeof(float));
    }
    if (k == 1)
        return MHSA_OK;   // one node is its own send layout
    float *p = dp->pack;
    for (int q = 0; q < P; q++) {
        size_t a = dp->off[q], len = dp->off[q + 1] - a;
        for (int j = 0; j < k; j++, p += len)
            memcpy(p, dp->nodes + (size_t)j * n + a, len * sizeof(float));
    }
    return MHSA_OK;
}

// 4. mhsa_optim_update on my shard, tensor by tensor (decay differs).
static void update_shard(mhsa_dp_trainer *dp, const mhsa_optim_config *cfg,
                         const float *g, float scale)
{
    int r = dp->comm->rank;
    size_t s0 = dp->off[r], s1 = dp->off[r + 1];
    int adam = dp->kind == MHSA_OPTIM_ADAMW;
    for (int t = 0; t < dp->m.n_tensors; t++) {
        const mhsa_dp_tensor *x = &dp->m.tensors[t];
        size_t a = x->offset > s0 ? x->offset : s0;
        size_t b = x->offset + x->numel < s1 ? x->offset + x->numel : s1;
        if (a >= b)
            continue;
        size_t o = a - s0;
        // Cannot fail: cfg was checked by mhsa_dp_step.
        mhsa_optim_update(cfg, dp->step, b - a, dp->m.param + a, g + o,
                          adam ? dp->mom_m + o : NULL,
                          adam ? dp->mom_v + o : NULL, scale, x->decay);
    }
}

mhsa_status mhsa_dp_step(mhsa_dp_trainer *dp, const mhsa_optim_config *cfg,
                         float *loss, float *grad_norm_out)
{
    if (!dp || !loss)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_step: %s is NULL",
                          !dp ? "dp" : "loss");
    mhsa_status st = mhsa__optim_check(cfg, "mhsa_dp_step");
    if (st != MHSA_OK)
        return st;
    if (cfg->kind != dp->kind)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_step: cfg->kind = %d, "
                          "the trainer was made for %d", (int)cfg->kind,
                          (int)dp->kind);
    mhsa_dp_comm *c = dp->comm;
    int r = c->rank;
    size_t shard = dp->off[r + 1] - dp->off[r];
    double t0 = now_s();
    dp->t_compute = 0.0;
    st = local_nodes(dp);
    if (st != MHSA_OK)
        return st;
    // Every rank arrives here when its groups are done: an 8-byte
    // allgather holds them until the last one does, so that the time spent
    // waiting for a slower rank is not counted as reduction.
    double tw = now_s();
    if (c->size > 1 &&
        c->ops->allgatherv(c, dp->hashes, dp->hcount, dp->hdispl))
        return mhsa__dp_comm_fail("mhsa_dp_step: waiting for the ranks");
    double wait = now_s() - tw;

    // 2. Reduce-scatter as bytes, then the rest of the tree on my shard;
    // the groups' losses by the same tree.
    const float *g = NULL, *l = NULL;
    if (c->ops->alltoallv(c, dp->my_nodes > 1 ? dp->pack : dp->nodes,
                          dp->scount, dp->sdispl, dp->recv, dp->rcount,
                          dp->rdispl) ||
        c->ops->allgatherv(c, dp->losses, dp->lcount, dp->ldispl))
        return mhsa__dp_comm_fail("mhsa_dp_step: reduce-scatter");
    dp->cursor = 0;
    if (mhsa__dp_tree_sum(0, dp->G, shard, remote_source, dp, dp->gshard,
                          dp->scratch_root, &g) != 0 ||
        mhsa__dp_tree_sum(0, dp->G, 1, loss_source, dp, dp->loss_out,
                          dp->scratch_loss, &l) != 0)
        return mhsa__fail(MHSA_ERR_STATE, "mhsa_dp_step: the received tree "
                          "nodes do not tile the %d groups", dp->G);

    // 3. Norm and clipping factor, exactly as mhsa_lm_step.
    double norm = 0.0;
    if ((cfg->clip_norm > 0.0f || grad_norm_out) && grad_norm(dp, g, &norm))
        return mhsa__dp_comm_fail("mhsa_dp_step: gradient norm");
    dp->last_norm = norm;
    float scale = 1.0f;
    if (cfg->clip_norm > 0.0f && norm > (double)cfg->clip_norm)
        scale = (float)((double)cfg->clip_norm / (norm + 1e-6));
    double t1 = now_s();

    dp->step++;
    update_shard(dp, cfg, g, scale);
    double t2 = now_s();

    // 5. Everyone gets everyone's updated shard.
    if (c->ops->allgatherv(c, dp->m.param, dp->gcount, dp->gdispl))
        return mhsa__dp_comm_fail("mhsa_dp_step: parameter allgather");
    double t3 = now_s();

    dp->stats.compute += dp->t_compute;
    dp->stats.wait += wait;
    dp->stats.reduce += t1 - t0 - dp->t_compute - wait;
    dp->stats.update += t2 - t1;
    dp->stats.gather += t3 - t2;
    dp->stats.steps++;
    *loss = *l;
    if (grad_norm_out)
        *grad_norm_out = (float)norm;
    return MHSA_OK;
}

// ---- weight check ----------------------------------------------------------

// FNV-1a over the parameters' 32-bit words: a change of any bit changes it
// (up to 2^-64), which is all a consistency check needs.
static uint64_t hash_params(const float *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        uint32_t w;
        memcpy(&w, &p[i], sizeof w);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return h;
}

mhsa_status mhsa_dp_verify(mhsa_dp_trainer *dp)
{
    if (!dp)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_dp_verify: dp is NULL");
    mhsa_dp_comm *c = dp->comm;
    int P = c->size;
    for (int q = 0; q < P; q++)
        dp->hashes[q] = 0;
    dp->hashes[c->rank] = hash_params(dp->m.param, dp->m.n_params);
    if (c->ops->allgatherv(c, dp->hashes, dp->hcount, dp->hdispl))
        return mhsa__dp_comm_fail("mhsa_dp_verify");
    for (int q = 1; q < P; q++)
        if (dp->hashes[q] != dp->hashes[0])
            return mhsa__fail(MHSA_ERR_STATE, "the weights of rank %d differ "
                              "from rank 0's after step %lld (hash %016llx, "
                              "rank 0 %016llx): the ranks no longer train "
                              "the same model", q, (long long)dp->step,
                              (unsigned long long)dp->hashes[q],
                              (unsigned long long)dp->hashes[0]);
    return MHSA_OK;
}
