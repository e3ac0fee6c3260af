// llama.c — the Llama model's forward through its KV cache (llama.h),
// built from the library's parts: the embedding lookup, RMSNorm, the
// SwiGLU gate and the linear layers of src/train (layers.h: the same GEMM
// and matrix-vector kernels the block uses), and one mhsa_block per layer
// for the attention, run with mhsa_forward_cached.
//
// Shapes, for n new tokens (N = n rows): x, h, att (N, D); g, u (N, F).
// Every buffer was sized at load for the model's capacity: nothing here
// allocates, so memory stays flat while generating.
#include <string.h>

#include "core/fpenv.h"
#include "core/threads.h"
#include "gemm/gemv_share.h"
#include "models/llama/llama_internal.h"
#include "nn/layers.h"

const mhsa_llama_config *mhsa__llama_config(const mhsa_llama *m)
{
    return m ? &m->cfg : NULL;
}

int mhsa__llama_capacity(const mhsa_llama *m) { return m ? (int)m->cap : 0; }

size_t mhsa__llama_weight_bytes(const mhsa_llama *m)
{
    return m ? m->weight_bytes : 0;
}

void mhsa__llama_destroy(mhsa_llama *m) { mhsa__llama_free(m); }

// ---- the cache -----------------------------------------------------------

void mhsa__llama_cache_destroy(mhsa_llama_cache *c)
{
    if (!c)
        return;
    for (size_t l = 0; c->kv && l < c->m->L; l++)
        mhsa_kv_cache_destroy(c->kv[l]);
    mhsa__free(c->kv);
    mhsa__free(c);
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
    c->kv = mhsa__alloc(m->L * sizeof *c->kv);
    if (!c->kv) {
        mhsa__free(c);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", fn);
    }
    memset(c->kv, 0, m->L * sizeof *c->kv);
    mhsa_kv_config kc = { 1, (int)m->cap, dtype };
    for (size_t l = 0; l < m->L; l++) {
        mhsa_status st = mhsa_kv_cache_create_ex(m->layer[l].blk, &kc,
                                                 &c->kv[l]);
        if (st != MHSA_OK) {
            mhsa__llama_cache_destroy(c);
            return st;
        }
    }
    *out = c;
    return MHSA_OK;
}

void mhsa__llama_cache_reset(mhsa_llama_cache *c)
{
    if (!c)
        return;
    for (size_t l = 0; l < c->m->L; l++)
        mhsa_kv_cache_reset(c->kv[l]);
    c->len = 0;
}

int mhsa__llama_cache_len(const mhsa_llama_cache *c)
{
    return c ? c->len : 0;
}

// ---- the forward ---------------------------------------------------------

// x (N, D) += a (N, D): the residual stream.
static void add_rows(float *x, const float *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += a[i];
}

// y (N, OC) = [y +] x (N, C) W^T for a matrix W (OC, C) stored as the
// model's wdt: one row streams W once (gemv), a few rows over 16-bit W
// too (kv_dot, all rows per W row), more go through the GEMM, which widens
// 16-bit W one packed block at a time (gemm.h).
static void matmul(const mhsa_llama *m, float *y, int add, const float *x,
                   const void *w, size_t N, size_t C, size_t OC)
{
    if (m->wdt == MHSA_F32) {
        mhsa__linear_forward(m->k, &m->gs, MHSA_F32, y, add ? y : NULL, x, w,
                             NULL, N, C, OC);
        return;
    }
    float beta = add ? 1.0f : 0.0f;
    if (N == 1)
        mhsa_gemv_rows_dt(m->k, &m->gs, OC, C, w, m->wdt, C, x, y, beta);
    else if (N <= MHSA_FEW_ROWS_16)
        mhsa_gemv_rows_16m(m->k, &m->gs, N, OC, C, w, m->wdt, C, x, C, y, OC,
                           beta);
    else
        mhsa_sgemm_dt(m->k, &m->gs, 0, 1, N, OC, C, 1.0f, x, C, w, m->wdt,
                      C, NULL, beta, y, OC);
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
} mlp_row;

