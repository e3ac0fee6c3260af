// llama.c — the Llama model's forward through its KV cache (llama.h),
// built from the library's parts: the embedding lookup, RMSNorm, the
// SwiGLU gate and the linear layers of src/nn (layers.h: the same GEMM
// and matrix-vector kernels the block uses), and one mhsa_block per layer
// for the attention, run with mhsa_forward_cached. In file mode the
// matrices are the GGUF file's own (llama_internal.h's llama_mat): the
// quantized products of gemm/qmatmul.h compute on their blocks, and the
// model projects Q, K, V and the output itself around the cached
// attention of its weightless blocks (api/cached_qkv.h).
//
// Shapes, for n new tokens (N = n rows): x, h, att (N, D); g, u (N, F);
// file mode: qkv (N, nqkv), the int8 input rows in m->xq.
// Every buffer was sized at load for the model's capacity: nothing here
// allocates but a batched step's shared head (m->head_rows, grown to the
// largest step and kept), so memory stays flat while generating.
//
// A batched forward (mhsa__llama_forward_parts) runs the rows of several
// sequences one after another through the same buffers; each layer's
// attention reads each part's rows through its own cache.
#include <stdio.h>
#include <string.h>

#include "core/fpenv.h"
#include "core/threads.h"
#include "gemm/gemv_share.h"
#include "api/cached_qkv.h"
#include "models/llama/llama_internal.h"
#include "nn/kv_layers.h"
#include "nn/layers.h"

const mhsa_llama_config *mhsa__llama_config(const mhsa_llama *m)
{
    return m ? &m->cfg : NULL;
}

int mhsa__llama_capacity(const mhsa_llama *m) { return m ? (int)m->cap : 0; }

int mhsa__llama_layer_local(const mhsa_llama_config *c, int l)
{
    return c->swa_period > 0 && l % c->swa_period != c->swa_period - 1;
}

int mhsa__llama_layer_window(const mhsa_llama_config *c, int l)
{
    return mhsa__llama_layer_local(c, l) ? c->window : 0;
}

float mhsa__llama_layer_rope_theta(const mhsa_llama_config *c, int l)
{
    return mhsa__llama_layer_local(c, l) ? c->rope_theta_local
                                         : c->rope_theta;
}

size_t mhsa__llama_weight_bytes(const mhsa_llama *m)
{
    return m ? m->weight_bytes : 0;
}

const char *mhsa__llama_weight_types(const mhsa_llama *m)
{
    return m ? m->types : "";
}

// ---- the cache -----------------------------------------------------------

void mhsa__llama_cache_destroy(mhsa_llama_cache *c)
{
    if (!c)
        return;
    mhsa__kv_layers_destroy(c->kv, c->m->L);
    mhsa__free(c);
}

static const mhsa_block *layer_block(const void *m, size_t l)
{
    return ((const mhsa_llama *)m)->layer[l].blk;
}

mhsa_status mhsa__llama_cache_create(const mhsa_llama *m, mhsa_dtype dtype,
                                     mhsa_llama_cache **out)
{
    static const char fn[] = "mhsa__llama_cache_create";
    if (!m || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !m ? "m" : "out");
    mhsa_llama_cache *c = mhsa__alloc(sizeof *c);
    if (!c)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", fn);
    c->m = m;
    c->len = 0;
    mhsa_kv_config kc = { 1, (int)m->cap, dtype };
    mhsa_status st = mhsa__kv_layers_create(fn, m->L, &kc, layer_block, m,
                                            &c->kv);
    if (st != MHSA_OK) {
        mhsa__free(c);
        return st;
    }
    *out = c;
    return MHSA_OK;
}

void mhsa__llama_cache_reset(mhsa_llama_cache *c)
{
    if (!c)
        return;
    mhsa__kv_layers_reset(c->kv, c->m->L);
    c->len = 0;
}

int mhsa__llama_cache_len(const mhsa_llama_cache *c)
{
    return c ? c->len : 0;
}

// ---- products ------------------------------------------------------------

// x (N, D) += a (N, D): the residual stream.
static void add_rows(float *x, const float *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += a[i];
}

