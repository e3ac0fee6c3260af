// test_gpt.c — the GPT of mhsa_train.h and its layers (src/nn/layers.h):
// every layer's gradients against central differences of its own forward,
// the tanh behind the GELU against libm, the whole model's gradients
// (learned and rotary positions, tied head, no c_proj) against central
// differences, no allocation in a training step or a decoding step, the
// same bits with 1, 2 and 3 threads, checkpoints that restore training bit
// for bit and refuse a model of another shape, logits, loss and gradients
// against PyTorch (stored references, tools/gpt_ref.py), generation through
// the KV cache against the full forward, and the argument errors.
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "nn/layers.h"
#include "train/xent.h"
#include "api/objects.h"
#include "io/safetensors.h"
#include "mhsa_train.h"
#include "util.h"

// ---- finite differences ----------------------------------------------------

// A layer under test: params[i] (n[i] floats) are perturbed, objective()
// runs the forward and returns sum(output * R) in double, and grads[i]
// hold the analytic gradient of that objective.
typedef struct fd_case {
    const char *name;
    int n_params;
    float *params[4];
    const float *grads[4];
    size_t n[4];
    double (*objective)(void *ctx);
    void *ctx;
    size_t stride;   // every stride-th element (0: every one)
} fd_case;

// Central differences with step h for every element; the bound is the one
// of test_train.c: 2e-3 + 2% of the largest gradient, far above fp32 noise
// and curvature at h = 1e-2, far below a wrong index or factor.
static void check_fd(const fd_case *c, float h)
{
    for (int p = 0; p < c->n_params; p++) {
        double maxg = 0, maxdiff = 0;
        size_t step = c->stride ? c->stride : 1;
        for (size_t j = 0; j < c->n[p]; j += step) {
            float v = c->params[p][j];
            c->params[p][j] = v + h;
            double lp = c->objective(c->ctx);
            c->params[p][j] = v - h;
            double lm = c->objective(c->ctx);
            c->params[p][j] = v;
            double num = (lp - lm) / (2.0 * (double)h);
            double d = fabs(num - (double)c->grads[p][j]);
            maxdiff = d > maxdiff ? d : maxdiff;
            maxg = fabs(num) > maxg ? fabs(num) : maxg;
        }
        // Without RoPE the key bias adds q.b_k to every score of a row,
        // which softmax ignores: its gradient is zero there (the difference
        // check below holds it to that); rotated, it is not.
        if (!strstr(c->name, "c_k.bias"))
            ck_assert_msg(maxg > 1e-3, "%s param %d: gradient suspiciously "
                          "zero", c->name, p);
        ck_assert_msg(maxdiff <= 2e-3 + 0.02 * maxg, "%s param %d: max "
                      "|analytic - numeric| = %g (max |g| = %g)", c->name, p,
                      maxdiff, maxg);
    }
}

static double dot(const float *a, const float *r, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * (double)r[i];
    return s;
}

enum { LN_N = 5, LN_D = 13 };
typedef struct ln_ctx {
    float x[LN_N * LN_D], w[LN_D], b[LN_D], y[LN_N * LN_D], r[LN_N * LN_D];
    float mean[LN_N], rstd[LN_N];
} ln_ctx;

static double ln_obj(void *p)
{
    ln_ctx *c = p;
    mhsa__layernorm_forward(c->y, c->mean, c->rstd, c->x, c->w, c->b, LN_N,
                            LN_D);
    return dot(c->y, c->r, LN_N * LN_D);
}

START_TEST(layernorm_gradients)
{
    ln_ctx c;
    rng r = { 11 };
    fill_uniform(&r, c.x, LN_N * LN_D, -2, 2);
    fill_uniform(&r, c.w, LN_D, 0.5f, 1.5f);
    fill_uniform(&r, c.b, LN_D, -0.5f, 0.5f);
    fill_uniform(&r, c.r, LN_N * LN_D, -1, 1);
    ln_obj(&c);
    // Each normalised row has mean 0 and variance 1 before w and b.
    for (int n = 0; n < LN_N; n++) {
        double m = 0, v = 0;
        for (int d = 0; d < LN_D; d++) {
            double t = (c.y[n * LN_D + d] - c.b[d]) / c.w[d];
            m += t;
            v += t * t;
        }
        ck_assert_double_eq_tol(m / LN_D, 0.0, 1e-5);
        ck_assert_double_eq_tol(v / LN_D, 1.0, 1e-3);   // eps 1e-5 aside
    }
    float dx[LN_N * LN_D], dw[LN_D], db[LN_D];
    // Backward adds: start from a known offset and take it off again.
    for (int i = 0; i < LN_N * LN_D; i++)
        dx[i] = 1.0f;
    memset(dw, 0, sizeof dw);
    memset(db, 0, sizeof db);
    mhsa__layernorm_backward(dx, dw, db, c.r, c.x, c.w, c.mean, c.rstd, LN_N,
                             LN_D);
    for (int i = 0; i < LN_N * LN_D; i++)
        dx[i] -= 1.0f;
    fd_case fc = { "layernorm", 3, { c.x, c.w, c.b }, { dx, dw, db },
                   { LN_N * LN_D, LN_D, LN_D }, ln_obj, &c };
    check_fd(&fc, 1e-2f);
}
END_TEST

enum { GE_N = 200 };
typedef struct gelu_ctx {
    float x[GE_N], y[GE_N], r[GE_N];
} gelu_ctx;

static double gelu_obj(void *p)
{
    gelu_ctx *c = p;
    mhsa__gelu_forward(c->y, NULL, c->x, GE_N);
    return dot(c->y, c->r, GE_N);
}

START_TEST(gelu_values_and_gradients)
{
    gelu_ctx c;
    rng r = { 12 };
    fill_uniform(&r, c.x, GE_N, -6, 6);
    c.x[0] = 0.0f;
    c.x[1] = -30.0f;
    c.x[2] = 30.0f;
    fill_uniform(&r, c.r, GE_N, -1, 1);
    gelu_obj(&c);
    for (int i = 0; i < GE_N; i++) {
        double x = c.x[i];
        double want = 0.5 * x * (1 + tanh(0.7978845608028654 *
                                          (x + 0.044715 * x * x * x)));
        ck_assert_msg(fabs(c.y[i] - want) <= 1e-6 * (1 + fabs(want)),
                      "gelu(%g) = %g, want %g", x, (double)c.y[i], want);
    }
    ck_assert(c.y[0] == 0.0f && c.y[1] == -0.0f && c.y[2] == 30.0f);
    // The forward's saved derivative, then the backward from it.
    float dydx[GE_N], y2[GE_N], dx[GE_N];
    mhsa__gelu_forward(y2, dydx, c.x, GE_N);
    ck_assert_mem_eq(y2, c.y, sizeof y2);   // the same values either way
    mhsa__gelu_backward(dx, dydx, c.r, GE_N);
    fd_case fc = { "gelu", 1, { c.x }, { dx }, { GE_N }, gelu_obj, &c };
    check_fd(&fc, 1e-3f);
    // In place (derivative over x, dx over dy) gives the same values.
    float in_place[GE_N], xs[GE_N];
    memcpy(in_place, c.r, sizeof in_place);
    memcpy(xs, c.x, sizeof xs);
    mhsa__gelu_forward(y2, xs, xs, GE_N);
    mhsa__gelu_backward(in_place, xs, in_place, GE_N);
    ck_assert_mem_eq(in_place, dx, sizeof dx);
}
END_TEST

