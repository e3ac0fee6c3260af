// test_variants_torch.c — the attention variants of 0.2 (grouped-query
// attention, rotary embedding, sliding window) against PyTorch references
// (tests/data/refs_variants) on every ISA at 1 and 2 threads, gradients
// against finite differences, GQA against the same block with K/V heads
// expanded, and every invalid value of the new config fields.
//
// Test cases (run one alone: test_variants_torch NAME...):
//   baseline        0.1 features in the 0.2 case format (checks the harness)
//   gqa             n_kv_heads: H/Hkv = 2, 4, 8, forward/backward/decode
//   rope            rope_dim/theta/interleaved (cases also use GQA)
//   rope_long       RoPE at positions up to 32769 (also needs window) and
//                   4099 without one
//   window          window 1, tile-1, tile, tile+1, > T (also GQA, RoPE)
//   variant_grads   finite differences and the GQA group sums
//   variant_errors  invalid n_kv_heads, rope_*, window; GQA shapes
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refrun.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const baseline_cases[] = {
    "base_fwd_2x13x32x4", "base_bwd_2x13x16x2_nobias", "base_dec_2x30x32x4",
};
static const char *const gqa_cases[] = {
    "gqa_fwd_kv4_2x11x32x8",   "gqa_fwd_kv2_1x17x32x8_nobias",
    "mqa_fwd_kv1_2x11x32x8_nc", "gqa_bwd_kv2_2x13x32x8",
    "mqa_bwd_kv1_1x15x32x8_nc_mask", "gqa_bwd_kv4_1x11x32x8",
    "gqa_dec_kv2_2x37x32x8",   "mqa_dec_kv1_1x29x48x4_nobias",
};
static const char *const rope_cases[] = {
    "rope_fwd_half_2x13x32x4",          "rope_fwd_inter_2x13x32x4_t500",
    "rope_fwd_part_half_1x17x48x4",     "rope_fwd_part_inter_1x17x48x4_nc",
    "rope_bwd_half_2x11x32x4",          "rope_bwd_part_inter_1x13x24x2_nc",
    "rope_bwd_r2_mqa_1x12x24x2",        "rope_dec_half_2x33x32x4",
    "rope_dec_part_inter_1x29x48x4_t1e6",
};
static const char *const rope_long_cases[] = {
    "rope_long_half_w48_32770",
    "rope_4k_nowin_part_4100",
};
static const char *const window_cases[] = {
    "win_fwd_w1_1x140x8x2",   "win_fwd_w127_1x140x8x2",
    "win_fwd_w128_1x140x8x2", "win_fwd_w129_1x140x8x2",
    "win_fwd_w200_1x140x8x2", "win_fwd_w131_1x140x8x1",
    "win_fwd_w132_1x140x8x1", "win_fwd_w133_1x140x8x1",
    "win_fwd_mask_w5_1x30x16x2", "win_bwd_w128_1x140x8x2",
    "win_bwd_w1_1x24x16x2",   "win_bwd_mask_w3_2x20x16x4",
    "win_dec_w129_1x300x8x2", "win_dec_rope_gqa_w20_2x70x16x4",
};

#define CASE_TEST(fn, list)                                                 \
    START_TEST(fn) { run_case_threads(list[_i / N_ISAS], _i % N_ISAS); }    \
    END_TEST

CASE_TEST(baseline_case, baseline_cases)
CASE_TEST(gqa_case, gqa_cases)
CASE_TEST(rope_case, rope_cases)
CASE_TEST(rope_long_case, rope_long_cases)
CASE_TEST(window_case, window_cases)

// ---- small random problems with the new fields --------------------------------

typedef struct vprob {
    mhsa_config cfg;
    int B, T;
    size_t rows;                     // of w_qkv: (H + 2 Hkv) dh
    float *w_qkv, *b_qkv, *w_out, *b_out, *x, *dy;
} vprob;

