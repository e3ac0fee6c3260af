// test_block_api.c — every error path of the public API (status, message
// naming the argument, nothing modified on failure), lifetimes, weights in
// and out, deterministic init, workspace memory, KV-cache rules.
#include <fenv.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockutil.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#define EXPECT_ERR(call, status, needle)                                     \
    do {                                                                     \
        mhsa_status st_ = (call);                                            \
        ck_assert_msg(st_ == (status), "%s gave %s, want %s", #call,         \
                      mhsa_status_str(st_), mhsa_status_str(status));        \
        ck_assert_msg(strstr(mhsa_last_error(), (needle)) != NULL,           \
                      "%s: message '%s' lacks '%s'", #call,                  \
                      mhsa_last_error(), (needle));                          \
    } while (0)

static mhsa_block *tiny_block(int causal)
{
    mhsa_config cfg = { 8, 2, 16, causal, 1 };
    mhsa_block *b = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &b), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(b, 3), MHSA_OK);
    return b;
}

START_TEST(block_create_rejects_bad_configs)
{
    mhsa_block *sentinel = (mhsa_block *)&sentinel, *b = sentinel;
    mhsa_config ok = { 8, 2, 16, 1, 1 }, c;
    EXPECT_ERR(mhsa_block_create(NULL, &b), MHSA_ERR_INVALID_ARG, "cfg");
    EXPECT_ERR(mhsa_block_create(&ok, NULL), MHSA_ERR_INVALID_ARG, "out");
    c = ok; c.d_model = 0;
    EXPECT_ERR(mhsa_block_create(&c, &b), MHSA_ERR_INVALID_ARG, "d_model = 0");
    c = ok; c.n_heads = -3;
    EXPECT_ERR(mhsa_block_create(&c, &b), MHSA_ERR_INVALID_ARG, "n_heads = -3");
    c = ok; c.max_seq_len = 0;
    EXPECT_ERR(mhsa_block_create(&c, &b), MHSA_ERR_INVALID_ARG, "max_seq_len");
    c = ok; c.causal = 2;
    EXPECT_ERR(mhsa_block_create(&c, &b), MHSA_ERR_INVALID_ARG, "causal = 2");
    c = ok; c.bias = -1;
    EXPECT_ERR(mhsa_block_create(&c, &b), MHSA_ERR_INVALID_ARG, "bias = -1");
    c = ok; c.n_heads = 3;
    EXPECT_ERR(mhsa_block_create(&c, &b), MHSA_ERR_SHAPE, "n_heads = 3");
    c = ok; c.d_model = INT_MAX; c.n_heads = 1;
    EXPECT_ERR(mhsa_block_create(&c, &b), MHSA_ERR_NO_MEMORY, "d_model");
    ck_assert_ptr_eq(b, sentinel);   // *out untouched on failure
}
END_TEST

START_TEST(null_is_a_noop)
{
    mhsa_block_destroy(NULL);
    mhsa_workspace_destroy(NULL);
    mhsa_grads_destroy(NULL);
    mhsa_grads_zero(NULL);
    mhsa_kv_cache_destroy(NULL);
    mhsa_kv_cache_reset(NULL);
    ck_assert_int_eq(mhsa_kv_cache_len(NULL), 0);
    ck_assert_uint_eq(mhsa_kv_cache_bytes(NULL), 0);
    ck_assert_uint_eq(mhsa_workspace_bytes(NULL), 0);
}
END_TEST

