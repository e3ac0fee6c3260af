// gpt.c — the GPT of mhsa_train.h: creation (every buffer, once),
// initialisation, forward, backward and the optimiser step.
//
// Forward, N = B*T rows, layer l of L (pre-norm, GPT-2):
//   x_0            = wte[tokens] + wpe[t]                      (N, D)
//   ln1            = ln_1(x_l)
//   att            = mhsa_forward(block_l, ln1)    causal; QKV, heads, c_proj
//   xmid           = x_l + att
//   ln2            = ln_2(xmid)
//   fch            = ln2 c_fc^T + b                            (N, 4D)
//   x_{l+1}        = xmid + gelu(fch) c_proj^T + b
//   logits         = ln_f(x_L) lm_head^T                       (N, V)
//   loss           = sum of -log softmax(logits)[target] / norm
// Backward runs the same steps in reverse; dres holds d loss / d x_l, to
// which each residual branch adds its input gradient (llm.c's layout).
//
// The attention of each layer is a public mhsa_block; its weights live in
// the flat parameters (c_q, c_k, c_v back to back = w_qkv) and are copied
// into the block before each forward. With no_proj the block's output
// projection is held at the identity with a zero bias, never updated: the
// block then returns its heads' concatenated outputs exactly (x * 1 + 0 is
// exact), which is the model without c_proj (at the cost of one D x D
// product per token, which the block API has no switch to skip).
//
// 16-bit weights (cfg.weight_dtype F16 / BF16): the blocks store their
// weights rounded (mhsa_config.weight_dtype), and the model's other matrices
// (wte, wpe, c_fc, mlp.c_proj, lm_head) live in a 16-bit store beside the
// fp32 parameters, rounded from them by mhsa__gpt_sync_weights whenever the
// blocks are synced; the forward reads only the store (the embedding rows
// widened, the products through mhsa__linear_forward_dt). Training refuses
// such a model: its gradients would belong to the rounded weights, and the
// fp32 parameters are what an optimiser updates.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/fpenv.h"
#include "gpt_internal.h"
#include "train_internal.h"

static const char *const layer_names[] = {
    "ln_1.weight", "ln_1.bias", "attn.c_q.weight", "attn.c_k.weight",
    "attn.c_v.weight", "attn.c_q.bias", "attn.c_k.bias", "attn.c_v.bias",
    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
    "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
    "mlp.c_proj.bias",
};
enum { N_LAYER_NAMES = sizeof layer_names / sizeof layer_names[0] };

void mhsa_gpt_destroy(mhsa_gpt *g)
{
    if (!g)
        return;
    for (size_t l = 0; l < g->L; l++) {
        if (g->bg)
            mhsa_grads_destroy(g->bg[l]);
        if (g->ws)
            mhsa_workspace_destroy(g->ws[l]);
        if (g->blk)
            mhsa_block_destroy(g->blk[l]);
    }
    MHSA_FREE_ALL(g->bg, g->ws, g->blk, g->identity, g->w16, g->param,
                  g->tensors, g->names, g->lo, g->la, g->acts, g->tokens,
                  g->gemm_buf, g);
}

static mhsa_status check_config(const mhsa_gpt_config *c)
{
    const struct { const char *name; int v; } sz[] = {
        { "vocab", c->vocab }, { "n_layer", c->n_layer },
        { "n_embd", c->n_embd }, { "n_head", c->n_head },
        { "block_size", c->block_size }, { "max_batch", c->max_batch },
    };
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
        if (sz[i].v < 1)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_create: "
                              "cfg->%s = %d (need >= 1)", sz[i].name,
                              sz[i].v);
    if (c->n_embd % c->n_head != 0)
        return mhsa__fail(MHSA_ERR_SHAPE, "mhsa_gpt_create: n_embd = %d is "
                          "not a multiple of n_head = %d", c->n_embd,
                          c->n_head);
    int dh = c->n_embd / c->n_head;
    if (c->rope_dim < 0 || c->rope_dim % 2 || c->rope_dim > dh)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_create: "
                          "cfg->rope_dim = %d (need 0, or even and <= "
                          "n_embd / n_head = %d)", c->rope_dim, dh);
    if (c->tie_embeddings != 0 && c->tie_embeddings != 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_create: "
                          "cfg->tie_embeddings = %d (need 0 or 1)",
                          c->tie_embeddings);
    if (c->no_proj != 0 && c->no_proj != 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_create: "
                          "cfg->no_proj = %d (need 0 or 1)", c->no_proj);
    if (c->compute_dtype != MHSA_F32 && c->compute_dtype != MHSA_BF16)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_create: "
                          "cfg->compute_dtype = %d (need MHSA_F32 (0) or "
                          "MHSA_BF16 (2))", c->compute_dtype);
    if (c->weight_dtype != MHSA_F32 && c->weight_dtype != MHSA_F16 &&
        c->weight_dtype != MHSA_BF16)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_create: "
                          "cfg->weight_dtype = %d (need MHSA_F32 (0), "
                          "MHSA_F16 (1) or MHSA_BF16 (2))", c->weight_dtype);
    // 4D columns and the (4D, D) matrices must be far from int and size_t
    // limits; the block checks the rest.
    if (c->n_embd > (1 << 20) || c->vocab > (1 << 24) ||
        c->n_layer > (1 << 16))
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_gpt_create: sizes too "
                          "large (n_embd %d, vocab %d, n_layer %d)",
                          c->n_embd, c->vocab, c->n_layer);
    return MHSA_OK;
}