static void vprob_make(vprob *p, uint64_t seed, int B, int T, int D, int H,
                       int Hkv, int rope_dim, int inter, int window)
{
    memset(p, 0, sizeof *p);
    mhsa_config c = { D, H, T, 1, 1 };
    c.n_kv_heads = Hkv;
    c.rope_dim = rope_dim;
    c.rope_interleaved = inter;
    c.window = window;
    p->cfg = c;
    p->B = B;
    p->T = T;
    p->rows = (size_t)(H + 2 * Hkv) * (D / H);
    rng r = { seed };
    size_t d = (size_t)D, n = (size_t)B * T * d;
    float ws = 1.7f / sqrtf((float)D);
    p->w_qkv = malloc(p->rows * d * sizeof(float));
    p->b_qkv = malloc(p->rows * sizeof(float));
    p->w_out = malloc(d * d * sizeof(float));
    p->b_out = malloc(d * sizeof(float));
    p->x = malloc(n * sizeof(float));
    p->dy = malloc(n * sizeof(float));
    fill_uniform(&r, p->w_qkv, p->rows * d, -ws, ws);
    fill_uniform(&r, p->b_qkv, p->rows, -0.5f, 0.5f);
    fill_uniform(&r, p->w_out, d * d, -ws, ws);
    fill_uniform(&r, p->b_out, d, -0.5f, 0.5f);
    fill_uniform(&r, p->x, n, -1.0f, 1.0f);
    fill_uniform(&r, p->dy, n, -1.0f, 1.0f);
}

static void vprob_free(vprob *p)
{
    free(p->w_qkv);
    free(p->b_qkv);
    free(p->w_out);
    free(p->b_out);
    free(p->x);
    free(p->dy);
}

static mhsa_block *vprob_block(const vprob *p, const mhsa_config *cfg)
{
    mhsa_block *blk = NULL;
    ck_assert_msg(mhsa_block_create(cfg, &blk) == MHSA_OK,
                  "block_create: %s", mhsa_last_error());
    ck_assert_int_eq(mhsa_block_set_weights(blk, p->w_qkv, p->b_qkv,
                                            p->w_out, p->b_out), MHSA_OK);
    return blk;
}

// sum(y * dy) in double, from the block's forward.
static double vloss(const vprob *p)
{
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    REQUIRE(mhsa_block_create(&p->cfg, &blk) == MHSA_OK &&
            mhsa_block_set_weights(blk, p->w_qkv, p->b_qkv, p->w_out,
                                   p->b_out) == MHSA_OK &&
            mhsa_workspace_create(blk, p->B, &ws) == MHSA_OK, "vloss: %s",
            mhsa_last_error());
    size_t n = (size_t)p->B * p->T * p->cfg.d_model;
    float *y = malloc(n * sizeof(float));
    REQUIRE(mhsa_forward(blk, ws, p->x, p->B, p->T, NULL, y, NULL) == MHSA_OK,
            "vloss: %s", mhsa_last_error());
    double l = 0;
    for (size_t i = 0; i < n; i++)
        l += (double)y[i] * p->dy[i];
    free(y);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    return l;
}

static double fd(vprob *p, float *v)
{
    float keep = *v, h = 1e-2f;
    *v = keep + h;
    float up = *v;
    double lp = vloss(p);
    *v = keep - h;
    float dn = *v;
    double lm = vloss(p);
    *v = keep;
    return (lp - lm) / ((double)up - (double)dn);
}

static void expect_fd(vprob *p, float *v, double g, const char *what,
                      size_t i)
{
    double f = fd(p, v);
    REQUIRE(fabs(f - g) <= 5e-3 * fmax(1.0, fabs(f)),
            "%s[%zu]: backward %.6g, finite difference %.6g (Hkv %d, rope "
            "%d/%d)", what, i, g, f, p->cfg.n_kv_heads, p->cfg.rope_dim,
            p->cfg.rope_interleaved);
}