// The tanh behind the GELU, over a dense sweep: absolute error below 2e-7
// (1 - 2/(1 + e^2u) cancels near 0, so relative error is not the measure),
// exact +-1 far out, odd symmetry, and NaN in, NaN out is not required
// (the GELU multiplies by x, which brings it back; see gelu.c).
START_TEST(tanh_approx_accuracy)
{
    double worst = 0;
    // Quick mode (qemu: 30 s of test_gpt there) takes every fourth point of
    // the same grid, both ends included; the native run takes them all.
    int step = test_quick() ? 4 : 1;
    for (int i = -200000; i <= 200000; i += step) {
        float x = (float)i * 1e-4f;
        double d = fabs((double)mhsa__tanh_approx(x) - tanh((double)x));
        worst = d > worst ? d : worst;
        ck_assert(mhsa__tanh_approx(-x) == -mhsa__tanh_approx(x));
    }
    printf("tanh_approx: max abs error %.3g on [-20, 20]\n", worst);
    ck_assert_double_le(worst, 2e-7);
    ck_assert(mhsa__tanh_approx(100.0f) == 1.0f);
    ck_assert(mhsa__tanh_approx(-1e30f) == -1.0f);
    ck_assert(mhsa__tanh_approx(0.0f) == 0.0f);
}
END_TEST

enum { LI_N = 7, LI_C = 9, LI_OC = 11 };
typedef struct linear_ctx {
    const mhsa_kernels *k;
    mhsa_gemm_scratch gs;
    size_t n;                       // rows used (1 takes the gemv path)
    float x[LI_N * LI_C], w[LI_OC * LI_C], b[LI_OC], add[LI_N * LI_OC];
    float y[LI_N * LI_OC], r[LI_N * LI_OC];
} linear_ctx;

static double linear_obj(void *p)
{
    linear_ctx *c = p;
    mhsa__linear_forward(c->k, &c->gs, MHSA_F32, c->y, c->add, c->x, c->w,
                         c->b, c->n, LI_C, LI_OC);
    return dot(c->y, c->r, c->n * LI_OC);
}

static void gemm_scratch(const mhsa_kernels *k, mhsa_gemm_scratch *gs,
                         size_t ncols)
{
    gs->max_threads = omp_get_max_threads();
    gs->b_floats = mhsa_gemm_b_floats(k, ncols);
    gs->b = malloc(gs->b_floats * sizeof(float));
    gs->a = malloc((size_t)gs->max_threads * mhsa_gemm_a_floats(k) *
                   sizeof(float));
}

// Every ISA, with N rows through the GEMM and one row through gemv.
START_TEST(linear_gradients)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n = 1; n <= LI_N; n += LI_N - 1) {
        linear_ctx c;
        c.k = k;
        c.n = n;
        gemm_scratch(k, &c.gs, LI_OC);
        rng r = { 13 };
        fill_uniform(&r, c.x, sizeof c.x / 4, -1, 1);
        fill_uniform(&r, c.w, sizeof c.w / 4, -1, 1);
        fill_uniform(&r, c.b, LI_OC, -1, 1);
        fill_uniform(&r, c.add, sizeof c.add / 4, -1, 1);
        fill_uniform(&r, c.r, sizeof c.r / 4, -1, 1);
        linear_obj(&c);
        // y = add + b + x W^T, against a double sum
        for (size_t i = 0; i < n; i++)
            for (int o = 0; o < LI_OC; o++) {
                double s = (double)c.add[i * LI_OC + o] + c.b[o];
                for (int j = 0; j < LI_C; j++)
                    s += (double)c.x[i * LI_C + j] * c.w[o * LI_C + j];
                ck_assert_double_eq_tol(c.y[i * LI_OC + o], s, 1e-5);
            }
        float dx[LI_N * LI_C], dw[LI_OC * LI_C] = { 0 }, db[LI_OC] = { 0 };
        fill_nan(dx, LI_N * LI_C);   // accumulate_dx = 0 never reads dx
        mhsa__linear_backward(k, &c.gs, MHSA_F32, dx, dw, db, c.r, c.x, c.w, n,
                              LI_C, LI_OC, 0);
        fd_case fc = { "linear", 3, { c.x, c.w, c.b }, { dx, dw, db },
                       { n * LI_C, LI_OC * LI_C, LI_OC }, linear_obj, &c };
        check_fd(&fc, 1e-2f);
        // accumulate_dx = 1 adds to what is there.
        float dx2[LI_N * LI_C];
        for (size_t i = 0; i < n * LI_C; i++)
            dx2[i] = 2.0f;
        mhsa__linear_backward(k, &c.gs, MHSA_F32, dx2, dw, db, c.r, c.x, c.w,
                              n, LI_C, LI_OC, 1);
        for (size_t i = 0; i < n * LI_C; i++)
            ck_assert_float_eq_tol(dx2[i], dx[i] + 2.0f, 1e-5f);
        free(c.gs.a);
        free(c.gs.b);
    }
}
END_TEST

enum { EM_B = 2, EM_T = 4, EM_D = 3, EM_V = 5 };
typedef struct embed_ctx {
    int32_t tok[EM_B * EM_T];
    float wte[EM_V * EM_D], wpe[EM_T * EM_D];
    float x[EM_B * EM_T * EM_D], r[EM_B * EM_T * EM_D];
} embed_ctx;

static double embed_obj(void *p)
{
    embed_ctx *c = p;
    mhsa__embed_forward(&mhsa_kernels_scalar, c->x, c->tok, c->wte, c->wpe,
                        MHSA_F32, EM_B * EM_T, EM_T, 0, EM_D);
    return dot(c->x, c->r, sizeof c->x / 4);
}

START_TEST(embedding_gradients)
{
    embed_ctx c;
    const int32_t tok[EM_B * EM_T] = { 1, 4, 1, 0,   3, 3, 1, 2 };
    memcpy(c.tok, tok, sizeof tok);
    rng r = { 14 };
    fill_uniform(&r, c.wte, sizeof c.wte / 4, -1, 1);
    fill_uniform(&r, c.wpe, sizeof c.wpe / 4, -1, 1);
    fill_uniform(&r, c.r, sizeof c.r / 4, -1, 1);
    float dte[EM_V * EM_D] = { 0 }, dpe[EM_T * EM_D] = { 0 };
    mhsa__embed_backward(dte, dpe, c.r, c.tok, EM_B, EM_T, EM_D);
    fd_case fc = { "embedding", 2, { c.wte, c.wpe }, { dte, dpe },
                   { EM_V * EM_D, EM_T * EM_D }, embed_obj, &c };
    check_fd(&fc, 1e-2f);
}
END_TEST

enum { XE_N = 6, XE_V = 7 };
typedef struct xent_ctx {
    const mhsa_kernels *k;
    float z[XE_N * XE_V], p[XE_N * XE_V], loss[XE_N];
    int32_t tgt[XE_N];
} xent_ctx;

static double xent_obj(void *p)
{
    xent_ctx *c = p;
    return mhsa__xent_forward(c->k, c->p, c->loss, c->z, c->tgt, XE_N,
                              XE_V) / 3.0;
}