// y (N, OC; rows ldy apart) = [y +] x (N, C) W^T for an fp matrix W (OC,
// C) of w->dt: one row streams W once (gemv), a few rows over 16-bit W too
// (kv_dot, all rows per W row), more go through the GEMM, which widens
// 16-bit W one packed block at a time (gemm.h). (File mode's Q, K and V
// go into the columns of one projected row: ldy > OC.)
static void matmul_fp(const mhsa_llama *m, float *y, size_t ldy, int add,
                      const float *x, const llama_mat *w, size_t N)
{
    size_t C = w->q.cols, OC = w->q.rows;
    if (w->dt == MHSA_F32 && ldy == OC) {
        mhsa__linear_forward(m->k, &m->gs, MHSA_F32, y, add ? y : NULL, x,
                             w->q.data, NULL, N, C, OC);
        return;
    }
    float beta = add ? 1.0f : 0.0f;
    if (N == 1)
        mhsa_gemv_rows_dt(m->k, &m->gs, OC, C, w->q.data, w->dt, C, x, y,
                          beta);
    else if (N <= MHSA_FEW_ROWS_16 && w->dt != MHSA_F32)
        mhsa_gemv_rows_16m(m->k, &m->gs, N, OC, C, w->q.data, w->dt, C, x,
                           C, y, ldy, beta);
    else
        mhsa_sgemm_dt(m->k, &m->gs, 0, 1, N, OC, C, 1.0f, x, C, w->q.data,
                      w->dt, C, NULL, beta, y, ldy);
}

// File mode's products, y (n, ldy apart) = [y +] x (n, C) W^T. A quantized
// W meets x in an int8 form (kernels/quant.h), quantized once per input
// and form into m->xq and shared by the matrices that read the same input
// (q, k and v; gate and up); the threads split W's rows
// (gemm/qmatmul.h), so each element depends on its W row and x row alone.
typedef struct llama_prod {
    const llama_mat *w;
    float *y;
    size_t ldy;
    int add;
} llama_prod;

// Whether a product runs inside a team: quantized, or an fp one of one row
// (the one-row gemv's share).
static int in_team(const llama_mat *w, size_t n)
{
    return w->quant || n == 1;
}

// The activation form of each quantized type meets (mhsa__q_quantize_share
// takes a type of the form).
static const mhsa_qtype form_type[MHSA_QACT_COUNT] = { MHSA_Q8_0,
                                                       MHSA_Q4_K };

// This thread's rows of x (n, C) in each form of `forms` (bit a: form a),
// into m->xq.
static void quantize_rows(const mhsa_llama *m, const float *x, size_t n,
                          size_t C, unsigned forms)
{
    for (int a = 0; a < MHSA_QACT_COUNT; a++)
        if (forms & (1u << a))
            mhsa__q_quantize_share(m->k, form_type[a], n, C, x, C,
                                   m->xq[a]);
}

// This thread's rows [*lo, *hi) of product p (in_team) of x (n rows).
static void prod_share(const mhsa_llama *m, const llama_prod *p,
                       const float *x, size_t n, size_t *lo, size_t *hi)
{
    const llama_mat *w = p->w;
    if (w->quant)
        mhsa__q_matmul_share(m->k, &w->q, n,
                             m->xq[mhsa_qtype_act(w->q.type)], p->y, p->ldy,
                             p->add, lo, hi);
    else
        mhsa__gemv_share(m->k, w->q.rows, w->q.cols, w->q.data, w->dt, NULL,
                         p->add, x, p->y, lo, hi);
}

// The forms the quantized ones of p[0..np) meet.
static unsigned forms_of(const llama_prod *p, int np)
{
    unsigned forms = 0;
    for (int i = 0; i < np; i++)
        if (p[i].w->quant)
            forms |= 1u << mhsa_qtype_act(p[i].w->q.type);
    return forms;
}

typedef struct prod_team {
    const mhsa_llama *m;
    const float *x;
    size_t n, C;
    const llama_prod *p;
    int np;
    unsigned forms;
} prod_team;

