// model.c — the tiny attention language model of mhsa_train.h: embeddings,
// the mhsa block, an LM head and cross-entropy; forward, backward and the
// optimiser step over all of its parameters.
//
// Forward, with N = B*T rows:
//   x      (N, D) = tok_emb[tokens] + pos_emb[t]
//   y      (N, D) = mhsa_forward(x)            causal, biases
//   logits (N, V) = y @ head_w^T + head_b
//   loss          = mhsa_cross_entropy(logits, targets), which also leaves
//                   dlogits (N, V) ready for the backward
// Backward:
//   g_head_w (V, D) = dlogits^T @ y;  g_head_b (V) = column sums of dlogits
//   dy (N, D)       = dlogits @ head_w
//   dx (N, D), block grads = mhsa_backward(dy)
//   g_tok_emb[tokens[n]] += dx[n];  g_pos_emb[t(n)] += dx[n]   (scatter-add)
//
// Determinism: the GEMMs go through the one driver (src/gemm/gemm.c), which never
// splits K by thread count; the bias column sums and the scatter-adds run
// sequentially in row order; the global gradient norm is summed in double in
// tensor order. So the bits do not depend on OMP_NUM_THREADS.
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/fpenv.h"
#include "gemm/gemm.h"
#include "core/status.h"
#include "core/alloc.h"
#include "gemm/gemm.h"
#include "train_internal.h"

enum {
    T_TOK, T_POS, T_WQKV, T_BQKV, T_WOUT, T_BOUT, T_HEADW, T_HEADB,
    N_TENSORS
};

static const char *const tensor_names[N_TENSORS] = {
    "tok_emb.weight", "pos_emb.weight", "attn.in_proj_weight",
    "attn.in_proj_bias", "attn.out_proj.weight", "attn.out_proj.bias",
    "lm_head.weight", "lm_head.bias",
};

struct mhsa_lm {
    mhsa_lm_config cfg;
    const mhsa_kernels *k;     // the ISA active at creation
    mhsa_block *blk;
    mhsa_workspace *ws;
    mhsa_grads *bg;            // the block's gradients, copied into grad

    // One flat buffer each, tensors back to back in tensor_names order.
    size_t n_params;
    float *param, *grad, *m, *v;
    size_t off[N_TENSORS + 1];
    int64_t shape[N_TENSORS][2];
    int64_t step;              // optimiser updates made so far

    // Saved by the forward for the backward.
    int32_t *tokens, *targets;  // (Bmax * Tmax)
    float *x, *y, *logits, *dlogits, *dy, *dx;
    int B, T, have_forward;

    float *attn_x, *attn_y;    // (Tmax, D) for mhsa_lm_attention
    mhsa_gemm_scratch gs;
    float *gemm_buf;
};

// The rank-2 tensors: the ones weight decay applies to.
static int is_matrix(int t)
{
    return t == T_TOK || t == T_POS || t == T_WQKV || t == T_WOUT ||
           t == T_HEADW;
}

static float *P(const mhsa_lm *lm, int t) { return lm->param + lm->off[t]; }
static float *G(const mhsa_lm *lm, int t) { return lm->grad + lm->off[t]; }

void mhsa_lm_destroy(mhsa_lm *lm)
{
    if (!lm)
        return;
    mhsa_grads_destroy(lm->bg);
    mhsa_workspace_destroy(lm->ws);
    mhsa_block_destroy(lm->blk);
    MHSA_FREE_ALL(lm->param, lm->tokens, lm->x, lm->gemm_buf, lm);
}

// Rows of the block's w_qkv: D for Q, Hkv*dh for each of K and V.
static int64_t qkv_rows(const mhsa_lm_config *c)
{
    int64_t hkv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
    return c->d_model + 2 * hkv * (c->d_model / c->n_heads);
}