static void mlp_row_body(void *p)
{
    const mlp_row *c = p;
    const mhsa_llama *m = c->m;
    size_t D = m->D, F = m->F, lo, hi;
    mhsa__gemv_share(m->k, F, D, c->ly->gate, m->wdt, NULL, 0, m->h, m->g,
                     &lo, &hi);
    mhsa__gemv_share(m->k, F, D, c->ly->up, m->wdt, NULL, 0, m->h, m->u,
                     &lo, &hi);
    mhsa__swiglu_forward_range(m->g, m->g, m->u, lo, hi);
#pragma omp barrier
    mhsa__gemv_share(m->k, D, F, c->ly->down, m->wdt, NULL, 1, m->g, m->x,
                     &lo, &hi);
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
    mhsa_status st = mhsa__workspace_rebind(m->ws, ly->blk);
    if (st == MHSA_OK)
        st = mhsa_forward_cached(ly->blk, m->ws, kv, m->h, 1, (int)N,
                                 m->att);
    if (st != MHSA_OK)
        return st;
    add_rows(m->x, m->att, N * D);
    mhsa__rmsnorm_forward(m->h, m->x, ly->ffn_norm, N, D, eps);
    if (N == 1) {
        mlp_row c = { m, ly };
        int nt = mhsa__threads(m->gs.max_threads,
                               6.0 * (double)D * (double)F, (D + 63) / 64);
        mhsa__team_run(nt, mlp_row_body, &c);
        return MHSA_OK;
    }
    matmul(m, m->g, 0, m->h, ly->gate, N, D, F);
    matmul(m, m->u, 0, m->h, ly->up, N, D, F);
    mhsa__swiglu_forward(m->g, m->g, m->u, N * F);
    // x = x + g W_down^T: the residual fused into the GEMM's C.
    matmul(m, m->x, 1, m->g, ly->down, N, F, D);
    return MHSA_OK;
}

static mhsa_status llama_forward(mhsa_llama *m, mhsa_llama_cache *c,
                                 const int32_t *tokens, int n,
                                 int all_logits, float *logits)
{
    static const char fn[] = "mhsa__llama_forward";
    if (!m || !c || !tokens || !logits)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !m ? "m" : !c ? "c" : !tokens ? "tokens"
                          : "logits");
    if (c->m != m)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: the cache belongs to "
                          "another model", fn);
    if (n < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: n = %d (need >= 1)",
                          fn, n);
    if ((size_t)n > m->cap - (size_t)c->len)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: %d cached + %d new tokens > "
                          "capacity %zu", fn, c->len, n, m->cap);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || (size_t)tokens[i] >= m->V)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: tokens[%d] = %d is "
                              "outside [0, %zu)", fn, i, (int)tokens[i],
                              m->V);
    size_t N = (size_t)n, D = m->D;
    size_t es = mhsa_dtype_size(m->wdt);
    for (size_t i = 0; i < N; i++) {
        const char *row = (const char *)m->tok_emb + (size_t)tokens[i] * D * es;
        if (m->wdt == MHSA_F32)
            memcpy(m->x + i * D, row, D * sizeof(float));
        else
            m->k->cvt_to_f32(D, row, m->wdt, m->x + i * D);
    }
    for (size_t l = 0; l < m->L; l++) {
        // Shapes were checked above, so no layer after the first fails on
        // them and the caches stay in step with each other.
        mhsa_status st = layer_forward(m, l, c->kv[l], N);
        if (st != MHSA_OK)
            return st;
    }
    // The head: each wanted row normed, then its V logits streamed once.
    size_t first = all_logits ? 0 : N - 1;
    for (size_t r = first; r < N; r++) {
        mhsa__rmsnorm_forward(m->h, m->x + r * D, m->out_norm, 1, D,
                              m->cfg.rms_eps);
        mhsa_gemv_rows_dt(m->k, &m->gs, m->V, D, m->head, m->wdt, D, m->h,
                          logits + (r - first) * m->V, 0.0f);
    }
    c->len += n;
    return MHSA_OK;
}

mhsa_status mhsa__llama_forward(mhsa_llama *m, mhsa_llama_cache *c,
                                const int32_t *tokens, int n, int all_logits,
                                float *logits)
{
    MHSA__FP_RETURN(llama_forward(m, c, tokens, n, all_logits, logits));
}