static void prod_body(void *arg)
{
    const prod_team *t = arg;
    size_t lo, hi;
    if (t->forms) {
        quantize_rows(t->m, t->x, t->n, t->C, t->forms);
#pragma omp barrier
    }
    for (int i = 0; i < t->np; i++)
        if (in_team(t->p[i].w, t->n))
            prod_share(t->m, &t->p[i], t->x, t->n, &lo, &hi);
}

// The team's size for products of n rows: their FLOPs, and tasks of 8
// rows of the smallest matrix.
static int team_size(const mhsa_llama *m, double flops, size_t rows)
{
    return mhsa__threads(m->gs.max_threads, flops, (rows + 7) / 8);
}

// The products p[0..np) of one input x (n, C): those in_team in one team,
// the others (fp, several rows) after it through matmul_fp.
static void products(const mhsa_llama *m, const float *x, size_t n,
                     size_t C, const llama_prod *p, int np)
{
    double flops = 0.0;
    size_t rows = SIZE_MAX;
    int team = 0;
    for (int i = 0; i < np; i++)
        if (in_team(p[i].w, n)) {
            team = 1;
            flops += 2.0 * (double)n * (double)p[i].w->q.rows * (double)C;
            rows = p[i].w->q.rows < rows ? p[i].w->q.rows : rows;
        }
    if (team) {
        prod_team t = { m, x, n, C, p, np, forms_of(p, np) };
        mhsa__team_run(team_size(m, flops, rows), prod_body, &t);
    }
    for (int i = 0; i < np; i++)
        if (!in_team(p[i].w, n))
            matmul_fp(m, p[i].y, p[i].ldy, p[i].add, x, p[i].w, n);
}

// ---- the forward ---------------------------------------------------------

// The MLP's gate on elements [i0, i1) of one row, g = act(g) * u: SwiGLU,
// or GeGLU (gemma3).
static void gate_range(const mhsa_llama *m, float *g, const float *u,
                       size_t i0, size_t i1)
{
    if (m->cfg.geglu)
        mhsa__geglu_forward_range(g, g, u, i0, i1);
    else
        mhsa__swiglu_forward_range(g, g, u, i0, i1);
}

// The same on n elements, threaded.
static void gate_all(const mhsa_llama *m, float *g, const float *u,
                     size_t n)
{
    if (m->cfg.geglu)
        mhsa__geglu_forward(g, g, u, n);
    else
        mhsa__swiglu_forward(g, g, u, n);
}

// The workspace of layer l's block.
static mhsa_workspace *layer_ws(const mhsa_llama *m, size_t l)
{
    return mhsa__llama_layer_local(&m->cfg, (int)l) ? m->ws_local : m->ws;
}

// One row's MLP in one parallel region (a decoding step): g = gate(h) and
// u = up(h) on this thread's rows of F and SwiGLU on them, then (after the
// barrier: down reads all of g) x += down(g) on its rows of D. The steps of
// the general path below, each row's arithmetic unchanged (SwiGLU is
// elementwise, each product row sums alone), with one wake-up of the pool
// instead of three.
typedef struct mlp_row {
    const mhsa_llama *m;
    const llama_layer *ly;
    size_t n;                 // rows (file mode's team; else 1)
} mlp_row;

static void mlp_row_body(void *p)
{
    const mlp_row *c = p;
    const mhsa_llama *m = c->m;
    size_t D = m->D, F = m->F, lo, hi;
    mhsa__gemv_share(m->k, F, D, c->ly->gate.q.data, m->wdt, NULL, 0, m->h,
                     m->g, &lo, &hi);
    mhsa__gemv_share(m->k, F, D, c->ly->up.q.data, m->wdt, NULL, 0, m->h,
                     m->u, &lo, &hi);
    gate_range(m, m->g, m->u, lo, hi);
#pragma omp barrier
    mhsa__gemv_share(m->k, D, F, c->ly->down.q.data, m->wdt, NULL, 1, m->g,
                     m->x, &lo, &hi);
}