// The block's backward against central differences of its forward, on the
// scalar path: every K and V row of w_qkv and b_qkv (the sums over each
// query group), Q rows in the rotated features, and x (the rotation's
// gradient back through Q and K).
static void check_fd(uint64_t seed, int D, int H, int Hkv, int rope, int il,
                     int window)
{
    vprob p;
    vprob_make(&p, seed, 2, 7, D, H, Hkv, rope, il, window);
    mhsa_block *blk = vprob_block(&p, &p.cfg);
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, p.B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    size_t d = (size_t)D, n = (size_t)p.B * p.T * d, dh = d / H;
    float *y = malloc(n * sizeof(float)), *dx = malloc(n * sizeof(float));
    ck_assert_int_eq(mhsa_forward(blk, ws, p.x, p.B, p.T, NULL, y, NULL),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_backward(blk, ws, p.dy, dx, g), MHSA_OK);
    for (size_t r = d; r < p.rows; r++) {   // every K and V row
        for (size_t i = r % 4; i < d; i += 4)
            expect_fd(&p, &p.w_qkv[r * d + i], g->w_qkv[r * d + i], "w_qkv",
                      r * d + i);
        expect_fd(&p, &p.b_qkv[r], g->b_qkv[r], "b_qkv", r);
    }
    for (size_t h = 0; h < (size_t)H; h++)   // Q rows: rotated features
        for (size_t f = 0; f < dh; f++) {
            size_t r = h * dh + f, i = (h * 5 + f) % d;
            expect_fd(&p, &p.w_qkv[r * d + i], g->w_qkv[r * d + i], "w_qkv",
                      r * d + i);
        }
    for (size_t i = 0; i < n; i += 5)
        expect_fd(&p, &p.x[i], dx[i], "x", i);
    free(y);
    free(dx);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    vprob_free(&p);
}

START_TEST(gqa_rope_gradients_match_finite_differences)
{
    ck_assert_int_eq(mhsa_select_isa(MHSA_ISA_SCALAR), MHSA_OK);
    check_fd(101, 16, 4, 2, 4, 0, 0);   // GQA, full rotary, halves
    check_fd(102, 24, 4, 1, 2, 1, 0);   // MQA, partial rotary, pairs
    check_fd(103, 24, 4, 4, 6, 0, 3);   // MHA, partial rotary, window 3
}
END_TEST