// Appends one tensor to the table: name (prefix + base), shape; returns its
// offset. `ok` turns 0 if a size overflows.
typedef struct table_builder {
    gpt_tensor_info *t;
    char *names;          // NULL while only counting
    size_t name_bytes, total;
    int n, ok;
} table_builder;

static size_t add_tensor(table_builder *tb, const char *prefix,
                         const char *base, size_t rows, size_t cols,
                         int rank)
{
    size_t off = tb->total;
    size_t len = strlen(prefix) + strlen(base) + 1;
    if (tb->names) {
        char *s = tb->names + tb->name_bytes;
        snprintf(s, len, "%s%s", prefix, base);
        gpt_tensor_info *ti = &tb->t[tb->n];
        ti->name = s;
        ti->rank = rank;
        ti->rows = rows;
        ti->cols = cols;
        ti->off = off;
    }
    tb->name_bytes += len;
    tb->n++;
    if (!mhsa__mul_add(&tb->total, rows, cols))
        tb->ok = 0;
    return off;
}

// Lays out the parameters (twice: once to count, once to fill).
static void build_table(mhsa_gpt *g, table_builder *tb)
{
    const mhsa_gpt_config *c = &g->cfg;
    size_t V = g->V, D = g->D, F = 4 * D;
    g->wte = add_tensor(tb, "", "wte.weight", V, D, 2);
    if (!c->rope_dim)
        g->wpe = add_tensor(tb, "", "wpe.weight", g->Tm, D, 2);
    for (size_t l = 0; l < g->L; l++) {
        char pre[32];
        snprintf(pre, sizeof pre, "h.%zu.", l);
        gpt_layer_off lo;
        lo.ln1_w = add_tensor(tb, pre, layer_names[0], D, 1, 1);
        lo.ln1_b = add_tensor(tb, pre, layer_names[1], D, 1, 1);
        lo.w_qkv = add_tensor(tb, pre, layer_names[2], D, D, 2);
        add_tensor(tb, pre, layer_names[3], D, D, 2);
        add_tensor(tb, pre, layer_names[4], D, D, 2);
        lo.b_qkv = add_tensor(tb, pre, layer_names[5], D, 1, 1);
        add_tensor(tb, pre, layer_names[6], D, 1, 1);
        add_tensor(tb, pre, layer_names[7], D, 1, 1);
        lo.w_proj = lo.b_proj = 0;
        if (!c->no_proj) {
            lo.w_proj = add_tensor(tb, pre, layer_names[8], D, D, 2);
            lo.b_proj = add_tensor(tb, pre, layer_names[9], D, 1, 1);
        }
        lo.ln2_w = add_tensor(tb, pre, layer_names[10], D, 1, 1);
        lo.ln2_b = add_tensor(tb, pre, layer_names[11], D, 1, 1);
        lo.fc_w = add_tensor(tb, pre, layer_names[12], F, D, 2);
        lo.fc_b = add_tensor(tb, pre, layer_names[13], F, 1, 1);
        lo.mp_w = add_tensor(tb, pre, layer_names[14], D, F, 2);
        lo.mp_b = add_tensor(tb, pre, layer_names[15], D, 1, 1);
        if (tb->names)
            g->lo[l] = lo;
    }
    g->lnf_w = add_tensor(tb, "", "ln_f.weight", D, 1, 1);
    g->lnf_b = add_tensor(tb, "", "ln_f.bias", D, 1, 1);
    g->head = c->tie_embeddings ? g->wte
                                : add_tensor(tb, "", "lm_head.weight", V, D,
                                             2);
}

// Floats of all activations for N rows; 0 on overflow.
static size_t act_floats(const mhsa_gpt *g, size_t N)
{
    size_t D = g->D, V = g->V, per = 0, total = 0;
    // x, ln1, att, xmid, ln2 (D each); fch, fch_gelu (4D each); 4 stats
    if (!mhsa__mul_add(&per, N, 5 * D) || !mhsa__mul_add(&per, N, 8 * D) ||
        !mhsa__mul_add(&per, N, 4) || !mhsa__mul_add(&total, per, g->L))
        return 0;
    // x_out, lnf, dres, dln (D each), dfch (4D), logits, probs (V each),
    // lnf stats and row_loss
    if (!mhsa__mul_add(&total, N, 8 * D) || !mhsa__mul_add(&total, N, 2 * V) ||
        !mhsa__mul_add(&total, N, 3))
        return 0;
    return total;
}