// One layer on rows 0..N-1 of the model's buffers: the attention through
// the layer's cache, then the MLP, each added to x.
static mhsa_status layer_forward(mhsa_llama *m, size_t l, mhsa_kv_cache *kv,
                                 size_t N)
{
    const llama_layer *ly = &m->layer[l];
    size_t D = m->D, F = m->F;
    float eps = m->cfg.rms_eps;
    mhsa__rmsnorm_forward(m->h, m->x, ly->attn_norm, N, D, eps);
    mhsa_workspace *ws = layer_ws(m, l);
    mhsa_status st = mhsa__workspace_rebind(ws, ly->blk);
    if (st == MHSA_OK)
        st = mhsa_forward_cached(ly->blk, ws, kv, m->h, 1, (int)N, m->att);
    if (st != MHSA_OK)
        return st;
    add_rows(m->x, m->att, N * D);
    mhsa__rmsnorm_forward(m->h, m->x, ly->ffn_norm, N, D, eps);
    if (N == 1) {
        mlp_row c = { m, ly, 1 };
        int nt = mhsa__threads(m->gs.max_threads,
                               6.0 * (double)D * (double)F, (D + 63) / 64);
        mhsa__team_run(nt, mlp_row_body, &c);
        return MHSA_OK;
    }
    matmul_fp(m, m->g, F, 0, m->h, &ly->gate, N);
    matmul_fp(m, m->u, F, 0, m->h, &ly->up, N);
    gate_all(m, m->g, m->u, N * F);
    // x = x + g W_down^T: the residual fused into the GEMM's C.
    matmul_fp(m, m->x, D, 1, m->g, &ly->down, N);
    return MHSA_OK;
}

// The MLP's down product: added to x, or with post norms into att (free
// by then: the output projection has read it) to be normed first.
static llama_prod mlp_down(const mhsa_llama *m, const llama_layer *ly)
{
    llama_prod p = { &ly->down, m->x, m->D, 1 };
    if (ly->post_ffn_norm) {
        p.y = m->att;
        p.add = 0;
    }
    return p;
}

// x (N, D) += rmsnorm(y) * w: a post norm's residual add (y is
// overwritten).
static void add_normed(const mhsa_llama *m, float *y, const float *w,
                       size_t N)
{
    mhsa__rmsnorm_forward(y, y, w, N, m->D, m->cfg.rms_eps);
    add_rows(m->x, y, N * m->D);
}

// Q and K of the projected rows (N, nqkv) RMSNormed head by head
// (head_dim wide, before RoPE: gemma3's q_norm and k_norm).
static void qk_norm(const mhsa_llama *m, const llama_layer *ly, size_t N)
{
    size_t dh = (size_t)m->cfg.head_dim, H = (size_t)m->cfg.n_head;
    size_t Hkv = (size_t)m->cfg.n_kv_head;
    for (size_t r = 0; r < N; r++) {
        float *q = m->qkv + r * m->nqkv, *k = q + m->A;
        mhsa__rmsnorm_forward(q, q, ly->q_norm, H, dh, m->cfg.rms_eps);
        mhsa__rmsnorm_forward(k, k, ly->k_norm, Hkv, dh, m->cfg.rms_eps);
    }
}

// File mode's MLP of n rows in one team, when each of its products runs
// in one (in_team): h quantized once for gate and up, their products on
// this thread's rows of F and SwiGLU on those columns of every row; after
// a barrier g quantized, and after another x += down(g) on this thread's
// rows of D. Each element's arithmetic is that of products() (the same
// shares, SwiGLU elementwise).
static void mlp_file_body(void *p)
{
    const mlp_row *c = p;
    const mhsa_llama *m = c->m;
    const llama_layer *ly = c->ly;
    size_t D = m->D, F = m->F, n = c->n, lo, hi;
    llama_prod gate = { &ly->gate, m->g, F, 0 }, up = { &ly->up, m->u, F, 0 };
    llama_prod down = mlp_down(m, ly);
    llama_prod gu[2] = { gate, up };
    unsigned forms = forms_of(gu, 2);
    if (forms) {
        quantize_rows(m, m->h, n, D, forms);
#pragma omp barrier
    }
    prod_share(m, &gate, m->h, n, &lo, &hi);
    prod_share(m, &up, m->h, n, &lo, &hi);
    for (size_t j = 0; j < n; j++)
        gate_range(m, m->g + j * F, m->u + j * F, lo, hi);
#pragma omp barrier
    if (forms_of(&down, 1)) {
        quantize_rows(m, m->g, n, F, forms_of(&down, 1));
#pragma omp barrier
    }
    prod_share(m, &down, m->g, n, &lo, &hi);
}