// GQA is MHA with each K/V head repeated for its query group: the same
// forward (to fp32 rounding), and the GQA weight gradients of a K/V head
// are the sums of the expanded block's rows over the group.
static void check_expanded(int isa_i, int D, int H, int Hkv, int rope,
                           int il)
{
    vprob p;
    vprob_make(&p, 200 + (uint64_t)Hkv, 2, 9, D, H, Hkv, rope, il, 0);
    size_t d = (size_t)D, dh = d / H, g = (size_t)(H / Hkv);
    size_t n = (size_t)p.B * p.T * d;
    // the expanded weights: rows [Wq; Wk of head h/g for h < H; Wv ...]
    float *we = malloc(3 * d * d * sizeof(float)), *be = malloc(3 * d * 4);
    for (size_t part = 0; part < 3; part++)
        for (size_t h = 0; h < (size_t)H; h++) {
            size_t src = part == 0 ? h * dh
                       : d + (part - 1) * Hkv * dh + (h / g) * dh;
            memcpy(we + (part * d + h * dh) * d, p.w_qkv + src * d,
                   dh * d * sizeof(float));
            memcpy(be + part * d + h * dh, p.b_qkv + src, dh * sizeof(float));
        }
    mhsa_config ce = p.cfg;
    ce.n_kv_heads = 0;
    mhsa_block *bg = vprob_block(&p, &p.cfg), *bm = NULL;
    ck_assert_int_eq(mhsa_block_create(&ce, &bm), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(bm, we, be, p.w_out, p.b_out),
                     MHSA_OK);
    mhsa_workspace *wg = NULL, *wm = NULL;
    mhsa_grads *gg = NULL, *gm = NULL;
    ck_assert_int_eq(mhsa_workspace_create(bg, p.B, &wg), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(bm, p.B, &wm), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(bg, &gg), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(bm, &gm), MHSA_OK);
    float *yg = malloc(n * 4), *ym = malloc(n * 4), *dxg = malloc(n * 4),
          *dxm = malloc(n * 4);
    ck_assert_int_eq(mhsa_forward(bg, wg, p.x, p.B, p.T, NULL, yg, NULL),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_forward(bm, wm, p.x, p.B, p.T, NULL, ym, NULL),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_backward(bg, wg, p.dy, dxg, gg), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(bm, wm, p.dy, dxm, gm), MHSA_OK);
    char tag[96];
    snprintf(tag, sizeof tag, "[%s] H %d Hkv %d rope %d/%d",
             mhsa_isa_name(all_isas[isa_i]), H, Hkv, rope, il);
    ck_assert_msg(rel_err(yg, ym, n) <= 1e-5, "%s: y", tag);
    ck_assert_msg(rel_err(dxg, dxm, n) <= 1e-5, "%s: dx", tag);
    // fold the expanded gradients over each group, in double
    size_t nk = (size_t)Hkv * dh;
    double *fw = calloc(2 * nk * d, sizeof(double));
    double *fb = calloc(2 * nk, sizeof(double));
    for (size_t part = 1; part < 3; part++)
        for (size_t h = 0; h < (size_t)H; h++)
            for (size_t f = 0; f < dh; f++) {
                size_t dst = (part - 1) * nk + (h / g) * dh + f;
                size_t src = part * d + h * dh + f;
                for (size_t i = 0; i < d; i++)
                    fw[dst * d + i] += gm->w_qkv[src * d + i];
                fb[dst] += gm->b_qkv[src];
            }
    ck_assert_msg(rel_err(gg->w_qkv, gm->w_qkv, d * d) <= 1e-5, "%s: dWq",
                  tag);
    ck_assert_msg(rel_err_d(gg->w_qkv + d * d, fw, 2 * nk * d) <= 1e-5,
                  "%s: dWk/dWv are not the group sums", tag);
    ck_assert_msg(rel_err_d(gg->b_qkv + d, fb, 2 * nk) <= 1e-5,
                  "%s: dbk/dbv are not the group sums", tag);
    ck_assert_msg(rel_err(gg->w_out, gm->w_out, d * d) <= 1e-5, "%s: dWo",
                  tag);
    free(we); free(be); free(yg); free(ym); free(dxg); free(dxm);
    free(fw); free(fb);
    mhsa_grads_destroy(gg);
    mhsa_grads_destroy(gm);
    mhsa_workspace_destroy(wg);
    mhsa_workspace_destroy(wm);
    mhsa_block_destroy(bg);
    mhsa_block_destroy(bm);
    vprob_free(&p);
}

START_TEST(gqa_is_mha_with_repeated_kv_heads)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    check_expanded(_i, 32, 8, 4, 0, 0);
    check_expanded(_i, 32, 8, 1, 0, 0);
    check_expanded(_i, 48, 4, 2, 6, 1);   // with RoPE on both sides
    check_expanded(_i, 48, 4, 1, 12, 0);
}
END_TEST

// n_kv_heads = H is the 0.1 block exactly: the same bits as 0.
START_TEST(kv_heads_equal_to_h_is_mha)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    vprob p;
    vprob_make(&p, 7, 2, 19, 32, 4, 4, 0, 0, 0);
    mhsa_config c0 = p.cfg;
    c0.n_kv_heads = 0;
    size_t n = (size_t)p.B * p.T * 32;
    float *y[2], *dx[2], *gw[2];
    for (int k = 0; k < 2; k++) {
        mhsa_block *blk = vprob_block(&p, k ? &p.cfg : &c0);
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, p.B, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
        y[k] = malloc(n * 4);
        dx[k] = malloc(n * 4);
        gw[k] = malloc(3 * 32 * 32 * 4);
        ck_assert_int_eq(mhsa_forward(blk, ws, p.x, p.B, p.T, NULL, y[k],
                                      NULL), MHSA_OK);
        ck_assert_int_eq(mhsa_backward(blk, ws, p.dy, dx[k], g), MHSA_OK);
        memcpy(gw[k], g->w_qkv, 3 * 32 * 32 * 4);
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
    }
    ck_assert(!memcmp(y[0], y[1], n * 4));
    ck_assert(!memcmp(dx[0], dx[1], n * 4));
    ck_assert(!memcmp(gw[0], gw[1], 3 * 32 * 32 * 4));
    for (int k = 0; k < 2; k++) {
        free(y[k]);
        free(dx[k]);
        free(gw[k]);
    }
    vprob_free(&p);
}
END_TEST