// Carves the activation buffer into named views (llm.c style).
static void carve_acts(mhsa_gpt *g, size_t N)
{
    size_t D = g->D, V = g->V;
    float *p = g->acts;
#define TAKE(ptr, n) do { (ptr) = p; p += (n); } while (0)
    for (size_t l = 0; l < g->L; l++) {
        gpt_layer_acts *a = &g->la[l];
        TAKE(a->x, N * D);
        TAKE(a->ln1, N * D);
        TAKE(a->att, N * D);
        TAKE(a->xmid, N * D);
        TAKE(a->ln2, N * D);
        TAKE(a->fch, N * 4 * D);
        TAKE(a->fch_gelu, N * 4 * D);
        TAKE(a->ln1_mean, N);
        TAKE(a->ln1_rstd, N);
        TAKE(a->ln2_mean, N);
        TAKE(a->ln2_rstd, N);
    }
    TAKE(g->x_out, N * D);
    TAKE(g->lnf, N * D);
    TAKE(g->dres, N * D);
    TAKE(g->dln, N * D);
    TAKE(g->dfch, N * 4 * D);
    TAKE(g->logits, N * V);
    TAKE(g->probs, N * V);
    TAKE(g->lnf_mean, N);
    TAKE(g->lnf_rstd, N);
    TAKE(g->row_loss, N);
#undef TAKE
}

// The store's layout: with MHSA_F32 the parameters themselves; else wte,
// wpe, each layer's c_fc and mlp.c_proj, lm_head back to back in w16
// (lm_head is wte's when tied). 0 when out of memory.
static int lay_out_store(mhsa_gpt *g)
{
    size_t V = g->V, D = g->D, F = 4 * D;
    if (g->wdt == MHSA_F32) {
        g->store = g->param;
        g->wte_s = g->wte;
        g->wpe_s = g->wpe;
        g->head_s = g->head;
        for (size_t l = 0; l < g->L; l++) {
            g->lo[l].fc_s = g->lo[l].fc_w;
            g->lo[l].mp_s = g->lo[l].mp_w;
        }
        return 1;
    }
    // Every count is below n_params, which create checked.
    size_t s = 0;
    g->wte_s = s;
    s += V * D;
    g->wpe_s = s;
    if (!g->cfg.rope_dim)
        s += g->Tm * D;
    for (size_t l = 0; l < g->L; l++) {
        g->lo[l].fc_s = s;
        s += F * D;
        g->lo[l].mp_s = s;
        s += D * F;
    }
    g->head_s = g->cfg.tie_embeddings ? g->wte_s : s;
    if (!g->cfg.tie_embeddings)
        s += V * D;
    g->n16 = s;
    g->w16 = mhsa__alloc(s * mhsa_dtype_size(g->wdt));
    g->store = g->w16;
    return g->w16 != NULL;
}

void mhsa__gpt_sync_weights(mhsa_gpt *g)
{
    if (g->wdt == MHSA_F32)
        return;
    size_t V = g->V, D = g->D, F = 4 * D, es = mhsa_dtype_size(g->wdt);
    char *w = g->w16;
#define ROUND(p_off, s_off, count)                                          \
    g->k->cvt_from_f32((count), gpt_p(g, (p_off)), w + (s_off) * es, g->wdt)
    ROUND(g->wte, g->wte_s, V * D);
    if (!g->cfg.rope_dim)
        ROUND(g->wpe, g->wpe_s, g->Tm * D);
    for (size_t l = 0; l < g->L; l++) {
        ROUND(g->lo[l].fc_w, g->lo[l].fc_s, F * D);
        ROUND(g->lo[l].mp_w, g->lo[l].mp_s, D * F);
    }
    if (!g->cfg.tie_embeddings)
        ROUND(g->head, g->head_s, V * D);
#undef ROUND
}

size_t mhsa_gpt_weight_bytes(const mhsa_gpt *g)
{
    if (!g)
        return 0;
    // The blocks hold the attention's weights and biases; every other
    // tensor is read by the forward from the store (matrices) or the
    // parameters (rank 1, fp32).
    size_t bytes = 0, es = mhsa_dtype_size(g->wdt), D = g->D, F = 4 * D;
    for (size_t l = 0; l < g->L; l++)
        bytes += mhsa_block_weight_bytes(g->blk[l]) +
                 (2 * F * D) * es + (4 * D + F + D) * sizeof(float);
    bytes += (g->V * D + (g->cfg.rope_dim ? 0 : g->Tm * D) +
              (g->cfg.tie_embeddings ? 0 : g->V * D)) * es +
             2 * D * sizeof(float);
    return bytes;
}