// A layer whose projections the model computes (m->own: file mode, or
// fp weights a block cannot hold): the projections through products()
// (Q, K and V into the columns of m->qkv), Q and K normed per head where
// the family does so, the attention of the projected rows through the
// layer's cache (api/cached_qkv.h), the output projection added to x (or
// normed first: post norms), the MLP in one team where it can
// (mlp_file_body), else product by product.
static mhsa_status layer_own(mhsa_llama *m, size_t l,
                             const mhsa_llama_part *part, size_t np,
                             size_t N)
{
    const llama_layer *ly = &m->layer[l];
    size_t D = m->D, F = m->F, A = m->A, nqkv = m->nqkv;
    size_t kvd = (nqkv - A) / 2;
    float eps = m->cfg.rms_eps;
    mhsa__rmsnorm_forward(m->h, m->x, ly->attn_norm, N, D, eps);
    llama_prod qkv[3] = {
        { &ly->wq, m->qkv, nqkv, 0 },
        { &ly->wk, m->qkv + A, nqkv, 0 },
        { &ly->wv, m->qkv + A + kvd, nqkv, 0 },
    };
    products(m, m->h, N, D, qkv, 3);
    if (ly->bqkv)   // Q, K and V biases, before RoPE (as llama.cpp adds)
        for (size_t r = 0; r < N; r++)
            add_rows(m->qkv + r * nqkv, ly->bqkv, nqkv);
    if (ly->q_norm)
        qk_norm(m, ly, N);
    // The attention, part by part: each reads its own sequence's cache.
    mhsa_workspace *ws = layer_ws(m, l);
    mhsa_status st = mhsa__workspace_rebind(ws, ly->blk);
    for (size_t i = 0, r = 0; i < np && st == MHSA_OK; r += part[i++].n)
        st = mhsa__forward_cached_qkv(ly->blk, ws, part[i].c->kv[l],
                                      m->qkv + r * nqkv, part[i].n,
                                      m->att + r * A);
    if (st != MHSA_OK)
        return st;
    if (ly->post_attn_norm) {   // h is free: Q, K and V were projected
        llama_prod out = { &ly->wo, m->h, D, 0 };
        products(m, m->att, N, A, &out, 1);
        add_normed(m, m->h, ly->post_attn_norm, N);
    } else {
        llama_prod out = { &ly->wo, m->x, D, 1 };
        products(m, m->att, N, A, &out, 1);
    }
    mhsa__rmsnorm_forward(m->h, m->x, ly->ffn_norm, N, D, eps);
    llama_prod down = mlp_down(m, ly);
    if (in_team(&ly->gate, N) && in_team(&ly->up, N) &&
        in_team(&ly->down, N)) {
        mlp_row c = { m, ly, N };
        double flops = 6.0 * (double)N * (double)D * (double)F;
        mhsa__team_run(team_size(m, flops, D < F ? D : F), mlp_file_body,
                       &c);
    } else {
        llama_prod gu[2] = { { &ly->gate, m->g, F, 0 },
                             { &ly->up, m->u, F, 0 } };
        products(m, m->h, N, D, gu, 2);
        gate_all(m, m->g, m->u, N * F);
        products(m, m->g, N, F, &down, 1);
    }
    if (ly->post_ffn_norm)
        add_normed(m, down.y, ly->post_ffn_norm, N);
    return MHSA_OK;
}

// x row i = the embedding row of tokens[i], widened or dequantized (ggml's
// bits) to fp32.
static void embed(const mhsa_llama *m, const int32_t *tokens, size_t N,
                  float *x)
{
    const llama_mat *e = &m->tok_emb;
    size_t D = m->D;
    for (size_t i = 0; i < N; i++) {
        const char *row = (const char *)e->q.data + (size_t)tokens[i] * e->q.ld;
        if (e->quant)
            mhsa__qmat_row(&e->q, (size_t)tokens[i], x + i * D);
        else if (e->dt == MHSA_F32)
            memcpy(x + i * D, row, D * sizeof(float));
        else
            m->k->cvt_to_f32(D, row, e->dt, x + i * D);
        if (m->cfg.embed_scale != 1.0f)   // gemma3: sqrtf(d_model)
            for (size_t d = 0; d < D; d++)
                x[i * D + d] *= m->cfg.embed_scale;
    }
}