START_TEST(weights_round_trip_and_bias_rules)
{
    rng r = { 5 };
    problem p;
    problem_make(&p, &r, 1, 4, 12, 3, 1, 1, MASK_NONE);
    mhsa_block *b = problem_block(&p);
    float wq[3 * 144], bq[36], wo[144], bo[12];
    ck_assert_int_eq(mhsa_block_get_weights(b, wq, bq, wo, bo), MHSA_OK);
    ck_assert(!memcmp(wq, p.w_qkv, sizeof wq) && !memcmp(bq, p.b_qkv, sizeof bq));
    ck_assert(!memcmp(wo, p.w_out, sizeof wo) && !memcmp(bo, p.b_out, sizeof bo));
    EXPECT_ERR(mhsa_block_set_weights(b, p.w_qkv, NULL, p.w_out, p.b_out),
               MHSA_ERR_INVALID_ARG, "b_qkv");
    EXPECT_ERR(mhsa_block_set_weights(b, NULL, p.b_qkv, p.w_out, p.b_out),
               MHSA_ERR_INVALID_ARG, "w_qkv");
    EXPECT_ERR(mhsa_block_set_weights(NULL, p.w_qkv, p.b_qkv, p.w_out,
                                      p.b_out), MHSA_ERR_INVALID_ARG, "blk");
    EXPECT_ERR(mhsa_block_get_weights(b, wq, bq, NULL, bo),
               MHSA_ERR_INVALID_ARG, "w_out");
    ck_assert(mhsa_block_config(b)->d_model == 12);
    mhsa_block_destroy(b);
    // bias == 0: bias pointers are ignored and may be NULL
    mhsa_config nb = { 12, 3, 4, 1, 0 };
    ck_assert_int_eq(mhsa_block_create(&nb, &b), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(b, p.w_qkv, NULL, p.w_out, NULL),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_block_get_weights(b, wq, NULL, wo, NULL), MHSA_OK);
    ck_assert(!memcmp(wq, p.w_qkv, sizeof wq));
    mhsa_block_destroy(b);
    problem_free(&p);
}
END_TEST

START_TEST(init_random_is_deterministic_xavier)
{
    mhsa_config cfg = { 16, 4, 8, 1, 1 };
    mhsa_block *a = NULL, *b = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &a), MHSA_OK);
    ck_assert_int_eq(mhsa_block_create(&cfg, &b), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(a, 42), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(b, 42), MHSA_OK);
    float wa[768], wb[768], ba[48], bb[48], oa[256], ob[256], ca[16], cb[16];
    mhsa_block_get_weights(a, wa, ba, oa, ca);
    mhsa_block_get_weights(b, wb, bb, ob, cb);
    ck_assert(!memcmp(wa, wb, sizeof wa) && !memcmp(oa, ob, sizeof oa));
    float lim_in = sqrtf(6.0f / (16 + 48)), lim_out = sqrtf(6.0f / 32);
    float maxin = 0, maxout = 0;
    for (int i = 0; i < 768; i++)
        maxin = fmaxf(maxin, fabsf(wa[i]));
    for (int i = 0; i < 256; i++)
        maxout = fmaxf(maxout, fabsf(oa[i]));
    ck_assert(maxin <= lim_in && maxin > 0.9f * lim_in);
    ck_assert(maxout <= lim_out && maxout > 0.8f * lim_out);
    for (int i = 0; i < 48; i++)
        ck_assert(ba[i] == 0.0f);
    ck_assert_int_eq(mhsa_block_init_random(b, 43), MHSA_OK);
    mhsa_block_get_weights(b, wb, bb, ob, cb);
    ck_assert(memcmp(wa, wb, sizeof wa) != 0);
    EXPECT_ERR(mhsa_block_init_random(NULL, 1), MHSA_ERR_INVALID_ARG, "blk");
    mhsa_block_destroy(a);
    mhsa_block_destroy(b);
}
END_TEST