START_TEST(cross_entropy_gradients)
{
    xent_ctx c;
    c.k = mhsa__kernels();
    const int32_t tgt[XE_N] = { 0, 6, -1, 3, 3, 2 };
    memcpy(c.tgt, tgt, sizeof tgt);
    rng r = { 15 };
    fill_uniform(&r, c.z, sizeof c.z / 4, -3, 3);
    c.z[5 * XE_V + 2] = -200.0f;   // p underflows: the exact path
    double sum = xent_obj(&c) * 3.0;
    double want = 0;
    for (int n = 0; n < XE_N; n++) {
        if (tgt[n] < 0) {
            ck_assert_float_eq(c.loss[n], 0.0f);
            continue;
        }
        double m = -INFINITY, s = 0;
        for (int j = 0; j < XE_V; j++)
            m = fmax(m, c.z[n * XE_V + j]);
        for (int j = 0; j < XE_V; j++)
            s += exp(c.z[n * XE_V + j] - m);
        double l = m + log(s) - c.z[n * XE_V + tgt[n]];
        ck_assert_double_eq_tol(c.loss[n], l, 1e-5 * (1 + l));
        want += l;
    }
    ck_assert_double_eq_tol(sum, want, 1e-4);
    ck_assert_double_ge(c.loss[5], 199.0);
    float g[XE_N * XE_V];
    memcpy(g, c.p, sizeof g);
    mhsa__xent_backward(g, c.tgt, XE_N, XE_V, 1.0f / 3.0f);
    fd_case fc = { "cross-entropy", 1, { c.z }, { g }, { XE_N * XE_V },
                   xent_obj, &c };
    check_fd(&fc, 1e-2f);
}
END_TEST

// ---- the whole model -------------------------------------------------------

static mhsa_gpt *make_gpt(const mhsa_gpt_config *c, uint64_t seed)
{
    mhsa_gpt *g = NULL;
    ck_assert_msg(mhsa_gpt_create(c, &g) == MHSA_OK, "%s",
                  mhsa_last_error());
    ck_assert_int_eq(mhsa_gpt_init_random(g, seed), MHSA_OK);
    return g;
}

static mhsa_gpt_config small_cfg(void)
{
    mhsa_gpt_config c = { 0 };
    c.vocab = 11;
    c.n_layer = 2;
    c.n_embd = 8;
    c.n_head = 2;
    c.block_size = 6;
    c.max_batch = 3;
    return c;
}

typedef struct model_ctx {
    mhsa_gpt *g;
    const int32_t *tok, *tgt;
    int B, T;
} model_ctx;

static double model_obj(void *p)
{
    model_ctx *c = p;
    float l;
    ck_assert_int_eq(mhsa_gpt_forward(c->g, c->tok, c->tgt, c->B, c->T, 0.0,
                                      &l), MHSA_OK);
    return l;
}

// Every parameter of a small model against central differences, for each
// variant. The parameters are drawn wide (not GPT-2's 0.02) so that every
// path carries a gradient well above fp32 noise.
static void model_gradient_check(mhsa_gpt_config cfg)
{
    enum { B = 2, T = 5 };
    mhsa_gpt *g = make_gpt(&cfg, 1);
    rng r = { 21 };
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        mhsa_gpt_get_tensor(g, i, &t);
        if (strstr(t.name, "ln_") && strstr(t.name, ".weight"))
            fill_uniform(&r, t.data, t.numel, 0.5f, 1.5f);
        else
            fill_uniform(&r, t.data, t.numel, -0.5f, 0.5f);
    }
    // A repeated token (the scatter-adds must sum) and an uncounted target.
    const int32_t tok[B * T] = { 1, 4, 1, 6, 0,   3, 3, 2, 10, 1 };
    const int32_t tgt[B * T] = { 4, 1, 6, -1, 2,  3, 2, 10, 1, 0 };
    model_ctx c = { g, tok, tgt, B, T };
    model_obj(&c);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
    size_t np = mhsa_gpt_n_params(g);
    float *grad = malloc(np * sizeof(float));
    memcpy(grad, mhsa_gpt_grads(g), np * sizeof(float));
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        mhsa_gpt_get_tensor(g, i, &t);
        if (!strcmp(t.name, "wpe.weight"))   // rows >= T are never used
            t.numel = (size_t)T * (size_t)cfg.n_embd;
        // Quick mode (ASan, qemu: a third of test_gpt's time there) checks
        // every third element of the matrices, which meets every column of
        // their rows of 8 (3 is prime to 8), and all of the vectors (a
        // bias's few elements may all have tiny gradients); the native run
        // checks every element.
        size_t stride = test_quick() && t.numel >= 64 ? 3 : 1;
        fd_case fc = { t.name, 1, { t.data }, { grad + t.offset },
                       { t.numel }, model_obj, &c, stride };
        check_fd(&fc, 1e-2f);
    }
    mhsa_gpt_tensor t;
    ck_assert_int_eq(mhsa_gpt_get_tensor(g, 1, &t), MHSA_OK);
    if (!strcmp(t.name, "wpe.weight"))
        for (size_t j = (size_t)T * (size_t)cfg.n_embd; j < t.numel; j++)
            ck_assert_float_eq(grad[t.offset + j], 0.0f);
    free(grad);
    mhsa_gpt_destroy(g);
}

START_TEST(whole_model_gradients)
{
    mhsa_gpt_config c = small_cfg();
    model_gradient_check(c);
}
END_TEST

START_TEST(whole_model_gradients_tied_no_proj)
{
    mhsa_gpt_config c = small_cfg();
    c.tie_embeddings = 1;
    c.no_proj = 1;
    c.n_layer = 1;
    model_gradient_check(c);
}
END_TEST

// Rotary positions (no wpe): the block rotates queries and keys.
START_TEST(whole_model_gradients_rope)
{
    mhsa_gpt_config c = small_cfg();
    c.rope_dim = 4;
    model_gradient_check(c);
}
END_TEST

// With RoPE the model knows positions without wpe: the same tokens at
// other positions give other logits (a sequence of one repeated token
// would give equal rows without any position information).
START_TEST(rope_carries_positions)
{
    mhsa_gpt_config c = small_cfg();
    c.rope_dim = 4;
    mhsa_gpt *g = make_gpt(&c, 3);
    rng r = { 5 };
    mhsa_gpt_tensor t;
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_get_tensor(g, i, &t);
        for (size_t j = 0; j < t.numel; j++)
            t.data[j] += rng_uniform(&r, -0.3f, 0.3f);
    }
    const int32_t tok[6] = { 4, 4, 4, 4, 4, 4 };
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, NULL, 1, 6, 0, NULL), MHSA_OK);
    const float *z = mhsa_gpt_logits(g);
    ck_assert(memcmp(z + 11, z + 5 * 11, 11 * sizeof(float)) != 0);
    mhsa_gpt_destroy(g);
    c.rope_dim = 0;   // and without positions at all they are equal:
    c.n_layer = 1;    // a model whose wpe is zero
    g = make_gpt(&c, 3);
    mhsa_gpt_get_tensor(g, 1, &t);
    ck_assert_str_eq(t.name, "wpe.weight");
    memset(t.data, 0, t.numel * sizeof(float));
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, NULL, 1, 6, 0, NULL), MHSA_OK);
    z = mhsa_gpt_logits(g);
    ck_assert_double_le(rel_err(z + 11, z + 5 * 11, 11), 1e-6);
    mhsa_gpt_destroy(g);
}
END_TEST