static mhsa_status make_blocks(mhsa_gpt *g)
{
    mhsa_config bc = { 0 };
    bc.d_model = g->cfg.n_embd;
    bc.n_heads = g->cfg.n_head;
    bc.max_seq_len = g->cfg.block_size;
    bc.causal = 1;
    bc.bias = 1;
    bc.rope_dim = g->cfg.rope_dim;
    bc.compute_dtype = g->cfg.compute_dtype;
    bc.weight_dtype = g->cfg.weight_dtype;
    for (size_t l = 0; l < g->L; l++) {
        mhsa_status st = mhsa_block_create(&bc, &g->blk[l]);
        if (st == MHSA_OK)
            st = mhsa_workspace_create(g->blk[l], g->cfg.max_batch,
                                       &g->ws[l]);
        if (st == MHSA_OK)
            st = mhsa_grads_create(g->blk[l], &g->bg[l]);
        if (st != MHSA_OK)
            return st;   // the block's message names the problem
    }
    return MHSA_OK;
}

mhsa_status mhsa_gpt_create(const mhsa_gpt_config *cfg, mhsa_gpt **out)
{
    if (!cfg || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_create: %s is NULL",
                          !cfg ? "cfg" : "out");
    mhsa_status st = check_config(cfg);
    if (st != MHSA_OK)
        return st;
    mhsa_gpt *g = mhsa__alloc(sizeof *g);
    if (!g)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_gpt_create: no memory");
    g->cfg = *cfg;
    g->cdt = (mhsa_dtype)cfg->compute_dtype;
    g->wdt = (mhsa_dtype)cfg->weight_dtype;
    g->k = mhsa__kernels();
    g->V = (size_t)cfg->vocab;
    g->L = (size_t)cfg->n_layer;
    g->D = (size_t)cfg->n_embd;
    g->Tm = (size_t)cfg->block_size;
    g->Bm = (size_t)cfg->max_batch;
    g->gs.max_threads = omp_get_max_threads() < 1 ? 1 : omp_get_max_threads();

    // Count the tensors and name bytes, then build the table for real.
    table_builder tb = { .ok = 1 };
    build_table(g, &tb);
    size_t N = 0, acts = 0, flat = 0;
    size_t nmax = g->V > 4 * g->D ? g->V : 4 * g->D;
    size_t gb = mhsa_gemm_b_floats(g->k, nmax), ga = gb;
    int ok = tb.ok && mhsa__mul(g->Bm, g->Tm, &N) &&
             (acts = act_floats(g, N)) != 0 &&
             mhsa__mul(tb.total, cfg->weight_dtype == MHSA_F32 ? 4 : 1,
                       &flat) && flat < ((size_t)-1) / 8 &&
             acts < ((size_t)-1) / 8 && gb &&
             mhsa__mul_add(&ga, (size_t)g->gs.max_threads,
                           mhsa_gemm_a_floats(g->k)) &&
             N < ((size_t)-1) / 16;
    if (!ok) {
        mhsa__free(g);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_gpt_create: sizes "
                          "overflow size_t");
    }
    g->n_params = tb.total;
    g->n_tensors = tb.n;
    g->tensors = mhsa__alloc((size_t)tb.n * sizeof *g->tensors);
    g->names = mhsa__alloc(tb.name_bytes);
    g->lo = mhsa__alloc(g->L * sizeof *g->lo);
    g->la = mhsa__alloc(g->L * sizeof *g->la);
    g->blk = mhsa__alloc(g->L * sizeof *g->blk);
    g->ws = mhsa__alloc(g->L * sizeof *g->ws);
    g->bg = mhsa__alloc(g->L * sizeof *g->bg);
    g->param = mhsa__alloc(flat * sizeof(float));
    g->acts = mhsa__alloc(acts * sizeof(float));
    g->tokens = mhsa__alloc(2 * N * sizeof(int32_t));
    g->gemm_buf = mhsa__alloc(ga * sizeof(float));
    if (cfg->no_proj)
        g->identity = mhsa__alloc((g->D * g->D + g->D) * sizeof(float));
    if (!g->tensors || !g->names || !g->lo || !g->la || !g->blk || !g->ws ||
        !g->bg || !g->param || !g->acts || !g->tokens || !g->gemm_buf ||
        (cfg->no_proj && !g->identity)) {
        mhsa_gpt_destroy(g);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_gpt_create: no memory");
    }
    table_builder fill = { .t = g->tensors, .names = g->names, .ok = 1 };
    build_table(g, &fill);
    if (!lay_out_store(g)) {
        mhsa_gpt_destroy(g);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_gpt_create: no memory");
    }
    // A 16-bit model does not train: no gradients or moments.
    if (g->wdt == MHSA_F32) {
        g->grad = g->param + g->n_params;
        g->m = g->grad + g->n_params;
        g->v = g->m + g->n_params;
    }
    g->targets = g->tokens + N;
    carve_acts(g, N);
    g->gs.b = g->gemm_buf;
    g->gs.b_floats = gb;
    g->gs.a = g->gemm_buf + gb;
    if (cfg->no_proj) {
        g->zeros = g->identity + g->D * g->D;   // zero-filled by alloc
        for (size_t i = 0; i < g->D; i++)
            g->identity[i * g->D + i] = 1.0f;
    }
    st = make_blocks(g);
    if (st != MHSA_OK) {
        mhsa_gpt_destroy(g);
        return st;
    }
    *out = g;
    return MHSA_OK;
}