// Sizes of every buffer, overflow-checked; 0 if something overflows.
static int plan_sizes(mhsa_lm *lm, size_t *act_floats, size_t *gemm_floats)
{
    const mhsa_lm_config *c = &lm->cfg;
    size_t V = (size_t)c->vocab, D = (size_t)c->d_model;
    size_t Tm = (size_t)c->max_seq_len;
    int64_t qkv = qkv_rows(c);
    int64_t shapes[N_TENSORS][2] = {
        { c->vocab, c->d_model }, { c->max_seq_len, c->d_model },
        { qkv, c->d_model }, { qkv, 1 },
        { c->d_model, c->d_model }, { c->d_model, 1 },
        { c->vocab, c->d_model }, { c->vocab, 1 },
    };
    memcpy(lm->shape, shapes, sizeof shapes);
    size_t total = 0;
    for (int t = 0; t < N_TENSORS; t++) {
        lm->off[t] = total;
        if (!mhsa__mul_add(&total, (size_t)shapes[t][0], (size_t)shapes[t][1]))
            return 0;
    }
    lm->off[N_TENSORS] = total;
    lm->n_params = total;

    size_t N, nd, nv, acts = 0;
    if (!mhsa__mul((size_t)c->max_batch, Tm, &N) || !mhsa__mul(N, D, &nd) ||
        !mhsa__mul(N, V, &nv))
        return 0;
    // x, y, dy, dx (N, D); logits, dlogits (N, V); attn_x, attn_y (Tm, D)
    if (!mhsa__mul_add(&acts, 4, nd) || !mhsa__mul_add(&acts, 2, nv) ||
        !mhsa__mul_add(&acts, 2 * Tm, D))
        return 0;
    *act_floats = acts;

    size_t nmax = V > D ? V : D;
    size_t a = mhsa_gemm_a_floats(lm->k), b = mhsa_gemm_b_floats(lm->k, nmax);
    size_t g = b;
    if (!b || !mhsa__mul_add(&g, (size_t)lm->gs.max_threads, a))
        return 0;
    *gemm_floats = g;
    return 1;
}