// A GQA cache holds Hkv heads: H/Hkv times less K/V memory.
START_TEST(gqa_cache_holds_hkv_heads)
{
    mhsa_config c = { 64, 8, 100, 1, 1 };
    mhsa_block *mha = NULL, *gqa = NULL;
    ck_assert_int_eq(mhsa_block_create(&c, &mha), MHSA_OK);
    c.n_kv_heads = 2;
    ck_assert_int_eq(mhsa_block_create(&c, &gqa), MHSA_OK);
    mhsa_kv_cache *cm = NULL, *cg = NULL;
    ck_assert_int_eq(mhsa_kv_cache_create(mha, 3, 100, &cm), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create(gqa, 3, 100, &cg), MHSA_OK);
    size_t kv_mha = 2 * 3 * 100 * 64 * sizeof(float);
    size_t bm = mhsa_kv_cache_bytes(cm), bg = mhsa_kv_cache_bytes(cg);
    printf("cache bytes: MHA %zu, GQA Hkv=2 %zu (K/V part %zu -> %zu)\n", bm,
           bg, kv_mha, kv_mha / 4);
    ck_assert(bg >= kv_mha / 4);
    ck_assert_msg(bm - bg == kv_mha - kv_mha / 4,
                  "GQA cache saves %zu bytes, not 3/4 of the K/V part (%zu)",
                  bm - bg, kv_mha - kv_mha / 4);
    mhsa_kv_cache_destroy(cm);
    mhsa_kv_cache_destroy(cg);
    mhsa_block_destroy(mha);
    mhsa_block_destroy(gqa);
}
END_TEST

// Weights, gradients and init_random follow the GQA shapes: nothing past
// ((H + 2 Hkv) dh, D) is touched, and the Xavier bound comes from that
// whole matrix.
START_TEST(gqa_weight_shapes)
{
    int D = 48, H = 6, Hkv = 2, dh = 8;
    size_t rows = (size_t)(H + 2 * Hkv) * dh, d = (size_t)D;
    mhsa_config c = { D, H, 16, 1, 1 };
    c.n_kv_heads = Hkv;
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&c, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(blk, 42), MHSA_OK);
    float *w = alloc_guarded(rows * d), *b = alloc_guarded(rows);
    float *wo = alloc_guarded(d * d), *bo = alloc_guarded(d);
    ck_assert_int_eq(mhsa_block_get_weights(blk, w, b, wo, bo), MHSA_OK);
    ck_assert(guard_ok(w, rows * d) && guard_ok(b, rows));
    ck_assert(guard_ok(wo, d * d) && guard_ok(bo, d));
    // (a compare, not fmax: aarch64 gcc 12 -O3 crashes vectorising an fmax
    // reduction here)
    double bound = sqrt(6.0 / (double)(d + rows)), mx = 0;
    for (size_t i = 0; i < rows * d; i++)
        if (fabs(w[i]) > mx)
            mx = fabs(w[i]);
    ck_assert_msg(mx <= bound && mx > 0.95 * bound,
                  "init_random: max |w_qkv| %g, Xavier bound of (%zu, %zu) "
                  "%g", mx, rows, d, bound);
    int zero = 1;
    for (size_t i = 0; i < rows; i++)
        zero &= b[i] == 0.0f;
    ck_assert_msg(zero, "init_random: b_qkv not zero");
    // set_weights reads exactly the GQA shapes (ASan/valgrind see more)
    float *w2 = malloc(rows * d * sizeof(float));
    memcpy(w2, w, rows * d * sizeof(float));
    ck_assert_int_eq(mhsa_block_set_weights(blk, w2, b, wo, bo), MHSA_OK);
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    for (size_t i = 0; i < rows * d; i++)
        zero &= g->w_qkv[i] == 0.0f;
    for (size_t i = 0; i < rows; i++)
        zero &= g->b_qkv[i] == 0.0f;
    ck_assert_msg(zero, "mhsa_grads_create: not zeroed");
    mhsa_grads_destroy(g);
    free(w2);
    free_guarded(w);
    free_guarded(b);
    free_guarded(wo);
    free_guarded(bo);
    mhsa_block_destroy(blk);
}
END_TEST