const mhsa_gpt_config *mhsa_gpt_get_config(const mhsa_gpt *g)
{
    return g ? &g->cfg : NULL;
}

size_t mhsa_gpt_n_params(const mhsa_gpt *g) { return g ? g->n_params : 0; }
float *mhsa_gpt_params(mhsa_gpt *g) { return g ? g->param : NULL; }
float *mhsa_gpt_grads(mhsa_gpt *g) { return g ? g->grad : NULL; }
float *mhsa_gpt_moment1(mhsa_gpt *g) { return g ? g->m : NULL; }
float *mhsa_gpt_moment2(mhsa_gpt *g) { return g ? g->v : NULL; }
int64_t mhsa_gpt_get_step(const mhsa_gpt *g) { return g ? g->step : -1; }
int mhsa_gpt_n_tensors(const mhsa_gpt *g) { return g ? g->n_tensors : 0; }

mhsa_status mhsa_gpt_set_step(mhsa_gpt *g, int64_t step)
{
    if (!g || step < 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_set_step: %s",
                          !g ? "g is NULL" : "step < 0");
    g->step = step;
    return MHSA_OK;
}

const float *mhsa_gpt_logits(const mhsa_gpt *g)
{
    return g ? g->logits : NULL;
}

mhsa_status mhsa_gpt_get_tensor(const mhsa_gpt *g, int i,
                                mhsa_gpt_tensor *out)
{
    if (!g || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_get_tensor: %s is "
                          "NULL", !g ? "g" : "out");
    if (i < 0 || i >= g->n_tensors)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_get_tensor: i = %d "
                          "outside [0, %d)", i, g->n_tensors);
    const gpt_tensor_info *t = &g->tensors[i];
    out->name = t->name;
    out->rank = t->rank;
    out->shape[0] = (int64_t)t->rows;
    out->shape[1] = (int64_t)t->cols;
    out->numel = t->rows * t->cols;
    out->offset = t->off;
    out->data = g->param + t->off;
    out->grad = g->grad ? g->grad + t->off : NULL;
    out->decay = t->rank == 2;
    return MHSA_OK;
}

// ---- initialisation --------------------------------------------------------

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static mhsa_status gpt_init_random(mhsa_gpt *g, uint64_t seed)
{
    if (!g)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_gpt_init_random: g is NULL");
    // A uniform on [-a, a) has standard deviation a / sqrt(3).
    const float sqrt3 = 1.7320508075688772f;
    float a = 0.02f * sqrt3;
    float a_resid = a / sqrtf(2.0f * (float)g->L);
    uint64_t s = seed;
    for (int i = 0; i < g->n_tensors; i++) {
        const gpt_tensor_info *t = &g->tensors[i];
        float *p = g->param + t->off;
        size_t n = t->rows * t->cols;
        if (t->rank == 2)
            mhsa__fill_uniform(&s, p, n,
                               ends_with(t->name, "c_proj.weight") ? a_resid
                                                                   : a);
        else if (ends_with(t->name, "ln_1.weight") ||
                 ends_with(t->name, "ln_2.weight") ||
                 !strcmp(t->name, "ln_f.weight"))
            for (size_t j = 0; j < n; j++)
                p[j] = 1.0f;
        else
            memset(p, 0, n * sizeof(float));
    }
    if (g->grad)   // grad, m, v
        memset(g->grad, 0, 3 * g->n_params * sizeof(float));
    g->step = 0;
    g->have_forward = 0;
    return MHSA_OK;
}

mhsa_status mhsa_gpt_init_random(mhsa_gpt *g, uint64_t seed)
{
    MHSA__FP_RETURN(gpt_init_random(g, seed));
}

// ---- forward ----------------------------------------------------------------

mhsa_status mhsa__gpt_sync_block(mhsa_gpt *g, size_t l)
{
    const gpt_layer_off *o = &g->lo[l];
    const float *w_out = g->cfg.no_proj ? g->identity : gpt_p(g, o->w_proj);
    const float *b_out = g->cfg.no_proj ? g->zeros : gpt_p(g, o->b_proj);
    return mhsa_block_set_weights(g->blk[l], gpt_p(g, o->w_qkv),
                                  gpt_p(g, o->b_qkv), w_out, b_out);
}

void mhsa__gpt_layer_pre(mhsa_gpt *g, size_t l, size_t N)
{
    const gpt_layer_off *o = &g->lo[l];
    gpt_layer_acts *a = &g->la[l];
    mhsa__layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, a->x,
                            gpt_p(g, o->ln1_w), gpt_p(g, o->ln1_b), N, g->D);
}