// The head of one part whose rows start at row r: each wanted row (the
// last, or all) normed, then its V logits; an fp head streams once per
// row, a quantized one takes the rows together (each row's logits are its
// own all the same).
static void head(mhsa_llama *m, size_t r, const mhsa_llama_part *p)
{
    size_t D = m->D, first = p->all_logits ? 0 : (size_t)p->n - 1;
    size_t N = (size_t)p->n;
    if (m->head.quant) {
        mhsa__rmsnorm_forward(m->h, m->x + (r + first) * D, m->out_norm,
                              N - first, D, m->cfg.rms_eps);
        llama_prod q = { &m->head, p->logits, m->V, 0 };
        products(m, m->h, N - first, D, &q, 1);
        return;
    }
    for (size_t i = first; i < N; i++) {
        mhsa__rmsnorm_forward(m->h, m->x + (r + i) * D, m->out_norm, 1, D,
                              m->cfg.rms_eps);
        mhsa_gemv_rows_dt(m->k, &m->gs, m->V, D, m->head.q.data, m->head.dt,
                          D, m->h, p->logits + (i - first) * m->V, 0.0f);
    }
}

// The heads of parts p[0..np) (rows one after another from row 0). A
// quantized head takes every part's wanted rows in one product, into
// m->head_rows, and hands each part its rows.
static void heads(mhsa_llama *m, const mhsa_llama_part *p, size_t np)
{
    size_t D = m->D, V = m->V;
    if (np == 1 || !m->head.quant) {
        for (size_t i = 0, r = 0; i < np; r += p[i++].n)
            head(m, r, &p[i]);
        return;
    }
    size_t k = 0;
    for (size_t i = 0, r = 0; i < np; r += p[i++].n) {
        size_t first = p[i].all_logits ? 0 : (size_t)p[i].n - 1;
        for (size_t j = first; j < (size_t)p[i].n; j++, k++)
            mhsa__rmsnorm_forward(m->h + k * D, m->x + (r + j) * D,
                                  m->out_norm, 1, D, m->cfg.rms_eps);
    }
    llama_prod q = { &m->head, m->head_rows, V, 0 };
    products(m, m->h, k, D, &q, 1);
    k = 0;
    for (size_t i = 0; i < np; i++) {
        size_t rows = p[i].all_logits ? (size_t)p[i].n : 1;
        memcpy(p[i].logits, m->head_rows + k * V, rows * V * sizeof(float));
        k += rows;
    }
}

// Whether parts of several sequences can share one forward with every
// part's bits unchanged: each product of several rows must give each row
// what the row alone gives, which the quantized products do (each element
// depends on its W row and x row alone, gemm/qmatmul.h) and the fp ones do
// not (one row goes through the gemv, several through the GEMM, which sum
// in other orders). So: the model projects itself (file mode) and every
// layer matrix is quantized.
static int shares_forward(const mhsa_llama *m)
{
    if (!m->own)
        return 0;
    for (size_t l = 0; l < m->L; l++) {
        const llama_layer *ly = &m->layer[l];
        const llama_mat *w[] = { &ly->wq, &ly->wk, &ly->wv, &ly->wo,
                                 &ly->gate, &ly->up, &ly->down };
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
            if (!w[i]->quant)
                return 0;
    }
    return 1;
}