mhsa_status mhsa_lm_create(const mhsa_lm_config *cfg, mhsa_lm **out)
{
    if (!cfg || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_lm_create: %s is NULL",
                          !cfg ? "cfg" : "out");
    const struct { const char *name; int v; } sz[] = {
        { "vocab", cfg->vocab }, { "d_model", cfg->d_model },
        { "n_heads", cfg->n_heads }, { "max_seq_len", cfg->max_seq_len },
        { "max_batch", cfg->max_batch },
    };
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
        if (sz[i].v < 1)
            return mhsa__fail(MHSA_ERR_INVALID_ARG,
                              "mhsa_lm_create: cfg->%s = %d (need >= 1)",
                              sz[i].name, sz[i].v);
    if (cfg->d_model % cfg->n_heads != 0)
        return mhsa__fail(MHSA_ERR_SHAPE, "mhsa_lm_create: d_model = %d is "
                          "not a multiple of n_heads = %d", cfg->d_model,
                          cfg->n_heads);
    // The block checks the other attention fields; the K/V heads are
    // needed here already, for the shapes of the parameters.
    if (cfg->n_kv_heads < 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_lm_create: "
                          "cfg->n_kv_heads = %d (need >= 0)",
                          cfg->n_kv_heads);
    if (cfg->n_kv_heads && cfg->n_heads % cfg->n_kv_heads != 0)
        return mhsa__fail(MHSA_ERR_SHAPE, "mhsa_lm_create: n_heads = %d is "
                          "not a multiple of n_kv_heads = %d", cfg->n_heads,
                          cfg->n_kv_heads);
    if (cfg->d_model > INT32_MAX / 3)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_lm_create: d_model = %d "
                          "too large", cfg->d_model);

    mhsa_lm *lm = mhsa__alloc(sizeof *lm);
    if (!lm)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_lm_create: out of memory");
    lm->cfg = *cfg;
    lm->k = mhsa__kernels();
    lm->gs.max_threads = omp_get_max_threads();
    if (lm->gs.max_threads < 1)
        lm->gs.max_threads = 1;

    size_t acts = 0, gemm = 0, n4 = 0, bytes = 0;
    size_t ntok;
    if (!plan_sizes(lm, &acts, &gemm) || !mhsa__mul(lm->n_params, 4, &n4) ||
        !mhsa__mul((size_t)cfg->max_batch, (size_t)cfg->max_seq_len, &ntok) ||
        !mhsa__mul(n4, sizeof(float), &bytes) ||
        !mhsa__mul(acts, sizeof(float), &bytes) ||
        !mhsa__mul(gemm, sizeof(float), &bytes) ||
        !mhsa__mul(ntok, 2 * sizeof(int32_t), &bytes)) {
        mhsa__free(lm);
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "mhsa_lm_create: sizes overflow size_t");
    }

    mhsa_config bc = { 0 };
    bc.d_model = cfg->d_model;
    bc.n_heads = cfg->n_heads;
    bc.max_seq_len = cfg->max_seq_len;
    bc.causal = 1;
    bc.bias = 1;
    bc.n_kv_heads = cfg->n_kv_heads;
    bc.rope_dim = cfg->rope_dim;
    bc.rope_theta = cfg->rope_theta;
    bc.rope_interleaved = cfg->rope_interleaved;
    bc.window = cfg->window;
    bc.compute_dtype = cfg->compute_dtype;   // the block validates it
    mhsa_status st = mhsa_block_create(&bc, &lm->blk);
    if (st == MHSA_OK)
        st = mhsa_workspace_create(lm->blk, cfg->max_batch, &lm->ws);
    if (st == MHSA_OK)
        st = mhsa_grads_create(lm->blk, &lm->bg);
    if (st != MHSA_OK) {
        mhsa_lm_destroy(lm);
        return st;   // the block's message names the problem
    }

    lm->param = mhsa__alloc(n4 * sizeof(float));
    lm->tokens = mhsa__alloc(ntok * 2 * sizeof(int32_t));
    lm->x = mhsa__alloc(acts * sizeof(float));
    lm->gemm_buf = mhsa__alloc(gemm * sizeof(float));
    if (!lm->param || !lm->tokens || !lm->x || !lm->gemm_buf) {
        mhsa_lm_destroy(lm);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_lm_create: out of memory");
    }
    // Carve the flat buffers into named views (llm.c style).
    lm->grad = lm->param + lm->n_params;
    lm->m = lm->grad + lm->n_params;
    lm->v = lm->m + lm->n_params;
    lm->targets = lm->tokens + ntok;
    size_t N = ntok, D = (size_t)cfg->d_model, V = (size_t)cfg->vocab;
    lm->y = lm->x + N * D;
    lm->dy = lm->y + N * D;
    lm->dx = lm->dy + N * D;
    lm->logits = lm->dx + N * D;
    lm->dlogits = lm->logits + N * V;
    lm->attn_x = lm->dlogits + N * V;
    lm->attn_y = lm->attn_x + (size_t)cfg->max_seq_len * D;
    lm->gs.b = lm->gemm_buf;
    lm->gs.b_floats = mhsa_gemm_b_floats(lm->k, V > D ? V : D);
    lm->gs.a = lm->gemm_buf + lm->gs.b_floats;
    *out = lm;
    return MHSA_OK;
}

const mhsa_lm_config *mhsa_lm_get_config(const mhsa_lm *lm)
{
    return lm ? &lm->cfg : NULL;
}

int mhsa_lm_n_tensors(const mhsa_lm *lm) { return lm ? N_TENSORS : 0; }

size_t mhsa_lm_n_params(const mhsa_lm *lm) { return lm ? lm->n_params : 0; }

mhsa_status mhsa_lm_get_tensor(const mhsa_lm *lm, int i, mhsa_lm_tensor *out)
{
    if (!lm || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_lm_get_tensor: %s is NULL",
                          !lm ? "lm" : "out");
    if (i < 0 || i >= N_TENSORS)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_lm_get_tensor: i = %d "
                          "outside [0, %d)", i, N_TENSORS);
    out->name = tensor_names[i];
    out->rank = is_matrix(i) ? 2 : 1;
    out->shape[0] = lm->shape[i][0];
    out->shape[1] = lm->shape[i][1];
    out->numel = lm->off[i + 1] - lm->off[i];
    out->data = P(lm, i);
    out->grad = G(lm, i);
    return MHSA_OK;
}