// The tensors each variant has, by name and order.
START_TEST(tensor_table)
{
    mhsa_gpt_config c = small_cfg();
    mhsa_gpt *g = make_gpt(&c, 1);
    ck_assert_int_eq(mhsa_gpt_n_tensors(g), 2 + 2 * 16 + 3);
    const char *want[] = {
        "wte.weight", "wpe.weight", "h.0.ln_1.weight", "h.0.ln_1.bias",
        "h.0.attn.c_q.weight", "h.0.attn.c_k.weight", "h.0.attn.c_v.weight",
        "h.0.attn.c_q.bias", "h.0.attn.c_k.bias", "h.0.attn.c_v.bias",
        "h.0.attn.c_proj.weight", "h.0.attn.c_proj.bias", "h.0.ln_2.weight",
        "h.0.ln_2.bias", "h.0.mlp.c_fc.weight", "h.0.mlp.c_fc.bias",
        "h.0.mlp.c_proj.weight", "h.0.mlp.c_proj.bias",
    };
    size_t off = 0;
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        ck_assert_int_eq(mhsa_gpt_get_tensor(g, i, &t), MHSA_OK);
        if (i < (int)(sizeof want / sizeof want[0]))
            ck_assert_str_eq(t.name, want[i]);
        ck_assert_uint_eq(t.offset, off);
        ck_assert_int_eq(t.decay, t.rank == 2);
        off += t.numel;
    }
    ck_assert_uint_eq(off, mhsa_gpt_n_params(g));
    mhsa_gpt_tensor t;
    mhsa_gpt_get_tensor(g, 14, &t);
    ck_assert_str_eq(t.name, "h.0.mlp.c_fc.weight");
    ck_assert_int_eq(t.shape[0], 32);
    ck_assert_int_eq(t.shape[1], 8);
    mhsa_gpt_get_tensor(g, mhsa_gpt_n_tensors(g) - 1, &t);
    ck_assert_str_eq(t.name, "lm_head.weight");
    ck_assert_int_eq(mhsa_gpt_get_tensor(g, mhsa_gpt_n_tensors(g), &t),
                     MHSA_ERR_INVALID_ARG);
    mhsa_gpt_destroy(g);

    // RoPE: no wpe; tied: no lm_head; no_proj: no attn.c_proj.
    c.rope_dim = 2;
    c.tie_embeddings = 1;
    c.no_proj = 1;
    g = make_gpt(&c, 1);
    ck_assert_int_eq(mhsa_gpt_n_tensors(g), 1 + 2 * 14 + 2);
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_get_tensor(g, i, &t);
        ck_assert(!strstr(t.name, "wpe") && !strstr(t.name, "lm_head") &&
                  !strstr(t.name, "attn.c_proj"));
    }
    mhsa_gpt_destroy(g);
}
END_TEST

// no_proj really removes c_proj: the model equals one whose c_proj is the
// identity with a zero bias, bit for bit (x * 1 + 0 is exact).
START_TEST(no_proj_is_identity_projection)
{
    mhsa_gpt_config c = small_cfg();
    c.no_proj = 1;
    mhsa_gpt *a = make_gpt(&c, 5);
    c.no_proj = 0;
    mhsa_gpt *b = make_gpt(&c, 5);
    // Copy a's parameters into b's by name; b's c_proj = I, bias 0.
    for (int i = 0; i < mhsa_gpt_n_tensors(b); i++) {
        mhsa_gpt_tensor tb, ta;
        mhsa_gpt_get_tensor(b, i, &tb);
        if (strstr(tb.name, "attn.c_proj")) {
            memset(tb.data, 0, tb.numel * sizeof(float));
            if (tb.rank == 2)
                for (int d = 0; d < c.n_embd; d++)
                    tb.data[d * c.n_embd + d] = 1.0f;
            continue;
        }
        int found = 0;
        for (int j = 0; j < mhsa_gpt_n_tensors(a); j++) {
            mhsa_gpt_get_tensor(a, j, &ta);
            if (!strcmp(ta.name, tb.name)) {
                memcpy(tb.data, ta.data, tb.numel * sizeof(float));
                found = 1;
            }
        }
        ck_assert(found);
    }
    ck_assert_uint_eq(mhsa_gpt_n_params(a) + 2 * (size_t)(8 * 8 + 8),
                      mhsa_gpt_n_params(b));
    const int32_t tok[6] = { 1, 2, 3, 4, 5, 6 }, tgt[6] = { 2, 3, 4, 5, 6, 7 };
    float la, lb;
    ck_assert_int_eq(mhsa_gpt_forward(a, tok, tgt, 1, 6, 0, &la), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_forward(b, tok, tgt, 1, 6, 0, &lb), MHSA_OK);
    ck_assert(la == lb);
    ck_assert_mem_eq(mhsa_gpt_logits(a), mhsa_gpt_logits(b),
                     6 * 11 * sizeof(float));
    // Training never moves what is not there: after a step, a still has
    // no c_proj and its loss moves.
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    ck_assert_int_eq(mhsa_gpt_backward(a), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_step(a, &oc, NULL), MHSA_OK);
    float la2;
    ck_assert_int_eq(mhsa_gpt_forward(a, tok, tgt, 1, 6, 0, &la2), MHSA_OK);
    ck_assert(la2 < la);
    mhsa_gpt_destroy(a);
    mhsa_gpt_destroy(b);
}
END_TEST

START_TEST(errors_and_state)
{
    mhsa_gpt_config c = small_cfg();
    mhsa_gpt *g = NULL;
    c.n_embd = 9;
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_ERR_SHAPE);
    c = small_cfg();
    c.n_layer = 0;
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "n_layer"));
    c = small_cfg();
    c.rope_dim = 3;
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "rope_dim"));
    c.rope_dim = 6;   // > dh = 4
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_ERR_INVALID_ARG);
    c = small_cfg();
    c.tie_embeddings = 2;
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_gpt_create(NULL, &g), MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_null(g);
    mhsa_gpt_destroy(NULL);

    c = small_cfg();
    g = make_gpt(&c, 1);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_ERR_STATE);
    int32_t tok[7] = { 0, 1, 2, 3, 4, 5, 6 }, tgt[7] = { 1, 2, 3, 4, 5, 6, 0 };
    float loss = 0, attn[2 * 6 * 6];
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 4, 1, 0, &loss),
                     MHSA_ERR_SHAPE);
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 1, 7, 0, &loss),
                     MHSA_ERR_SHAPE);
    tok[2] = 11;
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 1, 6, 0, &loss),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "tokens[2] = 11"));
    tok[2] = 2;
    tgt[1] = -2;
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 1, 6, 0, &loss),
                     MHSA_ERR_INVALID_ARG);
    tgt[1] = 2;
    // Logits only: nothing to differentiate.
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, NULL, 1, 6, 0, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_ERR_STATE);
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 1, 6, 0, &loss), MHSA_OK);
    ck_assert_double_eq_tol(loss, log(11.0), 0.1);   // near chance at init
    ck_assert_int_eq(mhsa_gpt_attention(g, 1, tok, 6, attn), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_ERR_STATE);
    ck_assert_int_eq(mhsa_gpt_attention(g, 2, tok, 6, attn),
                     MHSA_ERR_INVALID_ARG);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 6; i++) {
            double s = 0;
            for (int j = 0; j < 6; j++) {
                float w = attn[(h * 6 + i) * 6 + j];
                if (j > i)
                    ck_assert_float_eq(w, 0.0f);
                s += w;
            }
            ck_assert_double_eq_tol(s, 1.0, 1e-5);
        }
    ck_assert_int_eq(mhsa_gpt_set_step(g, -1), MHSA_ERR_INVALID_ARG);
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    oc.lr = -1;
    ck_assert_int_eq(mhsa_gpt_step(g, &oc, NULL), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_gpt_get_step(g), 0);
    mhsa_gpt_destroy(g);
}
END_TEST

