// test_train.c — the training pieces of mhsa_train.h: cross-entropy against
// hand-derived values, AdamW/SGD/clipping against hand-computed steps, the
// whole model's gradients against finite differences, the tasks, that a
// step allocates nothing, that 1 and 2 threads give the same bits, and that
// the demo's model learns `repeat` and `induction`.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "api/objects.h"
#include "mhsa_train.h"
#include "util.h"

// ---- cross-entropy -------------------------------------------------------

// Reference values: row 0 is [1, 2, 3] -> target 2, loss
// log(e + e^2 + e^3) - 3 = 0.40760596444438 and softmax (0.0900305732,
// 0.2447284711, 0.6652409558); row 1 uniform over 3 -> ln 3 = 1.0986122887;
// row 2 has logits +-1000 (a naive exp overflows) -> target 1 costs 1000
// (lse = 1000 up to e^-1000); row 3 is not counted.
START_TEST(cross_entropy_reference_values)
{
    const float z[4 * 3] = { 1, 2, 3,   5, 5, 5,   1000, 0, -1000,
                             7, 8, 9 };
    const int32_t tgt[4] = { 2, 0, 1, -1 };
    float loss = -1, row[4], dz[12];
    fill_nan(row, 4);
    fill_nan(dz, 12);
    ck_assert_int_eq(mhsa_cross_entropy(4, 3, z, tgt, &loss, row, dz),
                     MHSA_OK);
    const double r0 = 0.40760596444438013, r1 = 1.0986122886681098;
    ck_assert_double_eq_tol(row[0], r0, 1e-6);
    ck_assert_double_eq_tol(row[1], r1, 1e-6);
    ck_assert_double_eq_tol(row[2], 1000.0, 1e-3);
    ck_assert_float_eq(row[3], 0.0f);
    ck_assert_double_eq_tol(loss, (r0 + r1 + 1000.0) / 3.0, 1e-4);
    // dz = (softmax - onehot) / 3 counted rows
    const double p0[3] = { 0.09003057317038046, 0.24472847105479767,
                           0.6652409557748219 };
    for (int j = 0; j < 3; j++) {
        ck_assert_double_eq_tol(dz[j], (p0[j] - (j == 2)) / 3.0, 1e-7);
        ck_assert_double_eq_tol(dz[3 + j], (1.0 / 3.0 - (j == 0)) / 3.0,
                                1e-7);
        ck_assert_float_eq(dz[9 + j], 0.0f);
    }
    ck_assert_double_eq_tol(dz[6], 1.0 / 3.0, 1e-7);   // p = 1 on 1000
    ck_assert_double_eq_tol(dz[7], -1.0 / 3.0, 1e-7);
    ck_assert_float_eq(dz[8], 0.0f);                    // e^-2000 underflows
}
END_TEST