static mhsa_status lm_init_random(mhsa_lm *lm, uint64_t seed)
{
    if (!lm)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_lm_init_random: lm is NULL");
    uint64_t s = seed;
    size_t D = (size_t)lm->cfg.d_model;
    // The block draws from its own seed, derived so that it does not share
    // a stream with the embeddings.
    mhsa_status st = mhsa_block_init_random(lm->blk, mhsa__splitmix64(&s));
    if (st != MHSA_OK)
        return st;
    st = mhsa_block_get_weights(lm->blk, P(lm, T_WQKV), P(lm, T_BQKV),
                                P(lm, T_WOUT), P(lm, T_BOUT));
    if (st != MHSA_OK)
        return st;
    mhsa__fill_uniform(&s, P(lm, T_TOK), lm->off[T_TOK + 1] - lm->off[T_TOK],
                       1.0f);
    mhsa__fill_uniform(&s, P(lm, T_POS), lm->off[T_POS + 1] - lm->off[T_POS],
                       1.0f);
    mhsa__fill_uniform(&s, P(lm, T_HEADW),
                       lm->off[T_HEADW + 1] - lm->off[T_HEADW],
                       1.0f / sqrtf((float)D));
    memset(P(lm, T_HEADB), 0, (size_t)lm->cfg.vocab * sizeof(float));
    memset(lm->grad, 0, 3 * lm->n_params * sizeof(float));   // grad, m, v
    lm->step = 0;
    lm->have_forward = 0;
    return MHSA_OK;
}

mhsa_status mhsa_lm_init_random(mhsa_lm *lm, uint64_t seed)
{
    MHSA__FP_RETURN(lm_init_random(lm, seed));
}

// x (T, D) rows of one sequence: token embedding plus position embedding.
static void embed(const mhsa_lm *lm, const int32_t *tok, int T, float *x)
{
    size_t D = (size_t)lm->cfg.d_model;
    const float *te = P(lm, T_TOK), *pe = P(lm, T_POS);
    for (int t = 0; t < T; t++) {
        const float *a = te + (size_t)tok[t] * D, *b = pe + (size_t)t * D;
        for (size_t d = 0; d < D; d++)
            x[(size_t)t * D + d] = a[d] + b[d];
    }
}

// The flat parameters are the source of truth: push the block's part into
// the block (a copy and a repack of 4 D^2 floats, small next to a step).
static mhsa_status sync_block(mhsa_lm *lm)
{
    return mhsa_block_set_weights(lm->blk, P(lm, T_WQKV), P(lm, T_BQKV),
                                  P(lm, T_WOUT), P(lm, T_BOUT));
}

// The checks of a forward over B rows of T tokens (targets NULL: none),
// then the block synced to the flat parameters; fn names the public call.
static mhsa_status forward_ready(mhsa_lm *lm, const char *fn,
                                 const int32_t *tokens,
                                 const int32_t *targets, int B, int T)
{
    mhsa_status st = mhsa__check_batch(fn, B, T, lm->cfg.max_batch,
                                       lm->cfg.max_seq_len, "max_seq_len");
    size_t N = (size_t)B * (size_t)T;
    if (st == MHSA_OK)
        st = mhsa__check_ids(fn, "tokens", tokens, N, 0, lm->cfg.vocab);
    if (st == MHSA_OK && targets)
        st = mhsa__check_ids(fn, "targets", targets, N, -1, lm->cfg.vocab);
    if (st == MHSA_OK)
        st = sync_block(lm);
    return st;
}

void mhsa__lm_flat(mhsa_lm *lm, float **param, float **grad)
{
    *param = lm->param;
    *grad = lm->grad;
}