START_TEST(forward_errors_leave_outputs_alone)
{
    mhsa_block *b = tiny_block(1), *other = tiny_block(1);
    mhsa_workspace *ws = NULL, *ws_other = NULL;
    ck_assert_int_eq(mhsa_workspace_create(b, 2, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(other, 2, &ws_other), MHSA_OK);
    float x[3 * 17 * 8] = { 0 }, y[3 * 17 * 8], a[2 * 2 * 17 * 17];
    for (size_t i = 0; i < sizeof y / 4; i++)
        y[i] = 7.0f;
    for (size_t i = 0; i < sizeof a / 4; i++)
        a[i] = 7.0f;
    EXPECT_ERR(mhsa_forward(NULL, ws, x, 1, 4, NULL, y, a),
               MHSA_ERR_INVALID_ARG, "blk");
    EXPECT_ERR(mhsa_forward(b, NULL, x, 1, 4, NULL, y, a),
               MHSA_ERR_INVALID_ARG, "ws");
    EXPECT_ERR(mhsa_forward(b, ws, NULL, 1, 4, NULL, y, a),
               MHSA_ERR_INVALID_ARG, "x");
    EXPECT_ERR(mhsa_forward(b, ws, x, 1, 4, NULL, NULL, a),
               MHSA_ERR_INVALID_ARG, "y");
    EXPECT_ERR(mhsa_forward(b, ws, x, 0, 4, NULL, y, a),
               MHSA_ERR_INVALID_ARG, "B = 0");
    EXPECT_ERR(mhsa_forward(b, ws, x, 1, -2, NULL, y, a),
               MHSA_ERR_INVALID_ARG, "T = -2");
    EXPECT_ERR(mhsa_forward(b, ws, x, 1, 17, NULL, y, a), MHSA_ERR_SHAPE,
               "T = 17");
    EXPECT_ERR(mhsa_forward(b, ws, x, 3, 4, NULL, y, a), MHSA_ERR_SHAPE,
               "B = 3");
    EXPECT_ERR(mhsa_forward(b, ws_other, x, 1, 4, NULL, y, a),
               MHSA_ERR_INVALID_ARG, "another block");
    for (size_t i = 0; i < sizeof y / 4; i++)
        ck_assert(y[i] == 7.0f);
    for (size_t i = 0; i < sizeof a / 4; i++)
        ck_assert(a[i] == 7.0f);
    // and the workspace still works
    ck_assert_int_eq(mhsa_forward(b, ws, x, 2, 16, NULL, y, a), MHSA_OK);
    mhsa_workspace_destroy(ws);
    mhsa_workspace_destroy(ws_other);
    mhsa_block_destroy(b);
    mhsa_block_destroy(other);
}
END_TEST

START_TEST(workspace_errors_and_memory_is_linear_in_t)
{
    mhsa_block *b = tiny_block(1);
    mhsa_workspace *ws = (mhsa_workspace *)&ws;
    EXPECT_ERR(mhsa_workspace_create(b, 0, &ws), MHSA_ERR_INVALID_ARG,
               "max_batch = 0");
    EXPECT_ERR(mhsa_workspace_create(NULL, 1, &ws), MHSA_ERR_INVALID_ARG,
               "blk");
    EXPECT_ERR(mhsa_workspace_create(b, 1, NULL), MHSA_ERR_INVALID_ARG, "out");
    ck_assert_ptr_eq(ws, (mhsa_workspace *)&ws);
    mhsa_block_destroy(b);

    // max_batch x max_seq_len x D beyond size_t: an error, no allocation
    mhsa_config wide = { 64, 4, INT_MAX, 1, 0 };
    ck_assert_int_eq(mhsa_block_create(&wide, &b), MHSA_OK);
    EXPECT_ERR(mhsa_workspace_create(b, INT_MAX, &ws), MHSA_ERR_NO_MEMORY,
               "max_batch");
    mhsa_block_destroy(b);

    // T = 8192: no T x T anywhere; memory grows linearly with T.
    mhsa_config c1 = { 64, 4, 8192, 1, 1 }, c2 = { 64, 4, 4096, 1, 1 };
    mhsa_block *b1 = NULL, *b2 = NULL;
    mhsa_workspace *w1 = NULL, *w2 = NULL;
    ck_assert_int_eq(mhsa_block_create(&c1, &b1), MHSA_OK);
    ck_assert_int_eq(mhsa_block_create(&c2, &b2), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(b1, 1, &w1), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(b2, 1, &w2), MHSA_OK);
    size_t m1 = mhsa_workspace_bytes(w1), m2 = mhsa_workspace_bytes(w2);
    size_t tt = (size_t)8192 * 8192 * sizeof(float);
    ck_assert_msg(m1 < tt / 8, "workspace %zu bytes at T=8192", m1);
    // doubling T adds at most 8 floats per extra token per model column
    ck_assert(m1 - m2 <= (size_t)4096 * 64 * 4 * 9);
    mhsa_workspace_destroy(w1);
    mhsa_workspace_destroy(w2);
    mhsa_block_destroy(b1);
    mhsa_block_destroy(b2);
}
END_TEST

// mhsa_workspace_create_sized: memory by max_t, the same bits as a full
// workspace, and every call beyond max_t refused (a cached decode over more
// keys than its partials hold would write past them).
START_TEST(sized_workspace_rules_and_bits)
{
    mhsa_block *b = tiny_block(1);   // D 8, max_seq_len 16
    mhsa_workspace *ws = (mhsa_workspace *)&ws, *full = NULL;
    EXPECT_ERR(mhsa_workspace_create_sized(b, 1, 0, &ws),
               MHSA_ERR_INVALID_ARG, "max_t");
    EXPECT_ERR(mhsa_workspace_create_sized(b, 1, 17, &ws),
               MHSA_ERR_INVALID_ARG, "max_t");
    ck_assert_ptr_eq(ws, (mhsa_workspace *)&ws);
    ck_assert_int_eq(mhsa_workspace_create_sized(b, 2, 4, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(b, 2, &full), MHSA_OK);
    ck_assert(mhsa_workspace_bytes(ws) < mhsa_workspace_bytes(full));
    float x[2 * 16 * 8], y[2 * 16 * 8], yf[2 * 16 * 8];
    rng r = { 21 };
    fill_uniform(&r, x, 2 * 16 * 8, -1, 1);
    ck_assert_int_eq(mhsa_forward(b, ws, x, 2, 4, NULL, y, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_forward(b, full, x, 2, 4, NULL, yf, NULL), MHSA_OK);
    ck_assert(!memcmp(y, yf, 2 * 4 * 8 * sizeof(float)));
    EXPECT_ERR(mhsa_forward(b, ws, x, 1, 5, NULL, y, NULL), MHSA_ERR_SHAPE,
               "max_t = 4");
    mhsa_kv_cache *small = NULL, *big = NULL;
    ck_assert_int_eq(mhsa_kv_cache_create(b, 1, 4, &small), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create(b, 1, 16, &big), MHSA_OK);
    ck_assert_int_eq(mhsa_forward_cached(b, ws, small, x, 1, 3, y), MHSA_OK);
    ck_assert_int_eq(mhsa_forward_cached(b, full, big, x, 1, 3, yf),
                     MHSA_OK);
    ck_assert(!memcmp(y, yf, 3 * 8 * sizeof(float)));
    EXPECT_ERR(mhsa_forward_cached(b, ws, big, x, 1, 1, y), MHSA_ERR_SHAPE,
               "capacity = 16");
    ck_assert_int_eq(mhsa_kv_cache_len(big), 3);
    mhsa_kv_cache_reset(small);
    EXPECT_ERR(mhsa_forward_cached(b, ws, small, x, 1, 5, y), MHSA_ERR_SHAPE,
               "t_new = 5");
    mhsa_kv_cache_destroy(small);
    mhsa_kv_cache_destroy(big);
    mhsa_workspace_destroy(ws);
    mhsa_workspace_destroy(full);
    mhsa_block_destroy(b);
}
END_TEST

START_TEST(backward_state_rules)
{
    mhsa_block *b = tiny_block(1);
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL, *g_other = NULL;
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_workspace_create(b, 1, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(b, &g), MHSA_OK);
    mhsa_config oc = { 16, 2, 4, 1, 1 };
    mhsa_block *ob = NULL;
    ck_assert_int_eq(mhsa_block_create(&oc, &ob), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(ob, &g_other), MHSA_OK);
    float x[4 * 8], y[4 * 8], dy[4 * 8], dx[4 * 8];
    rng r = { 9 };
    fill_uniform(&r, x, 32, -1, 1);
    fill_uniform(&r, dy, 32, -1, 1);
    EXPECT_ERR(mhsa_backward(b, ws, dy, dx, g), MHSA_ERR_STATE, "no forward");
    ck_assert_int_eq(mhsa_forward(b, ws, x, 1, 4, NULL, y, NULL), MHSA_OK);
    EXPECT_ERR(mhsa_backward(b, ws, NULL, dx, g), MHSA_ERR_INVALID_ARG, "dy");
    EXPECT_ERR(mhsa_backward(b, ws, dy, dx, NULL), MHSA_ERR_INVALID_ARG, "g");
    EXPECT_ERR(mhsa_backward(b, ws, dy, dx, g_other), MHSA_ERR_INVALID_ARG,
               "d_model");
    for (int i = 0; i < 3 * 8 * 8; i++)
        ck_assert(g->w_qkv[i] == 0.0f);
    // twice for one forward: gradients add up
    ck_assert_int_eq(mhsa_backward(b, ws, dy, NULL, g), MHSA_OK);
    float once = g->w_out[5];
    ck_assert_int_eq(mhsa_backward(b, ws, dy, dx, g), MHSA_OK);
    ck_assert_float_eq(g->w_out[5], once + once);
    mhsa_grads_zero(g);
    ck_assert(g->w_out[5] == 0.0f && g->b_qkv[3] == 0.0f);
    // a weight change invalidates the recorded forward
    ck_assert_int_eq(mhsa_block_init_random(b, 4), MHSA_OK);
    EXPECT_ERR(mhsa_backward(b, ws, dy, dx, g), MHSA_ERR_STATE, "weights");
    // a cached forward on the same workspace discards it
    ck_assert_int_eq(mhsa_forward(b, ws, x, 1, 4, NULL, y, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create(b, 1, 8, &c), MHSA_OK);
    ck_assert_int_eq(mhsa_forward_cached(b, ws, c, x, 1, 1, y), MHSA_OK);
    EXPECT_ERR(mhsa_backward(b, ws, dy, dx, g), MHSA_ERR_STATE, "forward");
    mhsa_kv_cache_destroy(c);
    mhsa_grads_destroy(g);
    mhsa_grads_destroy(g_other);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(b);
    mhsa_block_destroy(ob);
}
END_TEST

START_TEST(kv_cache_rules)
{
    mhsa_block *b = tiny_block(1), *nc = tiny_block(0), *other = tiny_block(1);
    mhsa_kv_cache *c = (mhsa_kv_cache *)&c;
    EXPECT_ERR(mhsa_kv_cache_create(nc, 1, 4, &c), MHSA_ERR_INVALID_ARG,
               "causal");
    EXPECT_ERR(mhsa_kv_cache_create(b, 0, 4, &c), MHSA_ERR_INVALID_ARG,
               "max_batch = 0");
    EXPECT_ERR(mhsa_kv_cache_create(b, 1, 0, &c), MHSA_ERR_INVALID_ARG,
               "capacity = 0");
    EXPECT_ERR(mhsa_kv_cache_create(b, 1, 17, &c), MHSA_ERR_SHAPE,
               "capacity = 17");
    ck_assert_ptr_eq(c, (mhsa_kv_cache *)&c);
    mhsa_workspace *ws = NULL, *ws_other = NULL;
    ck_assert_int_eq(mhsa_workspace_create(b, 2, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(other, 2, &ws_other), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create(b, 2, 6, &c), MHSA_OK);
    ck_assert(mhsa_kv_cache_bytes(c) >= 2 * 2 * 6 * 8 * sizeof(float));
    float x[2 * 6 * 8], y[2 * 6 * 8], y1[2 * 6 * 8], y2[2 * 6 * 8];
    rng r = { 10 };
    fill_uniform(&r, x, 96, -1, 1);
    ck_assert_int_eq(mhsa_forward_cached(b, ws, c, x, 2, 4, y1), MHSA_OK);
    EXPECT_ERR(mhsa_forward_cached(b, ws, c, x, 1, 1, y), MHSA_ERR_SHAPE,
               "B = 1");
    EXPECT_ERR(mhsa_forward_cached(b, ws, c, x, 2, 3, y), MHSA_ERR_SHAPE,
               "capacity");
    EXPECT_ERR(mhsa_forward_cached(other, ws_other, c, x, 2, 1, y),
               MHSA_ERR_INVALID_ARG, "another block");
    EXPECT_ERR(mhsa_forward_cached(b, ws_other, c, x, 2, 1, y),
               MHSA_ERR_INVALID_ARG, "another block");
    EXPECT_ERR(mhsa_forward_cached(b, ws, c, x, 2, 0, y),
               MHSA_ERR_INVALID_ARG, "t_new = 0");
    EXPECT_ERR(mhsa_forward_cached(b, ws, NULL, x, 2, 1, y),
               MHSA_ERR_INVALID_ARG, "cache");
    ck_assert_int_eq(mhsa_kv_cache_len(c), 4);   // unchanged by failures
    ck_assert_int_eq(mhsa_forward_cached(b, ws, c, x + 2 * 4 * 8, 2, 2, y),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_len(c), 6);
    // a reset cache behaves bit for bit like a fresh one
    mhsa_kv_cache_reset(c);
    ck_assert_int_eq(mhsa_kv_cache_len(c), 0);
    ck_assert_int_eq(mhsa_forward_cached(b, ws, c, x, 2, 4, y2), MHSA_OK);
    ck_assert(!memcmp(y1, y2, 2 * 4 * 8 * sizeof(float)));
    mhsa_kv_cache_reset(c);   // and may take another B after a reset
    ck_assert_int_eq(mhsa_forward_cached(b, ws, c, x, 1, 2, y), MHSA_OK);
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
    mhsa_workspace_destroy(ws_other);
    mhsa_block_destroy(b);
    mhsa_block_destroy(nc);
    mhsa_block_destroy(other);
}
END_TEST

// Switching the ISA after the weights were packed still gives the right
// answer (the block packs for the table active at the weight change).
START_TEST(isa_switch_after_set_weights)
{
    rng r = { 12 };
    problem p;
    problem_make(&p, &r, 2, 33, 32, 4, 1, 1, MASK_NONE);
    mhsa_block *b = problem_block(&p);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(b, 2, &ws), MHSA_OK);
    size_t ny = 2 * 33 * 32;
    float *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
    ck_assert_int_eq(mhsa_forward(b, ws, p.x, 2, 33, NULL, y0, NULL), MHSA_OK);
    for (int i = 0; i < N_ISAS; i++) {
        if (!mhsa_kernels_for(all_isas[i]))
            continue;
        ck_assert_int_eq(mhsa_select_isa(all_isas[i]), MHSA_OK);
        ck_assert_int_eq(mhsa_forward(b, ws, p.x, 2, 33, NULL, y1, NULL),
                         MHSA_OK);
        ck_assert(rel_err(y1, y0, ny) < 1e-5);
    }
    free(y0);
    free(y1);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(b);
    problem_free(&p);
}
END_TEST

// Both ways between every pair of ISAs this machine runs (avx512 too, on
// emulated kernels where the CPU lacks it): a block whose weights were
// packed and a workspace sized while ISA a was active give ISA b's results
// after a switch to b, forward and backward, and switching back to a gives
// a's bits again.
START_TEST(isa_switch_between_every_pair)
{
    rng r = { 13 };
    problem p;
    problem_make(&p, &r, 2, 37, 64, 4, 1, 1, MASK_RANDOM);
    size_t ny = 2 * 37 * 64;
    float *y[N_ISAS], *dx[N_ISAS], *y1 = malloc(ny * 4), *dx1 = malloc(ny * 4);
    int have[N_ISAS];
    // Every ISA's own results on a block created under it.
    for (int i = 0; i < N_ISAS; i++) {
        y[i] = dx[i] = NULL;
        have[i] = mhsa_kernels_for(all_isas[i]) != NULL;
        if (!have[i])
            continue;
        y[i] = malloc(ny * 4);
        dx[i] = malloc(ny * 4);
        ck_assert_int_eq(mhsa_select_isa(all_isas[i]), MHSA_OK);
        mhsa_block *b = problem_block(&p);
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        ck_assert_int_eq(mhsa_workspace_create(b, 2, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(b, &g), MHSA_OK);
        ck_assert_int_eq(mhsa_forward(b, ws, p.x, 2, 37, p.mask, y[i], NULL),
                         MHSA_OK);
        ck_assert_int_eq(mhsa_backward(b, ws, p.dy, dx[i], g), MHSA_OK);
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(b);
    }
    for (int a = 0; a < N_ISAS; a++) {
        if (!have[a])
            continue;
        ck_assert_int_eq(mhsa_select_isa(all_isas[a]), MHSA_OK);
        mhsa_block *b = problem_block(&p);
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        ck_assert_int_eq(mhsa_workspace_create(b, 2, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(b, &g), MHSA_OK);
        for (int bi = 0; bi < N_ISAS; bi++) {
            if (!have[bi] || bi == a)
                continue;
            int order[2] = { bi, a };   // to b, then back to a
            for (int q = 0; q < 2; q++) {
                int i = order[q];
                ck_assert_int_eq(mhsa_select_isa(all_isas[i]), MHSA_OK);
                ck_assert_int_eq(mhsa_forward(b, ws, p.x, 2, 37, p.mask, y1,
                                              NULL), MHSA_OK);
                ck_assert_int_eq(mhsa_backward(b, ws, p.dy, dx1, g),
                                 MHSA_OK);
                ck_assert_msg(memcmp(y1, y[i], ny * 4) == 0 &&
                              memcmp(dx1, dx[i], ny * 4) == 0,
                              "block made under %s, run under %s: not %s's "
                              "bits", mhsa_isa_name(all_isas[a]),
                              mhsa_isa_name(all_isas[i]),
                              mhsa_isa_name(all_isas[i]));
            }
        }
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(b);
    }
    for (int i = 0; i < N_ISAS; i++) {
        free(y[i]);
        free(dx[i]);
    }
    free(y1);
    free(dx1);
    problem_free(&p);
}
END_TEST

// A caller's rounding mode and flush-to-zero bits neither change the
// results nor survive being changed: the library computes under its own
// state (nearest, subnormals as zero) on every thread and restores the
// caller's.
START_TEST(fp_control_state_is_isolated_and_restored)
{
    rng r = { 21 };
    problem p;
    problem_make(&p, &r, 2, 40, 32, 4, 1, 1, MASK_NONE);
    for (size_t i = 0; i < 2 * 40 * 32; i += 7)
        p.x[i] *= 1e-39f;   // some subnormal inputs, where FTZ/DAZ bite
    mhsa_block *b = problem_block(&p);
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_workspace_create(b, 2, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(b, &g), MHSA_OK);
    size_t ny = 2 * 40 * 32;
    float *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
    float *dx0 = malloc(ny * 4), *dx1 = malloc(ny * 4);
    ck_assert_int_eq(mhsa_forward(b, ws, p.x, 2, 40, NULL, y0, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(b, ws, p.dy, dx0, g), MHSA_OK);

    ck_assert_int_eq(fesetround(FE_TOWARDZERO), 0);
#if defined(__x86_64__)
    unsigned int csr = _mm_getcsr() | 0x8040;   // FTZ | DAZ
    _mm_setcsr(csr);
#endif
    ck_assert_int_eq(mhsa_forward(b, ws, p.x, 2, 40, NULL, y1, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(b, ws, p.dy, dx1, g), MHSA_OK);
    ck_assert_int_eq(fegetround(), FE_TOWARDZERO);
#if defined(__x86_64__)
    ck_assert_uint_eq(_mm_getcsr() & ~0x3Fu, csr & ~0x3Fu);  // flags aside
    _mm_setcsr(0x1F80);
#endif
    fesetround(FE_TONEAREST);
    ck_assert(!memcmp(y0, y1, ny * 4));
    ck_assert(!memcmp(dx0, dx1, ny * 4));
    free(y0); free(y1); free(dx0); free(dx1);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(b);
    problem_free(&p);
}
END_TEST

// mhsa_describe: snprintf's contract (the whole length from any cap, a
// NUL-terminated prefix of the same text), and a report that names the
// ISA in use, which follows mhsa_select_isa.
START_TEST(describe_is_snprintf_like_and_names_the_isa)
{
    size_t n = mhsa_describe(NULL, 0);
    ck_assert_uint_gt(n, 40);
    char *full = malloc(n + 1);
    ck_assert_ptr_nonnull(full);
    memset(full, 'x', n + 1);
    ck_assert_uint_eq(mhsa_describe(full, n + 1), n);
    ck_assert_uint_eq(strlen(full), n);
    ck_assert_int_eq(full[n - 1], '\n');
    char line[64];
    snprintf(line, sizeof line, "\nactive isa: %s\n",
             mhsa_isa_name(mhsa_active_isa()));
    ck_assert_ptr_nonnull(strstr(full, line));
    ck_assert_ptr_nonnull(strstr(full, mhsa_version()));
    // Caps of 1, 7, a prime and one short of the end: prefixes, each
    // ending in a NUL at cap - 1, nothing written past cap.
    size_t caps[] = { 1, 7, 61, n };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        size_t cap = caps[i];
        char *part = malloc(cap + 8);
        ck_assert_ptr_nonnull(part);
        memset(part, '#', cap + 8);
        ck_assert_uint_eq(mhsa_describe(part, cap), n);
        ck_assert_int_eq(part[cap - 1], '\0');
        ck_assert(!memcmp(part, full, cap - 1));
        for (size_t j = cap; j < cap + 8; j++)
            ck_assert_int_eq(part[j], '#');
        free(part);
    }
    // Nothing is written when cap is 0.
    char one = '#';
    ck_assert_uint_eq(mhsa_describe(&one, 0), n);
    ck_assert_int_eq(one, '#');
    // The report follows the ISA chosen.
    mhsa_isa was = mhsa_active_isa();
    ck_assert_int_eq(mhsa_select_isa(MHSA_ISA_SCALAR), MHSA_OK);
    size_t m = mhsa_describe(NULL, 0);
    char *scalar = malloc(m + 1);
    ck_assert_ptr_nonnull(scalar);
    mhsa_describe(scalar, m + 1);
    ck_assert_ptr_nonnull(strstr(scalar, "\nactive isa: scalar\n"));
    ck_assert_int_eq(mhsa_select_isa(was), MHSA_OK);
    free(scalar);
    free(full);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("block_api");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, block_create_rejects_bad_configs);
    tcase_add_test(tc, null_is_a_noop);
    tcase_add_test(tc, weights_round_trip_and_bias_rules);
    tcase_add_test(tc, init_random_is_deterministic_xavier);
    tcase_add_test(tc, forward_errors_leave_outputs_alone);
    tcase_add_test(tc, workspace_errors_and_memory_is_linear_in_t);
    tcase_add_test(tc, sized_workspace_rules_and_bits);
    tcase_add_test(tc, backward_state_rules);
    tcase_add_test(tc, kv_cache_rules);
    tcase_add_test(tc, isa_switch_after_set_weights);
    tcase_add_test(tc, isa_switch_between_every_pair);
    tcase_add_test(tc, fp_control_state_is_isolated_and_restored);
    tcase_add_test(tc, describe_is_snprintf_like_and_names_the_isa);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