START_TEST(cross_entropy_rejects_bad_targets)
{
    const float z[2] = { 0, 0 };
    int32_t tgt = 2;
    float loss = 42.0f;
    ck_assert_int_eq(mhsa_cross_entropy(1, 2, z, &tgt, &loss, NULL, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "targets[0] = 2"));
    tgt = -2;
    ck_assert_int_eq(mhsa_cross_entropy(1, 2, z, &tgt, &loss, NULL, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_float_eq(loss, 42.0f);
    tgt = -1;   // nothing counted: loss 0
    ck_assert_int_eq(mhsa_cross_entropy(1, 2, z, &tgt, &loss, NULL, NULL),
                     MHSA_OK);
    ck_assert_float_eq(loss, 0.0f);
}
END_TEST

// ---- optimisers ------------------------------------------------------------

// Two AdamW steps, lr 0.1, weight decay 0.01, beta 0.9 / 0.999, eps 1e-8.
// Step 1: mhat = g, vhat = g^2, so p = p * 0.999 - 0.1 * g / (|g| + eps):
//   1.0 -> 0.999 - 0.09999999 = 0.89900001, -2.0 -> -1.998 + 0.09999999,
//   0.5 (g = 0) -> 0.4995.
// Step 2 (g = 0.3, 0.05, -1), element 0: m = 0.009 + 0.03 = 0.039,
//   v = 0.999e-5 + 0.9e-4 = 0.9999e-4, mhat = 0.039 / 0.19,
//   vhat = 0.9999e-4 / 0.001999, p = 0.89900001 * 0.999 - 0.1 * mhat /
//   (sqrt(vhat) + eps) = 0.806322902; likewise the others.
START_TEST(adamw_matches_hand_computed_steps)
{
    mhsa_optim_config c = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    ck_assert_float_eq(c.beta1, 0.9f);
    ck_assert_float_eq(c.beta2, 0.999f);
    ck_assert_float_eq(c.eps, 1e-8f);
    c.lr = 0.1f;
    c.weight_decay = 0.01f;
    float p[3] = { 1.0f, -2.0f, 0.5f }, m[3] = { 0 }, v[3] = { 0 };
    const float g1[3] = { 0.1f, -0.2f, 0.0f }, g2[3] = { 0.3f, 0.05f, -1.0f };
    ck_assert_int_eq(mhsa_optim_update(&c, 1, 3, p, g1, m, v, 1.0f, 1),
                     MHSA_OK);
    const double s1[3] = { 0.899000010, -1.898000005, 0.499500000 };
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(p[i], s1[i], 2e-7);
    ck_assert_int_eq(mhsa_optim_update(&c, 2, 3, p, g2, m, v, 1.0f, 1),
                     MHSA_OK);
    const double s2[3] = { 0.806322902, -1.849155191, 0.573414181 };
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(p[i], s2[i], 2e-6);

    // decay == 0 (biases): no shrink; step 1 moves by exactly lr * sign(g).
    float q = 1.0f, qm = 0, qv = 0, g = 4.0f;
    ck_assert_int_eq(mhsa_optim_update(&c, 1, 1, &q, &g, &qm, &qv, 1.0f, 0),
                     MHSA_OK);
    ck_assert_double_eq_tol(q, 0.9, 1e-7);
}
END_TEST

START_TEST(sgd_and_bad_configs)
{
    mhsa_optim_config c = mhsa_optim_defaults(MHSA_OPTIM_SGD);
    c.lr = 0.5f;
    c.weight_decay = 0.1f;
    float p[2] = { 2.0f, -1.0f };
    const float g[2] = { 1.0f, 4.0f };
    // p -= lr * (scale * g + wd * p): 2 - 0.5 * (0.5 + 0.2) = 1.65,
    // -1 - 0.5 * (2 - 0.1) = -1.95
    ck_assert_int_eq(mhsa_optim_update(&c, 1, 2, p, g, NULL, NULL, 0.5f, 1),
                     MHSA_OK);
    ck_assert_double_eq_tol(p[0], 1.65, 1e-6);
    ck_assert_double_eq_tol(p[1], -1.95, 1e-6);

    mhsa_optim_config bad = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    bad.beta2 = 1.0f;
    ck_assert_int_eq(mhsa_optim_update(&bad, 1, 2, p, g, p, p, 1.0f, 1),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "beta2"));
    bad = c;
    bad.lr = -1.0f;
    ck_assert_int_eq(mhsa_optim_update(&bad, 1, 2, p, g, NULL, NULL, 1, 1),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_optim_update(&c, 0, 2, p, g, NULL, NULL, 1, 1),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_double_eq_tol(p[0], 1.65, 1e-6);   // untouched by failures
}
END_TEST

// ---- the model -------------------------------------------------------------

static mhsa_lm *make_lm_cfg(const mhsa_lm_config *c, uint64_t seed)
{
    mhsa_lm *lm = NULL;
    ck_assert_int_eq(mhsa_lm_create(c, &lm), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_init_random(lm, seed), MHSA_OK);
    return lm;
}

static mhsa_lm *make_lm(int V, int D, int H, int T, int B, uint64_t seed)
{
    mhsa_lm_config c = { V, D, H, T, B };
    return make_lm_cfg(&c, seed);
}

START_TEST(clipping_by_global_norm)
{
    mhsa_lm *lm = make_lm(5, 4, 2, 3, 1, 7);
    size_t n = mhsa_lm_n_params(lm);
    float *before = malloc(n * sizeof(float));
    size_t o = 0;
    for (int i = 0; i < mhsa_lm_n_tensors(lm); i++) {
        mhsa_lm_tensor t;
        ck_assert_int_eq(mhsa_lm_get_tensor(lm, i, &t), MHSA_OK);
        memcpy(before + o, t.data, t.numel * sizeof(float));
        for (size_t j = 0; j < t.numel; j++)
            t.grad[j] = 3.0f;
        o += t.numel;
    }
    ck_assert_uint_eq(o, n);
    // Every gradient 3: norm 3 sqrt(n); clipped to 1, SGD lr 1 moves each
    // parameter by 1 / (sqrt(n) + 1e-6 / 3).
    mhsa_optim_config c = mhsa_optim_defaults(MHSA_OPTIM_SGD);
    c.lr = 1.0f;
    c.clip_norm = 1.0f;
    float norm = 0;
    ck_assert_int_eq(mhsa_lm_step(lm, &c, &norm), MHSA_OK);
    ck_assert_double_eq_tol(norm, 3.0 * sqrt((double)n), 1e-3);
    double want = 3.0 / (3.0 * sqrt((double)n) + 1e-6);
    o = 0;
    for (int i = 0; i < mhsa_lm_n_tensors(lm); i++) {
        mhsa_lm_tensor t;
        mhsa_lm_get_tensor(lm, i, &t);
        for (size_t j = 0; j < t.numel; j++)
            ck_assert_double_eq_tol(before[o + j] - t.data[j], want, 1e-6);
        o += t.numel;
    }
    free(before);
    mhsa_lm_destroy(lm);
}
END_TEST

START_TEST(model_errors_and_state)
{
    mhsa_lm_config c = { 8, 6, 4, 4, 2 };
    mhsa_lm *lm = NULL;
    ck_assert_int_eq(mhsa_lm_create(&c, &lm), MHSA_ERR_SHAPE);
    ck_assert_ptr_null(lm);
    c.n_heads = 0;
    ck_assert_int_eq(mhsa_lm_create(&c, &lm), MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "n_heads"));
    // The K/V heads decide the parameter shapes: checked before the block.
    c = (mhsa_lm_config){ 8, 8, 4, 4, 2, .n_kv_heads = -1 };
    ck_assert_int_eq(mhsa_lm_create(&c, &lm), MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "n_kv_heads = -1"));
    c.n_kv_heads = 3;
    ck_assert_int_eq(mhsa_lm_create(&c, &lm), MHSA_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "n_kv_heads = 3"));
    ck_assert_ptr_null(lm);
    mhsa_lm_destroy(NULL);

    lm = make_lm(8, 6, 3, 4, 2, 1);
    ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_ERR_STATE);
    int32_t tok[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, tgt[8] = { 1 };
    float loss = 0, attn[3 * 4 * 4];
    ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, 3, 4, &loss, NULL),
                     MHSA_ERR_SHAPE);                 // B > max_batch
    ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, 1, 5, &loss, NULL),
                     MHSA_ERR_SHAPE);                 // T > max_seq_len
    tok[3] = 8;
    ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, 2, 4, &loss, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "tokens[3] = 8"));
    tok[3] = 3;
    ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, 2, 4, &loss, NULL),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_attention(lm, tok, 4, attn), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_ERR_STATE);
    // Causal weights: rows sum to 1, nothing above the diagonal, and the
    // first query sees only key 0.
    for (int h = 0; h < 3; h++)
        for (int i = 0; i < 4; i++) {
            double s = 0;
            for (int j = 0; j < 4; j++) {
                float w = attn[(h * 4 + i) * 4 + j];
                if (j > i)
                    ck_assert_float_eq(w, 0.0f);
                s += w;
            }
            ck_assert_double_eq_tol(s, 1.0, 1e-4);
        }
    ck_assert_float_eq(attn[0], 1.0f);
    mhsa_lm_destroy(lm);
}
END_TEST