// A loss normalised by a caller's count: two halves of a batch, each
// divided by the whole batch's count, have gradients that add up to the
// whole batch's gradient (what data-parallel training relies on).
START_TEST(split_batch_gradients_add_up)
{
    mhsa_gpt_config c = small_cfg();
    c.max_batch = 4;
    mhsa_gpt *g = make_gpt(&c, 3);
    int32_t tok[4 * 6], tgt[4 * 6];
    rng r = { 31 };
    for (int i = 0; i < 24; i++) {
        tok[i] = rng_int(&r, 0, 10);
        tgt[i] = i == 5 ? -1 : rng_int(&r, 0, 10);
    }
    size_t np = mhsa_gpt_n_params(g);
    float *whole = malloc(np * sizeof(float)), *half = malloc(np * 4);
    float lw, l1, l2;
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 4, 6, 0, &lw), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
    memcpy(whole, mhsa_gpt_grads(g), np * sizeof(float));
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 2, 6, 23, &l1), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
    memcpy(half, mhsa_gpt_grads(g), np * sizeof(float));
    ck_assert_int_eq(mhsa_gpt_forward(g, tok + 12, tgt + 12, 2, 6, 23, &l2),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
    ck_assert_double_eq_tol(l1 + l2, lw, 1e-6);
    const float *g2 = mhsa_gpt_grads(g);
    for (size_t i = 0; i < np; i++)
        ck_assert_double_eq_tol(half[i] + g2[i], whole[i],
                                1e-6 + 1e-5 * fabs(whole[i]));
    free(whole);
    free(half);
    mhsa_gpt_destroy(g);
}
END_TEST

// ---- training: allocation, threads, checkpoints -----------------------------

static mhsa_gpt_config train_cfg(void)
{
    mhsa_gpt_config c = { 0 };
    c.vocab = 256;
    c.n_layer = 2;
    c.n_embd = 32;
    c.n_head = 4;
    c.block_size = 16;
    c.max_batch = 4;
    return c;
}

// A fixed stream of batches: a repeated pattern the model can learn.
static void batch(uint64_t *s, int B, int T, int32_t *tok, int32_t *tgt)
{
    static const char text[] = "the quick brown fox jumps over the lazy dog. ";
    rng r = { *s };
    for (int b = 0; b < B; b++) {
        int off = rng_int(&r, 0, (int)sizeof text - 2);
        for (int t = 0; t <= T; t++) {
            int32_t v = (unsigned char)text[(off + t) % (sizeof text - 1)];
            if (t < T)
                tok[b * T + t] = v;
            if (t > 0)
                tgt[b * T + t - 1] = v;
        }
    }
    *s = r.s;
}

// steps training steps from where g is; losses (steps) out.
static void train_lr(mhsa_gpt *g, uint64_t *data, int steps, float *losses,
                     float lr)
{
    int32_t tok[4 * 16], tgt[4 * 16];
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    oc.weight_decay = 0.1f;
    oc.clip_norm = 1.0f;
    for (int i = 0; i < steps; i++) {
        batch(data, 4, 16, tok, tgt);
        oc.lr = mhsa_lr_cosine(mhsa_gpt_get_step(g), 5, 40, lr, lr / 10);
        ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 4, 16, 0, &losses[i]),
                         MHSA_OK);
        ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
        ck_assert_int_eq(mhsa_gpt_step(g, &oc, NULL), MHSA_OK);
    }
}

static void train_steps(mhsa_gpt *g, uint64_t *data, int steps, float *losses)
{
    train_lr(g, data, steps, losses, 3e-3f);
}

START_TEST(steps_allocate_nothing)
{
    mhsa_gpt_config c = train_cfg();
    mhsa_gpt *g = make_gpt(&c, 1);
    mhsa_gpt_cache *cache = NULL;
    ck_assert_int_eq(mhsa_gpt_cache_create(g, 16, &cache), MHSA_OK);
    uint64_t data = 1;
    float losses[3], logits[256], attn[4 * 16 * 16];
    const int32_t prompt[3] = { 't', 'h', 'e' };
    mhsa__alloc_fail_at(1);   // any allocation from here on fails
    train_steps(g, &data, 3, losses);
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, prompt, 3, logits),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, prompt, 1, logits),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_attention(g, 0, prompt, 3, attn), MHSA_OK);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);
    mhsa_gpt_cache_destroy(cache);
    mhsa_gpt_destroy(g);
}
END_TEST

// The same training with 1, 2 and 3 OpenMP threads: every loss and every
// final parameter and moment bit for bit equal (at a size where the layers
// split their rows over threads).
START_TEST(same_bits_on_any_thread_count)
{
    mhsa_gpt_config c = train_cfg();
    c.n_embd = 64;
    c.block_size = 16;
    c.max_batch = 4;
    // Quick mode (qemu: 50 s of test_gpt there) trains 2 steps of the same
    // 6, which still reach the optimizer's moments; the native run all 6.
    int steps = test_count(6);
    float losses[3][6] = { { 0 } };
    float *params[3];
    size_t np = 0;
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(t + 1);
        mhsa_gpt *g = make_gpt(&c, 9);
        uint64_t data = 5;
        train_steps(g, &data, steps, losses[t]);
        np = mhsa_gpt_n_params(g);
        params[t] = malloc(3 * np * sizeof(float));
        memcpy(params[t], mhsa_gpt_params(g), np * sizeof(float));
        memcpy(params[t] + np, mhsa_gpt_moment1(g), np * sizeof(float));
        memcpy(params[t] + 2 * np, mhsa_gpt_moment2(g), np * sizeof(float));
        mhsa_gpt_destroy(g);
    }
    for (int t = 1; t < 3; t++) {
        ck_assert_mem_eq(losses[0], losses[t], sizeof losses[0]);
        ck_assert_msg(!memcmp(params[0], params[t], 3 * np * sizeof(float)),
                      "parameters differ between 1 and %d threads", t + 1);
    }
    for (int t = 0; t < 3; t++)
        free(params[t]);
}
END_TEST

// It learns: the loss on a repeated sentence falls far below chance.
START_TEST(learns_a_sentence)
{
    mhsa_gpt_config c = train_cfg();
    mhsa_gpt *g = make_gpt(&c, 2);
    uint64_t data = 3;
    float losses[40];
    train_lr(g, &data, 40, losses, 2e-2f);
    ck_assert_double_eq_tol(losses[0], log(256.0), 0.3);
    ck_assert_msg(losses[39] < 1.0f, "loss after 40 steps: %g",
                  (double)losses[39]);
    mhsa_gpt_destroy(g);
}
END_TEST