// NaN in keys the window blocks never reaches the rows past it: the same
// values as with clean keys (to fp32 rounding), in the prefill and in
// token-by-token decode.
START_TEST(window_never_reads_blocked_keys)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    refcase rc;
    rc_load("win_dec_w129_1x300x8x2", &rc);
    mhsa_block *blk = rc_block(&rc);
    size_t T = (size_t)rc.T, D = (size_t)rc.D, W = (size_t)rc.window;
    size_t bad = 10, from = bad - 1 + W;   // rows >= from never see 0..9
    float *x = malloc(T * D * 4), *y0 = malloc(T * D * 4),
          *y1 = malloc(T * D * 4), *yd = malloc(T * D * 4);
    memcpy(x, refcase_get(&rc, "x"), T * D * 4);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_forward(blk, ws, x, 1, (int)T, NULL, y0, NULL),
                     MHSA_OK);
    for (size_t i = 0; i < bad * D; i++)
        x[i] = NAN;
    ck_assert_int_eq(mhsa_forward(blk, ws, x, 1, (int)T, NULL, y1, NULL),
                     MHSA_OK);
    // The contract is that NaN there cannot reach the output; the bits may
    // differ (a tile holding NaN may take another path), the values not.
    double e = rel_err(y1 + from * D, y0 + from * D, (T - from) * D);
    printf("[%s] prefill with NaN in keys 0..%zu: rows >= %zu %s (rel err "
           "%.2e)\n", mhsa_isa_name(all_isas[_i]), bad - 1, from,
           memcmp(y0 + from * D, y1 + from * D, (T - from) * D * 4)
           ? "not bitwise" : "bitwise", e);
    ck_assert_msg(e <= 1e-6, "prefill: NaN in keys 0..%zu outside the "
                  "window (%zu) changed rows >= %zu by %.3g", bad - 1, W,
                  from, e);
    // token by token, with clean keys and with NaN ones
    float *yc = malloc(T * D * 4);
    for (int pass = 0; pass < 2; pass++) {
        const float *xs = pass ? x : refcase_get(&rc, "x");
        float *yo = pass ? yd : yc;
        mhsa_kv_cache *c = NULL;
        ck_assert_int_eq(mhsa_kv_cache_create(blk, 1, (int)T, &c), MHSA_OK);
        for (size_t t = 0; t < T; t++)
            REQUIRE(mhsa_forward_cached(blk, ws, c, xs + t * D, 1, 1,
                                        yo + t * D) == MHSA_OK, "token %zu",
                    t);
        mhsa_kv_cache_destroy(c);
    }
    e = rel_err(yd + from * D, yc + from * D, (T - from) * D);
    ck_assert_msg(e <= 1e-6, "decode: NaN in keys outside the window "
                  "changed rows >= %zu by %.3g", from, e);
    ck_assert(rel_err(yc, y0, T * D) <= 1e-5);
    free(yc);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x);
    free(y0);
    free(y1);
    free(yd);
    refcase_free(&rc);
}
END_TEST

// ---- invalid values of the new fields ------------------------------------------