// One forward of parts p[0..np) (their rows fit the buffers; np > 1 only
// when shares_forward): the rows one after another, every layer's
// products over all of them, each part's attention through its cache.
static mhsa_status forward_group(mhsa_llama *m, const mhsa_llama_part *p,
                                 size_t np)
{
    if (np > 1 && m->head.quant) {   // before any cache changes
        size_t rows = 0;
        for (size_t i = 0; i < np; i++)
            rows += p[i].all_logits ? (size_t)p[i].n : 1;
        if (rows > m->head_rows_cap) {
            float *h = mhsa__alloc(rows * m->V * sizeof(float));
            if (!h)
                return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa__llama_forward_"
                                  "parts: logits of %zu rows", rows);
            mhsa__free(m->head_rows);   // nothing in it outlives a step
            m->head_rows = h;
            m->head_rows_cap = rows;
        }
    }
    size_t N = 0;
    for (size_t i = 0; i < np; i++) {
        embed(m, p[i].tokens, (size_t)p[i].n, m->x + N * m->D);
        N += (size_t)p[i].n;
    }
    for (size_t l = 0; l < m->L; l++) {
        // Shapes were checked, so no layer after the first fails on them
        // and the caches stay in step with each other.
        mhsa_status st = m->own ? layer_own(m, l, p, np, N)
                                : layer_forward(m, l, p[0].c->kv[l], N);
        if (st != MHSA_OK)
            return st;
    }
    heads(m, p, np);
    for (size_t i = 0; i < np; i++)
        p[i].c->len += p[i].n;
    return MHSA_OK;
}

// Part i's checks (fn names the call; `which` its index, or -1 alone).
static mhsa_status check_part(const mhsa_llama *m, const mhsa_llama_part *p,
                              const char *fn, long which)
{
    char at[32] = "";
    if (which >= 0)
        snprintf(at, sizeof at, "part %ld: ", which);
    if (!p->c || !p->tokens || !p->logits)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s%s is NULL", fn, at,
                          !p->c ? "c" : !p->tokens ? "tokens" : "logits");
    if (p->c->m != m)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %sthe cache belongs "
                          "to another model", fn, at);
    if (p->n < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %sn = %d (need >= 1)",
                          fn, at, p->n);
    if ((size_t)p->n > m->cap - (size_t)p->c->len)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: %s%d cached + %d new tokens "
                          "> capacity %zu", fn, at, p->c->len, p->n, m->cap);
    for (int i = 0; i < p->n; i++)
        if (p->tokens[i] < 0 || (size_t)p->tokens[i] >= m->V)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %stokens[%d] = %d "
                              "is outside [0, %zu)", fn, at, i,
                              (int)p->tokens[i], m->V);
    return MHSA_OK;
}

static mhsa_status forward_parts(mhsa_llama *m, const mhsa_llama_part *p,
                                 size_t np)
{
    static const char fn[] = "mhsa__llama_forward_parts";
    if (!m || (!p && np))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !m ? "m" : "p");
    for (size_t i = 0; i < np; i++) {
        mhsa_status st = check_part(m, &p[i], fn, np > 1 ? (long)i : -1);
        if (st != MHSA_OK)
            return st;
        for (size_t j = 0; j < i; j++)
            if (p[j].c == p[i].c)
                return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: parts %zu and "
                                  "%zu have the same cache", fn, j, i);
    }
    // Groups of consecutive parts whose rows fit the activation buffers
    // (cap rows; each part alone does), one forward each; one part a
    // group where the forward cannot be shared.
    int share = np > 1 && shares_forward(m);
    mhsa_status st = MHSA_OK;
    for (size_t a = 0; a < np && st == MHSA_OK;) {
        size_t b = a + 1, rows = (size_t)p[a].n;
        while (share && b < np && rows + (size_t)p[b].n <= m->cap)
            rows += (size_t)p[b++].n;
        st = forward_group(m, p + a, b - a);
        a = b;
    }
    return st;
}

mhsa_status mhsa__llama_forward_parts(mhsa_llama *m, const mhsa_llama_part *p,
                                      size_t np)
{
    MHSA__FP_RETURN(forward_parts(m, p, np));
}

mhsa_status mhsa__llama_forward(mhsa_llama *m, mhsa_llama_cache *c,
                                const int32_t *tokens, int n, int all_logits,
                                float *logits)
{
    static const char fn[] = "mhsa__llama_forward";
    if (!m || !c || !tokens || !logits)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !m ? "m" : !c ? "c" : !tokens ? "tokens"
                          : "logits");
    mhsa_llama_part p = { c, tokens, n, all_logits, logits };
    return mhsa__llama_forward_parts(m, &p, 1);
}