// Training in BF16 compute (fp32 master weights and moments): the same
// bits on 1 and 2 threads; the loss curve follows fp32's (each of 40
// steps within 8%, the mean of the last 10 within 3%; the worst step was
// 5.4% off on AVX2) but is not fp32's (the products
// are rounded); an invalid compute dtype fails by name.
START_TEST(bf16_compute_trains_like_f32)
{
    // Quick mode (qemu: 40% of test_gpt's time there) follows the first 10
    // of the same 40 steps (the last-10 mean is then over those); the
    // native run follows all 40.
    int n = test_count(40);
    mhsa_gpt_config c = train_cfg();
    float lf[40], lb[2][40] = { { 0 } };
    mhsa_gpt *g = make_gpt(&c, 2);
    uint64_t data = 3;
    train_lr(g, &data, n, lf, 2e-2f);
    mhsa_gpt_destroy(g);
    c.compute_dtype = MHSA_BF16;
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t + 1);
        g = make_gpt(&c, 2);
        data = 3;
        train_lr(g, &data, n, lb[t], 2e-2f);
        mhsa_gpt_destroy(g);
    }
    ck_assert_mem_eq(lb[0], lb[1], sizeof lb[0]);
    int differ = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_msg(fabs(lb[0][i] - lf[i]) <= 0.08 * lf[i], "step %d: "
                      "bf16 loss %g, f32 %g", i, (double)lb[0][i],
                      (double)lf[i]);
        differ |= lb[0][i] != lf[i];
    }
    double mb = 0.0, mf = 0.0;   // the last 10 steps' mean
    for (int i = n - 10; i < n; i++) {
        mb += lb[0][i];
        mf += lf[i];
    }
    ck_assert_msg(fabs(mb - mf) <= 0.03 * mf, "mean loss of steps %d-%d: "
                  "bf16 %g, f32 %g", n - 10, n - 1, mb / 10, mf / 10);
    ck_assert_msg(differ, "bf16 losses are fp32's bit for bit: not rounded");
    c.compute_dtype = MHSA_F16;
    g = NULL;
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_ERR_INVALID_ARG);
    ck_assert(strstr(mhsa_last_error(), "compute_dtype"));
}
END_TEST

static const char *tmp_path(const char *name)
{
    static char buf[4][256];
    static int k;
    const char *dir = getenv("TMPDIR");
    char *p = buf[k++ % 4];
    snprintf(p, sizeof buf[0], "%s/mhsa_gpt_%ld_%s",
             dir && strlen(dir) < 100 ? dir : "/tmp", (long)getpid(), name);
    return p;
}

#ifdef MHSA_TEST_SAFETENSORS
// Save after k steps with the optimiser, load into a fresh model, train on:
// the same bits as the run that never stopped.
START_TEST(checkpoint_resumes_bit_for_bit)
{
    mhsa_gpt_config c = train_cfg();
    mhsa_gpt *a = make_gpt(&c, 4), *b = NULL;
    uint64_t da = 8;
    float la[10], lb[10];
    train_steps(a, &da, 4, la);
    const char *p = tmp_path("ckpt.safetensors");
    const mhsa_meta meta[1] = { { "data", "8" } };
    ck_assert_int_eq(mhsa_gpt_save(a, p, 1, meta, 1), MHSA_OK);
    uint64_t db = da;
    train_steps(a, &da, 6, la + 4);

    mhsa_meta_value mv[2] = { { .key = "data" }, { .key = "absent" } };
    ck_assert_int_eq(mhsa_gpt_read_meta(p, mv, 2), MHSA_OK);
    ck_assert(mv[0].present && !strcmp(mv[0].value, "8"));
    ck_assert(!mv[1].present && !mv[1].value[0]);
    ck_assert_int_eq(mhsa_gpt_read_meta(NULL, mv, 2), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_gpt_read_meta("/nonexistent/x.st", mv, 2),
                     MHSA_ERR_IO);

    mhsa_gpt_config rc;
    ck_assert_int_eq(mhsa_gpt_read_config(p, &rc), MHSA_OK);
    ck_assert_int_eq(rc.n_embd, 32);
    ck_assert_int_eq(rc.vocab, 256);
    ck_assert_int_eq(rc.max_batch, 1);
    rc.max_batch = 4;
    ck_assert_int_eq(mhsa_gpt_create(&rc, &b), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_load(b, p, 1), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_get_step(b), 4);
    train_steps(b, &db, 6, lb + 4);
    ck_assert_mem_eq(la + 4, lb + 4, 6 * sizeof(float));
    ck_assert(!memcmp(mhsa_gpt_params(a), mhsa_gpt_params(b),
                      mhsa_gpt_n_params(a) * sizeof(float)));
    ck_assert(!memcmp(mhsa_gpt_moment2(a), mhsa_gpt_moment2(b),
                      mhsa_gpt_n_params(a) * sizeof(float)));
    unlink(p);
    mhsa_gpt_destroy(a);
    mhsa_gpt_destroy(b);
}
END_TEST

// The demo model's weights: saved, loaded into another model, the same
// bits; a file of another shape leaves the model as it was.
START_TEST(lm_weights_round_trip)
{
    mhsa_lm_config c = { .vocab = 8, .d_model = 16, .n_heads = 2,
                         .max_seq_len = 6, .max_batch = 2 };
    mhsa_lm *a = NULL, *b = NULL, *o = NULL;
    ck_assert_int_eq(mhsa_lm_create(&c, &a), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_create(&c, &b), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_init_random(a, 3), MHSA_OK);
    const char *p = tmp_path("lm.safetensors");
    ck_assert_int_eq(mhsa_lm_save(a, p), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_load(b, p), MHSA_OK);
    for (int i = 0; i < mhsa_lm_n_tensors(a); i++) {
        mhsa_lm_tensor x, y;
        mhsa_lm_get_tensor(a, i, &x);
        mhsa_lm_get_tensor(b, i, &y);
        ck_assert_mem_eq(x.data, y.data, x.numel * sizeof(float));
    }
    c.d_model = 8;
    ck_assert_int_eq(mhsa_lm_create(&c, &o), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_init_random(o, 5), MHSA_OK);
    mhsa_lm_tensor before;
    mhsa_lm_get_tensor(o, 0, &before);
    float first = before.data[0];
    ck_assert_int_eq(mhsa_lm_load(o, p), MHSA_ERR_FORMAT);
    ck_assert(before.data[0] == first);
    ck_assert_int_eq(mhsa_lm_save(NULL, p), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_lm_load(b, NULL), MHSA_ERR_INVALID_ARG);
    unlink(p);
    mhsa_lm_destroy(a);
    mhsa_lm_destroy(b);
    mhsa_lm_destroy(o);
}
END_TEST

// A checkpoint write that fails half-way (here the file-size limit, as a
// full disk would) returns MHSA_ERR_IO naming the path and leaves the
// previous checkpoint byte for byte, with no temporary file beside it.
START_TEST(failed_write_keeps_previous_checkpoint)
{
    mhsa_gpt_config c = train_cfg();
    mhsa_gpt *g = make_gpt(&c, 6);
    const char *p = tmp_path("keep.safetensors");
    ck_assert_int_eq(mhsa_gpt_save(g, p, 1, NULL, 0), MHSA_OK);
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *old = malloc((size_t)n), *now = malloc((size_t)n);
    ck_assert_int_eq(fread(old, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    // Other weights: a write that got through would change the file.
    mhsa_gpt_params(g)[0] += 1.0f;
    struct rlimit lim0, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &lim0), 0);
    lim = lim0;
    void (*xfsz)(int) = signal(SIGXFSZ, SIG_IGN);   // write() fails instead
    for (int k = 0; k < 3; k++) {
        // Cut inside the header, inside the parameters, near the end.
        rlim_t cut = (rlim_t)(k == 0 ? 16 : k == 1 ? n / 2 : n - 8);
        lim.rlim_cur = cut;
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
        mhsa_status st = mhsa_gpt_save(g, p, 1, NULL, 0);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim0), 0);
        ck_assert_msg(st == MHSA_ERR_IO, "cut at %ld bytes: %s", (long)cut,
                      mhsa_status_str(st));
        ck_assert_ptr_nonnull(strstr(mhsa_last_error(), p));
        f = fopen(p, "rb");
        ck_assert_ptr_nonnull(f);
        fseek(f, 0, SEEK_END);
        ck_assert_int_eq(ftell(f), n);
        rewind(f);
        ck_assert_int_eq(fread(now, 1, (size_t)n, f), (size_t)n);
        fclose(f);
        ck_assert_msg(!memcmp(old, now, (size_t)n), "cut at %ld bytes: the "
                      "previous checkpoint changed", (long)cut);
        char tmp[300];
        snprintf(tmp, sizeof tmp, "%s.tmp%ld.", p, (long)getpid());
        // The temporary file (path.tmp<pid>.<counter>) is gone.
        for (unsigned u = 0; u < 64; u++) {
            char name[320];
            snprintf(name, sizeof name, "%s%u", tmp, u);
            ck_assert_msg(access(name, F_OK) != 0, "%s left behind", name);
        }
    }
    signal(SIGXFSZ, xfsz);
    // Without the limit the same call writes the new weights.
    ck_assert_int_eq(mhsa_gpt_save(g, p, 1, NULL, 0), MHSA_OK);
    mhsa_gpt *h = make_gpt(&c, 7);
    ck_assert_int_eq(mhsa_gpt_load(h, p, 1), MHSA_OK);
    ck_assert(!memcmp(mhsa_gpt_params(g), mhsa_gpt_params(h),
                      mhsa_gpt_n_params(g) * sizeof(float)));
    unlink(p);
    free(old);
    free(now);
    mhsa_gpt_destroy(g);
    mhsa_gpt_destroy(h);
}
END_TEST