void mhsa__gpt_layer_post(mhsa_gpt *g, size_t l, size_t N, float *x_next,
                          int train)
{
    const gpt_layer_off *o = &g->lo[l];
    gpt_layer_acts *a = &g->la[l];
    size_t D = g->D, F = 4 * D;
    int nt = mhsa__layer_threads(N, D);
    if (nt <= 1) {   // no parallel region below the threshold (rows.c)
        for (size_t i = 0; i < N * D; i++)
            a->xmid[i] = a->x[i] + a->att[i];
    } else {
#pragma omp parallel num_threads(nt)
        {
            mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
            for (size_t i = 0; i < N * D; i++)
                a->xmid[i] = a->x[i] + a->att[i];
            mhsa__fp_leave_team(fp);
        }
    }
    mhsa__layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->xmid,
                            gpt_p(g, o->ln2_w), gpt_p(g, o->ln2_b), N, D);
    mhsa__linear_forward_dt(g->k, &g->gs, g->cdt, a->fch, NULL, a->ln2,
                            gpt_s(g, o->fc_s), g->wdt, gpt_p(g, o->fc_b), N,
                            D, F);
    // Training keeps gelu'(fch) in fch's place for the backward.
    mhsa__gelu_forward(a->fch_gelu, train ? a->fch : NULL, a->fch, N * F);
    mhsa__linear_forward_dt(g->k, &g->gs, g->cdt, x_next, a->xmid,
                            a->fch_gelu, gpt_s(g, o->mp_s), g->wdt,
                            gpt_p(g, o->mp_b), N, F, D);
}

void mhsa__gpt_head(mhsa_gpt *g, const float *x, size_t N)
{
    mhsa__layernorm_forward(g->lnf, g->lnf_mean, g->lnf_rstd, x,
                            gpt_p(g, g->lnf_w), gpt_p(g, g->lnf_b), N, g->D);
    mhsa__linear_forward_dt(g->k, &g->gs, g->cdt, g->logits, NULL, g->lnf,
                            gpt_s(g, g->head_s), g->wdt, NULL, N, g->D,
                            g->V);
}

// Runs every layer on tokens already copied to g->tokens; with attn, the
// attention weights of layer attn_layer go there (B = 1).
static mhsa_status forward_layers(mhsa_gpt *g, int B, int T, int attn_layer,
                                  float *attn)
{
    size_t N = (size_t)B * (size_t)T, D = g->D;
    mhsa__gpt_sync_weights(g);
    mhsa__embed_forward(g->k, g->la[0].x, g->tokens, gpt_s(g, g->wte_s),
                        g->cfg.rope_dim ? NULL : gpt_s(g, g->wpe_s), g->wdt,
                        N, (size_t)T, 0, D);
    for (size_t l = 0; l < g->L; l++) {
        gpt_layer_acts *a = &g->la[l];
        mhsa_status st = mhsa__gpt_sync_block(g, l);
        if (st != MHSA_OK)
            return st;
        mhsa__gpt_layer_pre(g, l, N);
        st = mhsa_forward(g->blk[l], g->ws[l], a->ln1, B, T, NULL, a->att,
                          (int)l == attn_layer ? attn : NULL);
        if (st != MHSA_OK)
            return st;
        if ((int)l == attn_layer)
            return MHSA_OK;
        mhsa__gpt_layer_post(g, l, N, l + 1 < g->L ? g->la[l + 1].x
                                                    : g->x_out, 1);
    }
    mhsa__gpt_head(g, g->x_out, N);
    return MHSA_OK;
}

static mhsa_status gpt_forward(mhsa_gpt *g, const int32_t *tokens,
                               const int32_t *targets, int B, int T,
                               double norm, float *loss)
{
    static const char fn[] = "mhsa_gpt_forward";
    if (!g || !tokens || (targets && !loss))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !g ? "g" : !tokens ? "tokens" : "loss");
    mhsa_status st = mhsa__check_batch(fn, B, T, g->cfg.max_batch,
                                    g->cfg.block_size, "block_size");
    size_t N = (size_t)B * (size_t)T;
    if (st == MHSA_OK)
        st = mhsa__check_ids(fn, "tokens", tokens, N, 0,
                                g->cfg.vocab);
    if (st == MHSA_OK && targets)
        st = mhsa__check_ids(fn, "targets", targets, N, -1,
                                g->cfg.vocab);
    if (st == MHSA_OK && !(norm <= 0.0 || isfinite(norm)))
        st = mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: norm = %g", fn, norm);
    if (st != MHSA_OK)
        return st;
    g->have_forward = 0;
    memcpy(g->tokens, tokens, N * sizeof(int32_t));
    st = forward_layers(g, B, T, -1, NULL);
    if (st != MHSA_OK || !targets)
        return st;
    memcpy(g->targets, targets, N * sizeof(int32_t));
    size_t counted = 0;
    for (size_t n = 0; n < N; n++)
        counted += targets[n] >= 0;
    double sum = mhsa__xent_forward(g->k, g->probs, g->row_loss, g->logits,
                                    g->targets, N, g->V);
    double div = norm > 0.0 ? norm : (double)counted;
    g->loss_scale = div > 0.0 ? (float)(1.0 / div) : 0.0f;
    *loss = div > 0.0 ? (float)(sum / div) : 0.0f;
    g->B = B;
    g->T = T;
    g->have_forward = 1;
    return MHSA_OK;
}