static double forward_loss(mhsa_lm *lm, const int32_t *tok,
                           const int32_t *tgt, int B, int T)
{
    float l;
    ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, B, T, &l, NULL), MHSA_OK);
    return l;
}

// Every parameter of a small model (embeddings, block, head) against a
// central difference of the loss. The model is small enough to check all
// 447 of them. In fp32 the loss (~2) is exact to ~2e-7, so with h = 1e-2 the
// difference is good to ~1e-5 plus an O(h^2) curvature term; the bound
// 2e-3 + 2% of the tensor's largest gradient is far above both and far
// below what a wrong index, missing term or factor gives.
// Loop 1: the block as Llama's (one K/V head for both query heads, RoPE
// in interleaved pairs, a window of 3): its parameters take the
// grouped-query shape and every gradient still matches.
START_TEST(whole_model_gradient_check)
{
    enum { V = 7, D = 8, H = 2, T = 5, B = 2 };
    mhsa_lm_config c = { V, D, H, T, B };
    if (_i == 1)
        c = (mhsa_lm_config){ V, D, H, T, B, .n_kv_heads = 1, .rope_dim = 4,
                              .rope_theta = 100.0f, .rope_interleaved = 1,
                              .window = 3 };
    mhsa_lm *lm = make_lm_cfg(&c, 99);
    mhsa_lm_tensor w;
    ck_assert_int_eq(mhsa_lm_get_tensor(lm, 2, &w), MHSA_OK);
    ck_assert_str_eq(w.name, "attn.in_proj_weight");
    ck_assert_int_eq(w.shape[0], _i ? D + 2 * (D / H) : 3 * D);
    rng r = { 5 };
    // Non-zero biases, so their paths are exercised too.
    for (int i = 0; i < mhsa_lm_n_tensors(lm); i++) {
        mhsa_lm_tensor t;
        mhsa_lm_get_tensor(lm, i, &t);
        if (t.rank == 1)
            fill_uniform(&r, t.data, t.numel, -0.5f, 0.5f);
    }
    // A repeated token (the scatter-add must sum) and an uncounted target.
    int32_t tok[B * T] = { 1, 4, 1, 6, 0,   3, 3, 2, 5, 1 };
    int32_t tgt[B * T] = { 4, 1, 6, -1, 2,  3, 2, 5, 1, 0 };
    forward_loss(lm, tok, tgt, B, T);
    ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
    const float h = 1e-2f;
    for (int i = 0; i < mhsa_lm_n_tensors(lm); i++) {
        mhsa_lm_tensor t;
        mhsa_lm_get_tensor(lm, i, &t);
        float *g = malloc(t.numel * sizeof(float));
        memcpy(g, t.grad, t.numel * sizeof(float));   // forwards keep grads
        double maxg = 0, maxdiff = 0;
        for (size_t j = 0; j < t.numel; j++) {
            float p = t.data[j];
            t.data[j] = p + h;
            double lp = forward_loss(lm, tok, tgt, B, T);
            t.data[j] = p - h;
            double lm_ = forward_loss(lm, tok, tgt, B, T);
            t.data[j] = p;
            double num = (lp - lm_) / (2.0 * (double)h);
            double d = fabs(num - (double)g[j]);
            if (d > maxdiff)
                maxdiff = d;
            if (fabs(num) > maxg)
                maxg = fabs(num);
        }
        ck_assert_msg(maxg > 1e-3,
                      "%s: gradient suspiciously zero", t.name);
        ck_assert_msg(maxdiff <= 2e-3 + 0.02 * maxg,
                      "%s: max |analytic - numeric| = %g (max |g| = %g)",
                      t.name, maxdiff, maxg);
        free(g);
    }
    mhsa_lm_destroy(lm);
}
END_TEST