// A checkpoint of another shape, a missing tensor or missing optimiser
// state is refused with a message naming it, and the model is unchanged.
START_TEST(checkpoint_of_another_shape)
{
    mhsa_gpt_config c = train_cfg();
    mhsa_gpt *a = make_gpt(&c, 4);
    const char *p = tmp_path("shape.safetensors");
    ck_assert_int_eq(mhsa_gpt_save(a, p, 0, NULL, 0), MHSA_OK);
    c.n_layer = 3;
    mhsa_gpt *b = make_gpt(&c, 5);
    size_t np = mhsa_gpt_n_params(b);
    float *before = malloc(np * sizeof(float));
    memcpy(before, mhsa_gpt_params(b), np * sizeof(float));
    ck_assert_int_eq(mhsa_gpt_load(b, p, 0), MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "n_layer = 2"));
    ck_assert(!memcmp(before, mhsa_gpt_params(b), np * sizeof(float)));
    // The same shape but no optimiser state in the file.
    ck_assert_int_eq(mhsa_gpt_load(a, p, 1), MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "optimiser"));
    ck_assert_int_eq(mhsa_gpt_load(a, p, 0), MHSA_OK);
    // Reserved metadata keys, a path that cannot be written.
    const mhsa_meta bad = { "mhsa.gpt.n_layer", "9" };
    ck_assert_int_eq(mhsa_gpt_save(a, p, 0, &bad, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_gpt_save(a, "/nonexistent/dir/x.st", 0, NULL, 0),
                     MHSA_ERR_IO);
    ck_assert_int_eq(mhsa_gpt_load(a, "/nonexistent/x.st", 0), MHSA_ERR_IO);
    // A safetensors file without the GPT metadata.
    mhsa_block *blk = NULL;
    mhsa_config bc = { 8, 2, 4, 1, 1 };
    ck_assert_int_eq(mhsa_block_create(&bc, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_save_safetensors(blk, p, ""), MHSA_OK);
    mhsa_gpt_config rc;
    ck_assert_int_eq(mhsa_gpt_read_config(p, &rc), MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "mhsa.gpt.vocab"));
    mhsa_block_destroy(blk);
    unlink(p);
    free(before);
    mhsa_gpt_destroy(a);
    mhsa_gpt_destroy(b);
}
END_TEST

// Against PyTorch (tools/gpt_ref.py, float64, stored in tests/data/gpt):
// the logits, the loss and the gradient of every parameter of small GPTs
// (learned positions; tied head without c_proj; RoPE on all and on half of
// each head) agree to 1e-4 relative error per tensor.
static const char *const ref_files[] = {
    "gpt/plain.safetensors", "gpt/tied_noproj.safetensors",
    "gpt/rope.safetensors", "gpt/rope_half.safetensors",
};

static float *read_ref(mhsa_st_file *f, const char *name, size_t *n)
{
    int nd;
    size_t dims[MHSA_ST_MAX_DIMS], count = 1;
    ck_assert_msg(mhsa__st_shape(f, name, &nd, dims), "%s missing", name);
    for (int i = 0; i < nd; i++)
        count *= dims[i];
    float *x = malloc((count ? count : 1) * sizeof(float));
    ck_assert_int_eq(mhsa__st_read_f32(f, name, nd, dims, x), MHSA_OK);
    *n = count;
    return x;
}

START_TEST(matches_pytorch)
{
    const char *path = data_path(ref_files[_i]);
    mhsa_gpt_config c;
    ck_assert_msg(mhsa_gpt_read_config(path, &c) == MHSA_OK, "%s",
                  mhsa_last_error());
    c.max_batch = 2;
    mhsa_gpt *g = NULL;
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_OK);
    ck_assert_msg(mhsa_gpt_load(g, path, 0) == MHSA_OK, "%s",
                  mhsa_last_error());
    mhsa_st_file *f = NULL;
    ck_assert_int_eq(mhsa__st_open(path, &f), MHSA_OK);
    size_t n, nt;
    float *tokf = read_ref(f, "ref.tokens", &nt);
    float *tgtf = read_ref(f, "ref.targets", &n);
    int T = c.block_size, B = (int)(nt / (size_t)T);
    int32_t *tok = malloc(nt * sizeof(int32_t)), *tgt = malloc(nt * 4);
    for (size_t i = 0; i < nt; i++) {
        tok[i] = (int32_t)tokf[i];
        tgt[i] = (int32_t)tgtf[i];
    }
    float loss;
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, B, T, 0, &loss), MHSA_OK);
    float *ref = read_ref(f, "ref.loss", &n);
    ck_assert_msg(fabs(loss - ref[0]) <= 1e-5 * fabs(ref[0]),
                  "%s: loss %.7f, PyTorch %.7f", path, (double)loss,
                  (double)ref[0]);
    free(ref);
    ref = read_ref(f, "ref.logits", &n);
    ck_assert_uint_eq(n, nt * (size_t)c.vocab);
    double e = rel_err(mhsa_gpt_logits(g), ref, n);
    ck_assert_msg(e <= 1e-4, "%s: logits rel err %g", path, e);
    free(ref);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        mhsa_gpt_get_tensor(g, i, &t);
        char name[128];
        snprintf(name, sizeof name, "ref.grad.%s", t.name);
        ref = read_ref(f, name, &n);
        ck_assert_uint_eq(n, t.numel);
        e = rel_err(t.grad, ref, n);
        ck_assert_msg(e <= 1e-4, "%s: %s gradient rel err %g", path, t.name,
                      e);
        free(ref);
    }
    printf("%s: loss %.6f matches PyTorch; logits and %d gradients to "
           "1e-4\n", ref_files[_i], (double)loss, mhsa_gpt_n_tensors(g));
    mhsa__st_close(f);
    free(tokf);
    free(tgtf);
    free(tok);
    free(tgt);
    mhsa_gpt_destroy(g);
}
END_TEST
#endif

// ---- generation ----------------------------------------------------------------