mhsa_status mhsa_gpt_forward(mhsa_gpt *g, const int32_t *tokens,
                             const int32_t *targets, int B, int T,
                             double norm, float *loss)
{
    MHSA__FP_RETURN(gpt_forward(g, tokens, targets, B, T, norm, loss));
}

static mhsa_status gpt_attention(mhsa_gpt *g, int layer, const int32_t *tokens,
                                 int T, float *attn)
{
    static const char fn[] = "mhsa_gpt_attention";
    if (!g || !tokens || !attn)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !g ? "g" : !tokens ? "tokens" : "attn");
    if (layer < 0 || layer >= g->cfg.n_layer)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: layer = %d outside "
                          "[0, %d)", fn, layer, g->cfg.n_layer);
    mhsa_status st = mhsa__check_batch(fn, 1, T, g->cfg.max_batch,
                                    g->cfg.block_size, "block_size");
    if (st == MHSA_OK)
        st = mhsa__check_ids(fn, "tokens", tokens, (size_t)T, 0,
                                g->cfg.vocab);
    if (st != MHSA_OK)
        return st;
    g->have_forward = 0;
    memcpy(g->tokens, tokens, (size_t)T * sizeof(int32_t));
    return forward_layers(g, 1, T, layer, attn);
}

mhsa_status mhsa_gpt_attention(mhsa_gpt *g, int layer, const int32_t *tokens,
                               int T, float *attn)
{
    MHSA__FP_RETURN(gpt_attention(g, layer, tokens, T, attn));
}

// ---- backward ---------------------------------------------------------------

// Backward of one layer: dres holds d loss / d x_{l+1} on entry and
// d loss / d x_l on return.
static mhsa_status layer_backward(mhsa_gpt *g, size_t l, size_t N)
{
    const gpt_layer_off *o = &g->lo[l];
    gpt_layer_acts *a = &g->la[l];
    size_t D = g->D, F = 4 * D;
    // x_{l+1} = xmid + gelu(fch) c_proj^T + b
    mhsa__linear_backward(g->k, &g->gs, g->cdt, g->dfch, gpt_g(g, o->mp_w),
                          gpt_g(g, o->mp_b), g->dres, a->fch_gelu,
                          gpt_p(g, o->mp_w), N, F, D, 0);
    mhsa__gelu_backward(g->dfch, a->fch, g->dfch, N * F);   // fch = gelu
    mhsa__linear_backward(g->k, &g->gs, g->cdt, g->dln, gpt_g(g, o->fc_w),
                          gpt_g(g, o->fc_b), g->dfch, a->ln2,
                          gpt_p(g, o->fc_w), N, D, F, 0);
    // xmid = x + att feeds ln_2 and the residual: dres becomes d xmid.
    mhsa__layernorm_backward(g->dres, gpt_g(g, o->ln2_w), gpt_g(g, o->ln2_b),
                             g->dln, a->xmid, gpt_p(g, o->ln2_w),
                             a->ln2_mean, a->ln2_rstd, N, D);
    // att = block(ln1): d att = d xmid.
    mhsa_grads *bg = g->bg[l];
    mhsa_grads_zero(bg);
    mhsa_status st = mhsa_backward(g->blk[l], g->ws[l], g->dres, g->dln, bg);
    if (st != MHSA_OK)
        return st;
    float *gq = gpt_g(g, o->w_qkv), *gbq = gpt_g(g, o->b_qkv);
    for (size_t i = 0; i < 3 * D * D; i++)
        gq[i] += bg->w_qkv[i];
    for (size_t i = 0; i < 3 * D; i++)
        gbq[i] += bg->b_qkv[i];
    if (!g->cfg.no_proj) {   // the fixed identity's gradient is dropped
        float *gp = gpt_g(g, o->w_proj), *gbp = gpt_g(g, o->b_proj);
        for (size_t i = 0; i < D * D; i++)
            gp[i] += bg->w_out[i];
        for (size_t i = 0; i < D; i++)
            gbp[i] += bg->b_out[i];
    }
    // ln1 = ln_1(x) and the residual: dres becomes d x.
    mhsa__layernorm_backward(g->dres, gpt_g(g, o->ln1_w), gpt_g(g, o->ln1_b),
                             g->dln, a->x, gpt_p(g, o->ln1_w), a->ln1_mean,
                             a->ln1_rstd, N, D);
    return MHSA_OK;
}