START_TEST(tasks_have_their_structure)
{
    enum { B = 3, T = 9, V = 50 };
    int32_t tok[B * T], tgt[B * T];
    uint64_t s = 11;
    ck_assert_int_eq(mhsa_task_batch(MHSA_TASK_REPEAT, &s, B, T, V, tok, tgt),
                     MHSA_OK);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            ck_assert_int_eq(tok[b * T + t], tok[b * T]);
            ck_assert_int_eq(tgt[b * T + t], tok[b * T]);
        }
    ck_assert_int_eq(mhsa_task_batch(MHSA_TASK_INDUCTION, &s, B, T, V, tok,
                                     tgt), MHSA_OK);
    int h = T / 2;   // 4: the row is r0 r1 r2 r3 r0 r1 r2 r3 r0 | r1
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const int32_t *row = tok + b * T;
            ck_assert(row[t] >= 0 && row[t] < V);
            ck_assert_int_eq(row[t], row[t % h]);
            ck_assert_int_eq(tgt[b * T + t], t < h - 1 ? -1 : row[(t + 1) % h]);
        }
    // The same seed gives the same batch.
    int32_t tok2[B * T], tgt2[B * T];
    uint64_t s1 = 5, s2 = 5;
    mhsa_task_batch(MHSA_TASK_INDUCTION, &s1, B, T, V, tok, tgt);
    mhsa_task_batch(MHSA_TASK_INDUCTION, &s2, B, T, V, tok2, tgt2);
    ck_assert_mem_eq(tok, tok2, sizeof tok);
    ck_assert_int_eq(mhsa_task_batch(MHSA_TASK_INDUCTION, &s, 1, 1, V, tok,
                                     tgt), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_task_batch((mhsa_task)7, &s, 1, 4, V, tok, tgt),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_str_eq(mhsa_task_name(MHSA_TASK_INDUCTION), "induction");
}
END_TEST