static mhsa_status lm_forward(mhsa_lm *lm, const int32_t *tokens,
                              const int32_t *targets, int B, int T,
                              float *loss, float *pos_loss)
{
    return mhsa__lm_forward_over(lm, tokens, targets, B, T, 0, loss,
                                 pos_loss);
}

mhsa_status mhsa_lm_forward(mhsa_lm *lm, const int32_t *tokens,
                            const int32_t *targets, int B, int T,
                            float *loss, float *pos_loss)
{
    MHSA__FP_RETURN(lm_forward(lm, tokens, targets, B, T, loss, pos_loss));
}

mhsa_status mhsa__lm_forward_over(mhsa_lm *lm, const int32_t *tokens,
                                  const int32_t *targets, int B, int T,
                                  size_t count, float *loss, float *pos_loss)
{
    static const char fn[] = "mhsa_lm_forward";
    if (!lm || !tokens || !targets || !loss)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !lm ? "lm" : !tokens ? "tokens"
                          : !targets ? "targets" : "loss");
    mhsa_status st = forward_ready(lm, fn, tokens, targets, B, T);
    if (st != MHSA_OK)
        return st;
    size_t N = (size_t)B * (size_t)T;
    lm->have_forward = 0;
    size_t D = (size_t)lm->cfg.d_model, V = (size_t)lm->cfg.vocab;
    memcpy(lm->tokens, tokens, N * sizeof(int32_t));
    memcpy(lm->targets, targets, N * sizeof(int32_t));
    for (int b = 0; b < B; b++)
        embed(lm, lm->tokens + (size_t)b * (size_t)T, T,
              lm->x + (size_t)b * (size_t)T * D);

    st = mhsa_forward(lm->blk, lm->ws, lm->x, B, T, NULL, lm->y, NULL);
    if (st != MHSA_OK)
        return st;

    // logits = head_b (broadcast) + y @ head_w^T
    const float *hb = P(lm, T_HEADB);
    for (size_t n = 0; n < N; n++)
        memcpy(lm->logits + n * V, hb, V * sizeof(float));
    mhsa_dtype cd = (mhsa_dtype)lm->cfg.compute_dtype;
    mhsa_sgemm_cd(lm->k, cd, &lm->gs, 0, 1, N, V, D, 1.0f, lm->y, D,
                  P(lm, T_HEADW), MHSA_F32, D, NULL, 1.0f, lm->logits, V);

    float l = 0.0f;
    st = mhsa__cross_entropy_over((int)N, (int)V, lm->logits, lm->targets,
                                  count, &l, pos_loss, lm->dlogits);
    if (st != MHSA_OK)
        return st;
    lm->B = B;
    lm->T = T;
    lm->have_forward = 1;
    *loss = l;
    return MHSA_OK;
}