// A 16-bit model is for inference (the file's comment at the top).
static mhsa_status training_refused(const mhsa_gpt *g, const char *fn)
{
    return mhsa__fail(MHSA_ERR_UNSUPPORTED, "%s: the model stores its "
                      "weights as %s (cfg->weight_dtype = %d), for inference; "
                      "training keeps fp32 weights (weight_dtype MHSA_F32)",
                      fn, g->wdt == MHSA_F16 ? "F16" : "BF16",
                      (int)g->wdt);
}

static mhsa_status gpt_backward(mhsa_gpt *g)
{
    if (!g)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_gpt_backward: g is NULL");
    if (g->wdt != MHSA_F32)
        return training_refused(g, "mhsa_gpt_backward");
    if (!g->have_forward)
        return mhsa__fail(MHSA_ERR_STATE, "mhsa_gpt_backward: no forward "
                          "with targets to differentiate");
    g->have_forward = 0;   // probs become dlogits below
    size_t B = (size_t)g->B, T = (size_t)g->T, N = B * T, D = g->D;
    memset(g->grad, 0, g->n_params * sizeof(float));

    // loss = scale * sum of row losses; logits = lnf head^T
    mhsa__xent_backward(g->probs, g->targets, N, g->V, g->loss_scale);
    mhsa__linear_backward(g->k, &g->gs, g->cdt, g->dln, gpt_g(g, g->head), NULL,
                          g->probs, g->lnf, gpt_p(g, g->head), N, D, g->V,
                          0);
    // lnf = ln_f(x_L)
    memset(g->dres, 0, N * D * sizeof(float));
    mhsa__layernorm_backward(g->dres, gpt_g(g, g->lnf_w), gpt_g(g, g->lnf_b),
                             g->dln, g->x_out, gpt_p(g, g->lnf_w),
                             g->lnf_mean, g->lnf_rstd, N, D);
    for (size_t l = g->L; l-- > 0;) {
        mhsa_status st = layer_backward(g, l, N);
        if (st != MHSA_OK)
            return st;
    }
    // x_0 = wte[tokens] + wpe[t] (with tied weights, wte's gradient already
    // holds the head's part).
    mhsa__embed_backward(gpt_g(g, g->wte),
                         g->cfg.rope_dim ? NULL : gpt_g(g, g->wpe), g->dres,
                         g->tokens, B, T, D);
    return MHSA_OK;
}

mhsa_status mhsa_gpt_backward(mhsa_gpt *g)
{
    MHSA__FP_RETURN(gpt_backward(g));
}

// ---- optimiser --------------------------------------------------------------

// Sum of x[i]^2 in eight interleaved double lanes (a fixed order the
// compiler vectorises), then a fixed tree.
MHSA_CLONES static double sum_squares(const float *x, size_t n)
{
    double acc[8] = { 0 };
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += (double)x[i + (size_t)l] * (double)x[i + (size_t)l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += (double)x[i] * (double)x[i];
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) +
           ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

// Tensor k's slice of the flat buffers, for mhsa__optim_step.
static mhsa__slice gpt_slice(const void *ctx, int k)
{
    const gpt_tensor_info *t = &((const mhsa_gpt *)ctx)->tensors[k];
    return (mhsa__slice){ t->off, t->rows * t->cols, t->rank == 2 };
}

static mhsa_status gpt_step(mhsa_gpt *g, const mhsa_optim_config *cfg,
                            float *grad_norm)
{
    mhsa_status st = mhsa__optim_check_step("mhsa_gpt_step", g, "g", cfg);
    if (st != MHSA_OK)
        return st;
    if (g->wdt != MHSA_F32)
        return training_refused(g, "mhsa_gpt_step");
    double norm = sqrt(sum_squares(g->grad, g->n_params));
    return mhsa__optim_step(cfg, norm, &g->step, g->param, g->grad, g->m,
                            g->v, g->n_tensors, gpt_slice, g, grad_norm);
}

mhsa_status mhsa_gpt_step(mhsa_gpt *g, const mhsa_optim_config *cfg,
                          float *grad_norm)
{
    MHSA__FP_RETURN(gpt_step(g, cfg, grad_norm));
}

float mhsa_lr_cosine(int64_t s, int64_t warmup, int64_t total, float lr_max,
                     float lr_min)
{
    if (warmup > 0 && s < warmup)
        return lr_max * (float)(s + 1) / (float)warmup;
    int64_t span = total - 1 - (warmup > 0 ? warmup : 0);
    if (span <= 0)
        return lr_max;
    if (s >= total - 1)
        return lr_min;
    double frac = (double)(s - (warmup > 0 ? warmup : 0)) / (double)span;
    double c = 0.5 * (1.0 + cos(3.14159265358979323846 * frac));
    return (float)((double)lr_min + c * ((double)lr_max - (double)lr_min));
}