START_TEST(steps_allocate_nothing)
{
    enum { V = 16, D = 8, H = 2, T = 6, B = 3 };
    mhsa_lm *lm = make_lm(V, D, H, T, B, 3);
    int32_t tok[B * T], tgt[B * T];
    uint64_t s = 1;
    mhsa_optim_config c = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    c.clip_norm = 1.0f;
    float loss, attn[H * T * T];
    mhsa__alloc_fail_at(1);   // any allocation from here on fails
    for (int i = 0; i < 3; i++) {
        mhsa_task_batch(MHSA_TASK_INDUCTION, &s, B, T, V, tok, tgt);
        ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, B, T, &loss, NULL),
                         MHSA_OK);
        ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
        ck_assert_int_eq(mhsa_lm_step(lm, &c, NULL), MHSA_OK);
    }
    ck_assert_int_eq(mhsa_lm_attention(lm, tok, T, attn), MHSA_OK);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);
    mhsa_lm_destroy(lm);
}
END_TEST

// ---- training --------------------------------------------------------------

typedef struct run_cfg {
    mhsa_task task;
    int V, D, H, T, B, steps;
    float lr;
    uint64_t seed;
} run_cfg;

// The demo's defaults (mhsa-train with no flags): 3 epochs of 50 steps.
static const run_cfg demo = { MHSA_TASK_REPEAT, 64, 32, 4, 12, 32, 150,
                              3e-3f, 1 };