// Whether msg names `field` and `value`.
static int names(const char *msg, const char *field, const char *value)
{
    return strstr(msg, field) && strstr(msg, value);
}

static void expect_bad_config(const mhsa_config *c, mhsa_status want,
                              const char *field, const char *value)
{
    mhsa_block *sentinel = (mhsa_block *)(uintptr_t)0x1234, *out = sentinel;
    mhsa_status s = mhsa_block_create(c, &out);
    const char *msg = mhsa_last_error();
    printf("%s = %s: %s: %s\n", field, value, mhsa_status_str(s), msg);
    if (s == MHSA_OK)
        mhsa_block_destroy(out);
    ck_assert_msg(s == want, "%s = %s: %s, expected %s", field, value,
                  mhsa_status_str(s), mhsa_status_str(want));
    ck_assert_msg(out == sentinel, "%s = %s: *out written on failure", field,
                  value);
    ck_assert_msg(names(msg, field, value), "%s = %s: message \"%s\" does "
                  "not name the field and its value", field, value, msg);
}

START_TEST(invalid_variant_fields)
{
    const mhsa_config ok = { 32, 4, 64, 1, 1 };   // dh = 8
    mhsa_config c;
#define BAD(field, v, status, text)                                         \
    do {                                                                    \
        c = ok;                                                             \
        c.field = v;                                                        \
        expect_bad_config(&c, status, #field, text);                        \
    } while (0)
    BAD(n_kv_heads, -1, MHSA_ERR_INVALID_ARG, "-1");
    BAD(n_kv_heads, 3, MHSA_ERR_SHAPE, "3");
    BAD(n_kv_heads, 8, MHSA_ERR_SHAPE, "8");
    BAD(rope_dim, -2, MHSA_ERR_INVALID_ARG, "-2");
    BAD(rope_dim, 3, MHSA_ERR_INVALID_ARG, "3");
    BAD(rope_dim, 10, MHSA_ERR_INVALID_ARG, "10");
    c = ok;
    c.rope_dim = 8;
    c.rope_theta = -2.0f;
    expect_bad_config(&c, MHSA_ERR_INVALID_ARG, "rope_theta", "-2");
    c = ok;
    c.rope_dim = 8;
    c.rope_interleaved = 2;
    expect_bad_config(&c, MHSA_ERR_INVALID_ARG, "rope_interleaved", "2");
    c.rope_interleaved = -1;
    expect_bad_config(&c, MHSA_ERR_INVALID_ARG, "rope_interleaved", "-1");
    // invalid whatever rope_dim is (API.md lists them unconditionally)
    BAD(rope_interleaved, 2, MHSA_ERR_INVALID_ARG, "2");
    c = ok;
    c.rope_theta = -2.0f;
    expect_bad_config(&c, MHSA_ERR_INVALID_ARG, "rope_theta", "-2");
    BAD(window, -1, MHSA_ERR_INVALID_ARG, "-1");
    c = ok;
    c.causal = 0;
    c.window = 4;
    expect_bad_config(&c, MHSA_ERR_INVALID_ARG, "window", "4");
#undef BAD
    // the edges that are valid
    static const struct { int hkv, rope, il, win; float theta; } good[] = {
        { 4, 8, 0, 1, 0 }, { 1, 2, 1, 64, 1e6f }, { 2, 8, 1, 100000, 0.5f },
        { 0, 0, 1, 0, 0 },
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        c = ok;
        c.n_kv_heads = good[i].hkv;
        c.rope_dim = good[i].rope;
        c.rope_interleaved = good[i].il;
        c.window = good[i].win;
        c.rope_theta = good[i].theta;
        mhsa_block *blk = NULL;
        ck_assert_msg(mhsa_block_create(&c, &blk) == MHSA_OK,
                      "valid config %zu refused: %s", i, mhsa_last_error());
        mhsa_block_destroy(blk);
    }
}
END_TEST

// ---- thread counts -------------------------------------------------------------

// D = 64, H = 4, B = 4: attention of 64 tokens and decode steps over
// 267..292 cached keys are big enough for the library to split them.
static thread_spec spec(const char *name, int hkv, int rope, int il,
                        int window)
{
    thread_spec t = { name, { 64, 4, 292, 1, 1 }, 64, 0, 0 };
    t.cfg.n_kv_heads = hkv;
    t.cfg.rope_dim = rope;
    t.cfg.rope_interleaved = il;
    t.cfg.window = window;
    return t;
}

START_TEST(threads_baseline)
{
    thread_spec t = spec("MHA", 0, 0, 0, 0);
    check_thread_counts(&t, _i);
}
END_TEST

START_TEST(threads_gqa)
{
    thread_spec t = spec("GQA Hkv 2", 2, 0, 0, 0);
    check_thread_counts(&t, _i);
    t = spec("MQA", 1, 0, 0, 0);
    t.cfg.bias = 0;
    check_thread_counts(&t, _i);
}
END_TEST

START_TEST(threads_rope)
{
    thread_spec t = spec("RoPE 8/16 halves, GQA", 2, 8, 0, 0);
    check_thread_counts(&t, _i);
    t = spec("RoPE 6/16 pairs", 0, 6, 1, 0);
    t.cfg.rope_theta = 500000.0f;
    check_thread_counts(&t, _i);
}
END_TEST

// A window of 100 splits the forward and backward but leaves decode steps
// too small to split (4 x 100 keys); 260 of up to 292 splits those.
START_TEST(threads_window)
{
    thread_spec t = spec("window 100, RoPE, GQA", 2, 8, 1, 100);
    check_thread_counts(&t, _i);
    t = spec("window 260 (decode)", 2, 0, 0, 260);
    check_thread_counts(&t, _i);
}
END_TEST

// ---- the suite -------------------------------------------------------------------

static void add_baseline(TCase *tc)
{
    tcase_add_loop_test(tc, baseline_case, 0, N_OF(baseline_cases) * N_ISAS);
    tcase_add_loop_test(tc, threads_baseline, 0, N_ISAS);
}

static void add_gqa(TCase *tc)
{
    tcase_add_loop_test(tc, gqa_case, 0, N_OF(gqa_cases) * N_ISAS);
    tcase_add_loop_test(tc, gqa_is_mha_with_repeated_kv_heads, 0, N_ISAS);
    tcase_add_loop_test(tc, kv_heads_equal_to_h_is_mha, 0, N_ISAS);
    tcase_add_test(tc, gqa_cache_holds_hkv_heads);
    tcase_add_test(tc, gqa_weight_shapes);
    tcase_add_loop_test(tc, threads_gqa, 0, N_ISAS);
}

static void add_rope(TCase *tc)
{
    tcase_add_loop_test(tc, rope_case, 0, N_OF(rope_cases) * N_ISAS);
    tcase_add_loop_test(tc, threads_rope, 0, N_ISAS);
}

static void add_rope_long(TCase *tc)
{
    tcase_add_loop_test(tc, rope_long_case, 0,
                        N_OF(rope_long_cases) * N_ISAS);
}

static void add_window(TCase *tc)
{
    tcase_add_loop_test(tc, window_case, 0, N_OF(window_cases) * N_ISAS);
    tcase_add_loop_test(tc, window_never_reads_blocked_keys, 0, N_ISAS);
    tcase_add_loop_test(tc, threads_window, 0, N_ISAS);
}

static void add_grads(TCase *tc)
{
    tcase_add_test(tc, gqa_rope_gradients_match_finite_differences);
}

static void add_errors(TCase *tc)
{
    tcase_add_test(tc, invalid_variant_fields);
}

int main(int argc, char **argv)
{
    static const tcase_def defs[] = {
        { "baseline", add_baseline },     { "gqa", add_gqa },
        { "rope", add_rope },             { "rope_long", add_rope_long },
        { "window", add_window },         { "variant_grads", add_grads },
        { "variant_errors", add_errors },
    };
    return run_tcases("variants_torch", defs, N_OF(defs), argc, argv);
}