static mhsa_status lm_backward(mhsa_lm *lm)
{
    if (!lm)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_lm_backward: lm is NULL");
    if (!lm->have_forward)
        return mhsa__fail(MHSA_ERR_STATE, "mhsa_lm_backward: no forward to "
                          "differentiate (call mhsa_lm_forward first)");
    size_t B = (size_t)lm->B, T = (size_t)lm->T, N = B * T;
    size_t D = (size_t)lm->cfg.d_model, V = (size_t)lm->cfg.vocab;

    // dy = dlogits @ head_w: computed before anything is overwritten, so a
    // failing block backward leaves every gradient untouched.
    mhsa_dtype cd = (mhsa_dtype)lm->cfg.compute_dtype;
    mhsa_sgemm_cd(lm->k, cd, &lm->gs, 0, 0, N, D, V, 1.0f, lm->dlogits, V,
                  P(lm, T_HEADW), MHSA_F32, D, NULL, 0.0f, lm->dy, D);
    mhsa_grads_zero(lm->bg);
    mhsa_status st = mhsa_backward(lm->blk, lm->ws, lm->dy, lm->dx, lm->bg);
    if (st != MHSA_OK)
        return st;

    // Head: g_w = dlogits^T @ y; g_b = column sums in row order.
    mhsa_sgemm_cd(lm->k, cd, &lm->gs, 1, 0, V, D, N, 1.0f, lm->dlogits, V,
                  lm->y, MHSA_F32, D, NULL, 0.0f, G(lm, T_HEADW), D);
    float *gb = G(lm, T_HEADB);
    memset(gb, 0, V * sizeof(float));
    for (size_t n = 0; n < N; n++)
        for (size_t j = 0; j < V; j++)
            gb[j] += lm->dlogits[n * V + j];

    size_t qkv = (size_t)qkv_rows(&lm->cfg);
    memcpy(G(lm, T_WQKV), lm->bg->w_qkv, qkv * D * sizeof(float));
    memcpy(G(lm, T_BQKV), lm->bg->b_qkv, qkv * sizeof(float));
    memcpy(G(lm, T_WOUT), lm->bg->w_out, D * D * sizeof(float));
    memcpy(G(lm, T_BOUT), lm->bg->b_out, D * sizeof(float));

    // Embeddings: scatter-add in row order (a token may repeat, so the
    // order fixes the bits).
    float *gt = G(lm, T_TOK), *gp = G(lm, T_POS);
    memset(gt, 0, (lm->off[T_TOK + 1] - lm->off[T_TOK]) * sizeof(float));
    memset(gp, 0, (lm->off[T_POS + 1] - lm->off[T_POS]) * sizeof(float));
    for (size_t n = 0; n < N; n++) {
        const float *dxn = lm->dx + n * D;
        float *a = gt + (size_t)lm->tokens[n] * D, *p = gp + (n % T) * D;
        for (size_t d = 0; d < D; d++) {
            a[d] += dxn[d];
            p[d] += dxn[d];
        }
    }
    return MHSA_OK;
}

mhsa_status mhsa_lm_backward(mhsa_lm *lm)
{
    MHSA__FP_RETURN(lm_backward(lm));
}

// Tensor t's slice of the flat buffers, for mhsa__optim_step.
static mhsa__slice lm_slice(const void *ctx, int t)
{
    const mhsa_lm *lm = ctx;
    return (mhsa__slice){ lm->off[t], lm->off[t + 1] - lm->off[t],
                          is_matrix(t) };
}

static mhsa_status lm_step(mhsa_lm *lm, const mhsa_optim_config *cfg,
                           float *grad_norm)
{
    mhsa_status st = mhsa__optim_check_step("mhsa_lm_step", lm, "lm", cfg);
    if (st != MHSA_OK)
        return st;
    double ss = 0.0;
    for (size_t i = 0; i < lm->n_params; i++)
        ss += (double)lm->grad[i] * (double)lm->grad[i];
    return mhsa__optim_step(cfg, sqrt(ss), &lm->step, lm->param, lm->grad,
                            lm->m, lm->v, N_TENSORS, lm_slice, lm,
                            grad_norm);
}

mhsa_status mhsa_lm_step(mhsa_lm *lm, const mhsa_optim_config *cfg,
                         float *grad_norm)
{
    MHSA__FP_RETURN(lm_step(lm, cfg, grad_norm));
}

static mhsa_status lm_attention(mhsa_lm *lm, const int32_t *tokens, int T,
                                float *attn)
{
    static const char fn[] = "mhsa_lm_attention";
    if (!lm || !tokens || !attn)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !lm ? "lm" : !tokens ? "tokens" : "attn");
    mhsa_status st = forward_ready(lm, fn, tokens, NULL, 1, T);
    if (st != MHSA_OK)
        return st;
    // The workspace's recorded forward is replaced by this one.
    lm->have_forward = 0;
    embed(lm, tokens, T, lm->attn_x);
    return mhsa_forward(lm->blk, lm->ws, lm->attn_x, 1, T, NULL, lm->attn_y,
                        attn);
}

mhsa_status mhsa_lm_attention(mhsa_lm *lm, const int32_t *tokens, int T,
                              float *attn)
{
    MHSA__FP_RETURN(lm_attention(lm, tokens, T, attn));
}