// Trains from scratch; losses (steps) gets every step's loss; returns the
// mean loss over 8 held-out batches.
static double train(const run_cfg *rc, float *losses, mhsa_lm **keep)
{
    mhsa_lm *lm = make_lm(rc->V, rc->D, rc->H, rc->T, rc->B, rc->seed);
    int32_t *tok = malloc(2 * (size_t)rc->B * rc->T * sizeof(int32_t));
    int32_t *tgt = tok + (size_t)rc->B * rc->T;
    mhsa_optim_config c = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    c.lr = rc->lr;
    uint64_t s = rc->seed * 1000 + 1;
    for (int i = 0; i < rc->steps; i++) {
        float l;
        ck_assert_int_eq(mhsa_task_batch(rc->task, &s, rc->B, rc->T, rc->V,
                                         tok, tgt), MHSA_OK);
        ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, rc->B, rc->T, &l,
                                         NULL), MHSA_OK);
        ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
        ck_assert_int_eq(mhsa_lm_step(lm, &c, NULL), MHSA_OK);
        if (losses)
            losses[i] = l;
    }
    uint64_t e = rc->seed * 1000 + 2;
    double sum = 0;
    for (int i = 0; i < 8; i++) {
        mhsa_task_batch(rc->task, &e, rc->B, rc->T, rc->V, tok, tgt);
        sum += forward_loss(lm, tok, tgt, rc->B, rc->T);
    }
    free(tok);
    if (keep)
        *keep = lm;
    else
        mhsa_lm_destroy(lm);
    return sum / 8;
}

// The acceptance test of the demo: repeat at H=4, D=32, T=12, V=64 starts
// near ln 64 and is well below 1.0 after 3 epochs, for several seeds.
START_TEST(repeat_converges_at_demo_size)
{
    run_cfg rc = demo;
    rc.seed = 1 + (uint64_t)_i;
    note_quick("seed 1 only");
    float losses[150];
    double final = train(&rc, losses, NULL);
    ck_assert_msg(fabs(losses[0] - log(64.0)) < 0.5,
                  "first loss %g, expected about ln 64", (double)losses[0]);
    ck_assert_msg(final < 1.0, "seed %d: held-out loss %g after 3 epochs",
                  (int)rc.seed, final);
}
END_TEST

// induction at the demo size: only positions whose next token already
// appeared h = 6 tokens back count. Without looking back those targets are
// uniform over 64 tokens, so any model that ignores the first half is stuck
// at ln 64 = 4.16 (a "previous token" head, the repeat solution, is no
// better). A held-out loss below 1.0 means the correct token gets a
// geometric-mean probability above 1/e, 23x chance: only possible by
// attending h - 1 positions back. (Measured: 0.003 to 0.004 for seeds 1..3
// with AVX2 and scalar kernels, so the bound leaves room for other
// rounding.) We also check the mechanism: for every query t >= h, some head
// puts most of its weight on the earlier copies of the next token, keys
// j <= t with j = t + 1 (mod h) (t - h + 1, and 0 for the last query).
START_TEST(induction_learns_to_look_back)
{
    run_cfg rc = demo;
    rc.task = MHSA_TASK_INDUCTION;
    rc.seed = 1 + (uint64_t)_i;
    note_quick("seed 1 only");
    mhsa_lm *lm = NULL;
    double final = train(&rc, NULL, &lm);
    ck_assert_msg(final < 1.0, "seed %d: induction held-out loss %g",
                  (int)rc.seed, final);
    enum { T = 12, H = 4, h = T / 2 };
    int32_t tok[T], tgt[T];
    uint64_t s = 77;
    float attn[H * T * T];
    mhsa_task_batch(MHSA_TASK_INDUCTION, &s, 1, T, 64, tok, tgt);
    ck_assert_int_eq(mhsa_lm_attention(lm, tok, T, attn), MHSA_OK);
    for (int t = h; t < T; t++) {
        float best = 0;
        for (int hd = 0; hd < H; hd++) {
            float w = 0;
            for (int j = (t + 1) % h; j <= t; j += h)
                w += attn[(hd * T + t) * T + j];
            if (w > best)
                best = w;
        }
        ck_assert_msg(best > 0.5f, "query %d: best weight on the copies of "
                      "the next token is %g", t, (double)best);
    }
    mhsa_lm_destroy(lm);
}
END_TEST