// Prefill then token by token through the KV cache gives, at every
// position, the logits of one full forward (to fp32 rounding); a full cache
// refuses more and is unchanged; reset starts afresh with the same bits.
static void cached_matches_full(mhsa_gpt_config c)
{
    enum { T = 12 };
    c.block_size = T;
    mhsa_gpt *g = make_gpt(&c, 6);
    // A few training steps so that the logits are not all alike.
    rng r = { 41 };
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        mhsa_gpt_get_tensor(g, i, &t);
        for (size_t j = 0; j < t.numel; j++)
            t.data[j] += rng_uniform(&r, -0.1f, 0.1f);
    }
    int32_t tok[T];
    for (int i = 0; i < T; i++)
        tok[i] = rng_int(&r, 0, c.vocab - 1);
    size_t V = (size_t)c.vocab;
    float *full = malloc(T * V * sizeof(float)), *one = malloc(V * 4);
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, NULL, 1, T, 0, NULL), MHSA_OK);
    memcpy(full, mhsa_gpt_logits(g), T * V * sizeof(float));
    mhsa_gpt_cache *cache = NULL;
    ck_assert_int_eq(mhsa_gpt_cache_create(g, T, &cache), MHSA_OK);
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, tok, 5, one),
                         MHSA_OK);
        ck_assert_double_le(rel_err(one, full + 4 * V, V), 1e-5);
        for (int t = 5; t < T; t++) {
            ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, tok + t, 1,
                                                     one), MHSA_OK);
            ck_assert_msg(rel_err(one, full + (size_t)t * V, V) <= 1e-5,
                          "position %d: rel err %g", t,
                          rel_err(one, full + (size_t)t * V, V));
        }
        ck_assert_int_eq(mhsa_gpt_cache_len(cache), T);
        float keep[4];
        memcpy(keep, one, sizeof keep);
        ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, tok, 1, one),
                         MHSA_ERR_SHAPE);
        ck_assert_mem_eq(keep, one, sizeof keep);
        ck_assert_int_eq(mhsa_gpt_cache_len(cache), T);
        mhsa_gpt_cache_reset(cache);
        ck_assert_int_eq(mhsa_gpt_cache_len(cache), 0);
    }
    mhsa_gpt_cache_destroy(cache);
    free(full);
    free(one);
    mhsa_gpt_destroy(g);
}

START_TEST(cached_generation_matches_full_forward)
{
    mhsa_gpt_config c = small_cfg();
    cached_matches_full(c);
    c.tie_embeddings = 1;
    c.no_proj = 1;
    cached_matches_full(c);
    c.rope_dim = 2;   // positions of cached tokens rotate by their index
    cached_matches_full(c);
}
END_TEST

START_TEST(cache_errors)
{
    mhsa_gpt_config c = small_cfg();
    mhsa_gpt *g = make_gpt(&c, 1), *h = make_gpt(&c, 1);
    mhsa_gpt_cache *cache = NULL;
    ck_assert_int_eq(mhsa_gpt_cache_create(g, 7, &cache), MHSA_ERR_SHAPE);
    ck_assert_int_eq(mhsa_gpt_cache_create(g, 0, &cache),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_gpt_cache_create(g, 6, &cache), MHSA_OK);
    float logits[11];
    const int32_t tok[7] = { 1, 2, 3, 4, 5, 6, 7 };
    ck_assert_int_eq(mhsa_gpt_forward_cached(h, cache, tok, 1, logits),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, tok, 7, logits),
                     MHSA_ERR_SHAPE);
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, tok, 0, logits),
                     MHSA_ERR_INVALID_ARG);
    const int32_t bad = 11;
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, &bad, 1, logits),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_gpt_cache_len(cache), 0);
    mhsa_gpt_cache_destroy(cache);
    mhsa_gpt_cache_destroy(NULL);
    mhsa_gpt_cache_reset(NULL);
    mhsa_gpt_destroy(g);
    mhsa_gpt_destroy(h);
}
END_TEST

START_TEST(lr_schedule)
{
    // warm-up 10 steps to 1.0, cosine to 0.1 at step 99
    ck_assert_float_eq(mhsa_lr_cosine(0, 10, 100, 1.0f, 0.1f), 0.1f);
    ck_assert_float_eq(mhsa_lr_cosine(9, 10, 100, 1.0f, 0.1f), 1.0f);
    ck_assert_float_eq(mhsa_lr_cosine(10, 10, 100, 1.0f, 0.1f), 1.0f);
    ck_assert_double_eq_tol(mhsa_lr_cosine(99, 10, 100, 1.0f, 0.1f), 0.1,
                            1e-7);
    ck_assert_double_eq_tol(mhsa_lr_cosine(54, 10, 100, 1.0f, 0.1f) +
                            mhsa_lr_cosine(55, 10, 100, 1.0f, 0.1f), 1.1,
                            0.04);
    ck_assert_float_eq(mhsa_lr_cosine(500, 10, 100, 1.0f, 0.1f), 0.1f);
    ck_assert_float_eq(mhsa_lr_cosine(3, 0, 1, 1.0f, 0.1f), 1.0f);
    for (int s = 11; s < 100; s++)
        ck_assert(mhsa_lr_cosine(s, 10, 100, 1.0f, 0.1f) <=
                  mhsa_lr_cosine(s - 1, 10, 100, 1.0f, 0.1f));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gpt");
    TCase *tl = tcase_create("layers");
    tcase_add_test(tl, layernorm_gradients);
    tcase_add_test(tl, gelu_values_and_gradients);
    tcase_add_test(tl, tanh_approx_accuracy);
    tcase_add_loop_test(tl, linear_gradients, 0, N_ISAS);
    tcase_add_test(tl, embedding_gradients);
    tcase_add_test(tl, cross_entropy_gradients);
    suite_add_tcase(s, tl);
    TCase *tm = tcase_create("model");
    tcase_add_test(tm, whole_model_gradients);
    tcase_add_test(tm, whole_model_gradients_tied_no_proj);
    tcase_add_test(tm, whole_model_gradients_rope);
    tcase_add_test(tm, rope_carries_positions);
    tcase_add_test(tm, tensor_table);
    tcase_add_test(tm, no_proj_is_identity_projection);
    tcase_add_test(tm, errors_and_state);
    tcase_add_test(tm, split_batch_gradients_add_up);
    tcase_add_test(tm, lr_schedule);
    suite_add_tcase(s, tm);
    // The learning curve, tagged slow: the qemu runs leave it out
    // (CK_EXCLUDE_TAGS=slow); native and ASan runs take it.
    TCase *tcurve = tcase_create("learning");
    tcase_set_tags(tcurve, "slow");
    tcase_add_test(tcurve, learns_a_sentence);
    suite_add_tcase(s, tcurve);
    TCase *tt = tcase_create("training");
    tcase_add_test(tt, steps_allocate_nothing);
    tcase_add_test(tt, same_bits_on_any_thread_count);
    tcase_add_test(tt, bf16_compute_trains_like_f32);
#ifdef MHSA_TEST_SAFETENSORS
    tcase_add_loop_test(tt, matches_pytorch, 0,
                        (int)(sizeof ref_files / sizeof ref_files[0]));
    tcase_add_test(tt, checkpoint_resumes_bit_for_bit);
    tcase_add_test(tt, lm_weights_round_trip);
    tcase_add_test(tt, checkpoint_of_another_shape);
    tcase_add_test(tt, failed_write_keeps_previous_checkpoint);
#endif
    tcase_add_test(tt, cached_generation_matches_full_forward);
    tcase_add_test(tt, cache_errors);
    suite_add_tcase(s, tt);
    return s;
}

int main(void)
{
    note_quick("central differences at every 3rd element of the whole "
               "model's matrices, every 4th tanh point, 2 of 6 steps across "
               "thread counts, 10 of 40 steps of the bf16 curve");
    return run_suite(suite());
}