// The attention fields reach the block: the window shows in the attention
// weights, and each RoPE field changes the loss of the same model.
START_TEST(attention_variant_reaches_the_block)
{
    enum { V = 7, D = 8, H = 2, T = 6, B = 1 };
    const mhsa_lm_config base = { V, D, H, T, B, .n_kv_heads = 1,
                                  .rope_dim = 4, .rope_theta = 100.0f,
                                  .rope_interleaved = 1, .window = 3 };
    int32_t tok[T] = { 1, 4, 1, 6, 0, 3 }, tgt[T] = { 4, 1, 6, 0, 3, 2 };
    mhsa_lm *lm = make_lm_cfg(&base, 5);
    float attn[H * T * T];
    ck_assert_int_eq(mhsa_lm_attention(lm, tok, T, attn), MHSA_OK);
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < T; j++) {
                float a = attn[(h * T + t) * T + j];
                int seen = j <= t && j > t - 3;
                ck_assert_msg(seen ? a > 0 : a == 0, "h %d t %d j %d: %g",
                              h, t, j, (double)a);
            }
    double l0 = forward_loss(lm, tok, tgt, B, T);
    mhsa_lm_destroy(lm);
    for (int k = 0; k < 3; k++) {
        mhsa_lm_config c = base;
        if (k == 0)
            c.rope_dim = 0, c.rope_theta = 0, c.rope_interleaved = 0;
        else if (k == 1)
            c.rope_theta = 10000.0f;
        else
            c.rope_interleaved = 0;
        lm = make_lm_cfg(&c, 5);
        double l = forward_loss(lm, tok, tgt, B, T);
        ck_assert_msg(fabs(l - l0) > 1e-6, "change %d: loss %.9g == %.9g",
                      k, l, l0);
        mhsa_lm_destroy(lm);
    }
}
END_TEST

// The same training with 1 and with 2 OpenMP threads: every loss and every
// final parameter bit for bit equal.
START_TEST(same_bits_on_one_and_two_threads)
{
    run_cfg rc = demo;
    rc.task = MHSA_TASK_INDUCTION;
    rc.steps = 40;
    float l1[40], l2[40];
    mhsa_lm *a = NULL, *b = NULL;
    omp_set_num_threads(1);
    train(&rc, l1, &a);
    omp_set_num_threads(2);
    train(&rc, l2, &b);
    ck_assert_mem_eq(l1, l2, sizeof l1);
    for (int i = 0; i < mhsa_lm_n_tensors(a); i++) {
        mhsa_lm_tensor ta, tb;
        mhsa_lm_get_tensor(a, i, &ta);
        mhsa_lm_get_tensor(b, i, &tb);
        ck_assert_msg(memcmp(ta.data, tb.data, ta.numel * sizeof(float)) ==
                      0, "%s differs between 1 and 2 threads", ta.name);
    }
    mhsa_lm_destroy(a);
    mhsa_lm_destroy(b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("pieces");
    tcase_add_test(tc, cross_entropy_reference_values);
    tcase_add_test(tc, cross_entropy_rejects_bad_targets);
    tcase_add_test(tc, adamw_matches_hand_computed_steps);
    tcase_add_test(tc, sgd_and_bad_configs);
    tcase_add_test(tc, clipping_by_global_norm);
    tcase_add_test(tc, model_errors_and_state);
    tcase_add_loop_test(tc, whole_model_gradient_check, 0, 2);
    tcase_add_test(tc, attention_variant_reaches_the_block);
    tcase_add_test(tc, tasks_have_their_structure);
    tcase_add_test(tc, steps_allocate_nothing);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, same_bits_on_one_and_two_threads);
    // Learning curves, tagged slow: the qemu runs leave them out
    // (CK_EXCLUDE_TAGS=slow; two minutes there, and the kernels they use
    // are checked case by case above); native and ASan runs take them.
    TCase *tr = tcase_create("training");
    tcase_set_tags(tr, "slow");
    // Quick mode (util.h): seed 1 only. Every run keeps its 150 steps and
    // its loss bound; seed 2 is the same code path on other numbers.
    tcase_add_loop_test(tr, repeat_converges_at_demo_size, 0, test_count(2));
    tcase_add_loop_test(tr, induction_learns_to_look_back, 0, test_count(2));
    suite_add_tcase(s, tr);
    return s;
}

int main(void) { return run_suite(suite()); }
