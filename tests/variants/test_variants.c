// test_variants.c — the 0.2 attention variants (grouped-query heads, RoPE,
// sliding window, key padding, per-sequence cache lengths, F16/BF16
// caches) on random shapes, every ISA, against the double-precision
// reference of ref.c: forward and weights, backward against finite
// differences of the reference, the cached calls token by token and in
// ragged batches, bitwise independence of the thread count and of the
// other sequences of a batch.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "util.h"

enum { N_RANDOM = 16 };

typedef struct vprob {
    mhsa_config cfg;
    int B, T, Hkv;
    size_t nqkv;
    float *w_qkv, *b_qkv, *w_out, *b_out;
    float *x, *mask, *dy;
    int *seq_len;
} vprob;

static void vprob_free(vprob *p)
{
    free(p->w_qkv);
    free(p->b_qkv);
    free(p->w_out);
    free(p->b_out);
    free(p->x);
    free(p->mask);
    free(p->dy);
    free(p->seq_len);
}

static float *rand_buf(rng *r, size_t n, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof(float));
    fill_uniform(r, x, n, lo, hi);
    return x;
}

// A random problem: the config's variant fields from the caller, weights of
// scale 1/sqrt(D) so scores spread over many keys.
static void vprob_make(vprob *p, rng *r, mhsa_config cfg, int B, int T,
                       int with_mask, int with_seq_len)
{
    memset(p, 0, sizeof *p);
    p->cfg = cfg;
    p->B = B;
    p->T = T;
    int D = cfg.d_model, H = cfg.n_heads, dh = D / H;
    p->Hkv = cfg.n_kv_heads ? cfg.n_kv_heads : H;
    p->nqkv = (size_t)(H + 2 * p->Hkv) * dh;
    float ws = 1.5f / sqrtf((float)D);
    p->w_qkv = rand_buf(r, p->nqkv * D, -ws, ws);
    p->w_out = rand_buf(r, (size_t)D * D, -ws, ws);
    if (cfg.bias) {
        p->b_qkv = rand_buf(r, p->nqkv, -0.5f, 0.5f);
        p->b_out = rand_buf(r, (size_t)D, -0.5f, 0.5f);
    }
    p->x = rand_buf(r, (size_t)B * T * D, -1.0f, 1.0f);
    p->dy = rand_buf(r, (size_t)B * T * D, -1.0f, 1.0f);
    if (with_mask) {
        p->mask = rand_buf(r, (size_t)T * T, -2.0f, 1.0f);
        for (int i = 0; i < T * T; i++)
            if (rng_int(r, 0, 9) == 0)
                p->mask[i] = -INFINITY;
    }
    if (with_seq_len) {
        p->seq_len = malloc(sizeof(int) * (size_t)B);
        for (int b = 0; b < B; b++)
            p->seq_len[b] = rng_int(r, 1, T);
    }
}

static refv vprob_ref(const vprob *p)
{
    refv m = {
        .B = p->B, .T = p->T, .D = p->cfg.d_model, .H = p->cfg.n_heads,
        .Hkv = p->Hkv, .causal = p->cfg.causal, .bias = p->cfg.bias,
        .rope_dim = p->cfg.rope_dim,
        .rope_interleaved = p->cfg.rope_interleaved,
        .window = p->cfg.window, .rope_theta = p->cfg.rope_theta,
        .w_qkv = p->w_qkv, .b_qkv = p->b_qkv, .w_out = p->w_out,
        .b_out = p->b_out, .x = p->x, .mask = p->mask,
        .seq_len = p->seq_len,
    };
    return m;
}

static mhsa_block *vprob_block(const vprob *p)
{
    mhsa_block *blk = NULL;
    ck_assert_msg(mhsa_block_create(&p->cfg, &blk) == MHSA_OK, "%s",
                  mhsa_last_error());
    ck_assert_int_eq(mhsa_block_set_weights(blk, p->w_qkv, p->b_qkv,
                                            p->w_out, p->b_out), MHSA_OK);
    return blk;
}

// A random variant config of the block.
static mhsa_config random_cfg(rng *r, int T)
{
    static const int dhs[] = { 2, 4, 6, 8, 10, 16, 18, 32, 64 };
    static const int groups[] = { 1, 1, 2, 3, 4, 8 };
    int dh = dhs[rng_int(r, 0, 8)], Hkv = rng_int(r, 1, 3);
    int H = Hkv * groups[rng_int(r, 0, 5)];
    while (H * dh > 128 && H > Hkv)   // keeps the reference quick
        H -= Hkv;
    while (H * dh > 128 && Hkv > 1)
        H = --Hkv;
    mhsa_config c = { 0 };
    c.d_model = H * dh;
    c.n_heads = H;
    c.n_kv_heads = rng_int(r, 0, 3) == 0 && Hkv == H ? 0 : Hkv;
    c.max_seq_len = T + rng_int(r, 0, 5);
    c.causal = rng_int(r, 0, 3) != 0;
    c.bias = rng_int(r, 0, 1);
    int rr = rng_int(r, 0, 3);
    c.rope_dim = rr == 0 ? 0 : rr == 1 ? dh : rr == 2 ? 2 : (dh / 4) * 2;
    c.rope_interleaved = rng_int(r, 0, 1);
    c.rope_theta = rng_int(r, 0, 2) == 0 ? 0.0f : rng_int(r, 0, 1) ? 500.0f
                                                               : 1e6f;
    if (c.causal && rng_int(r, 0, 1)) {
        static const int wins[] = { 1, 2, 5, 127, 128, 129, 1000 };
        c.window = wins[rng_int(r, 0, 6)];
    }
    return c;
}

static const char *cfg_str(const mhsa_config *c, int B, int T)
{
    static char s[256];
    snprintf(s, sizeof s, "B=%d T=%d D=%d H=%d Hkv=%d causal=%d bias=%d "
             "rope=%d/%d/%g window=%d", B, T, c->d_model, c->n_heads,
             c->n_kv_heads, c->causal, c->bias, c->rope_dim,
             c->rope_interleaved, (double)c->rope_theta, c->window);
    return s;
}

static int use_isa(int i)
{
    if (!kernels_or_skip(i))
        return 0;
    ck_assert_int_eq(mhsa_select_isa(all_isas[i]), MHSA_OK);
    return 1;
}

// Random problems per ISA: an emulated table (SIMDe, ten times slower)
// runs a quarter of them; its kernels are tested in full elsewhere. Quick
// mode (util.h) takes test_count's share of that: the fixed-shape tests
// below and the kernel tests' edge lists stay whole.
static int n_random(int i, int n)
{
    const mhsa_kernels *e = emulated_table(all_isas[i]);
    n = test_count(n);
    return e && mhsa_kernels_for(all_isas[i]) == e ? (n + 3) / 4 : n;
}

// Forward (y and weights) against the reference, the same y bits without
// weights, and the same bits on 1, 2 and 3 threads.
START_TEST(forward_matches_reference)
{
    if (!use_isa(_i))
        return;
    rng r = { 1000 + (uint64_t)_i };
    int n_prob = n_random(_i, N_RANDOM);
    note_quick("a quarter of the random problems");
    for (int it = 0; it < n_prob; it++) {
        static const int ts[] = { 1, 2, 5, 13, 64, 73, 130, 200, 257 };
        int T = ts[rng_int(&r, 0, 8)], B = rng_int(&r, 1, 3);
        mhsa_config cfg = random_cfg(&r, T);
        vprob p;
        vprob_make(&p, &r, cfg, B, T, rng_int(&r, 0, 3) == 0,
                   rng_int(&r, 0, 2) == 0);
        mhsa_block *blk = vprob_block(&p);
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        int D = cfg.d_model, H = cfg.n_heads;
        size_t ny = (size_t)B * T * D, na = (size_t)B * H * T * T;
        float *y = alloc_guarded(ny), *attn = alloc_guarded(na);
        fill_nan(y, ny);
        fill_nan(attn, na);
        mhsa_forward_args a = { p.x, B, T, p.mask, p.seq_len, y, attn };
        ck_assert_msg(mhsa_forward_ex(blk, ws, &a) == MHSA_OK, "%s",
                      mhsa_last_error());
        double *ry = malloc(ny * sizeof(double));
        double *ra = malloc(na * sizeof(double));
        refv m = vprob_ref(&p);
        refv_forward(&m, ry, ra);
        double ey = rel_err_d(y, ry, ny), ea = rel_err_d(attn, ra, na);
        ck_assert_msg(ey < 1e-4 && ea < 1e-4, "%s %s: y %.3g attn %.3g",
                      mhsa_isa_name(all_isas[_i]), cfg_str(&cfg, B, T), ey,
                      ea);
        for (size_t i = 0; i < na; i++)   // blocked weights: exact +0
            if (ra[i] == 0.0)
                ck_assert(attn[i] == 0.0f);
        float *y2 = alloc_guarded(ny);
        a.y = y2;
        a.attn = NULL;
        for (int nt = 1; nt <= 3; nt++) {
            omp_set_num_threads(nt);
            ck_assert_int_eq(mhsa_forward_ex(blk, ws, &a), MHSA_OK);
            ck_assert_msg(!memcmp(y, y2, ny * sizeof(float)),
                          "%s: y bits differ (no attn, %d threads)",
                          cfg_str(&cfg, B, T), nt);
        }
        ck_assert(guard_ok(y, ny) && guard_ok(attn, na) && guard_ok(y2, ny));
        free_guarded(y);
        free_guarded(y2);
        free_guarded(attn);
        free(ry);
        free(ra);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
        vprob_free(&p);
    }
}
END_TEST

// sum(y * dy) of the reference in double, with one input perturbed.
static double ref_loss(const vprob *p)
{
    size_t ny = (size_t)p->B * p->T * p->cfg.d_model;
    double *y = malloc(ny * sizeof(double)), s = 0;
    refv m = vprob_ref(p);
    refv_forward(&m, y, NULL);
    for (size_t i = 0; i < ny; i++)
        s += y[i] * p->dy[i];
    free(y);
    return s;
}

// Central difference of ref_loss in one float of the problem. The step is
// relative, the inputs rounded to float: the derivative of the float
// function the reference computes in double.
static double fd(vprob *p, float *v)
{
    float keep = *v;
    double h = 1e-3 * (fabs(keep) > 1 ? fabs(keep) : 1);
    *v = (float)(keep + h);
    double hp = (double)*v - keep, lp = ref_loss(p);
    *v = (float)(keep - h);
    double hm = keep - (double)*v, lm = ref_loss(p);
    *v = keep;
    return (lp - lm) / (hp + hm);
}

// Gradients of every weight and of x against finite differences of the
// reference at random entries (all of dK/dV's group sums, the rotation),
// and the same gradient bits on 1 and 2 threads.
START_TEST(backward_matches_finite_differences)
{
    if (!use_isa(_i))
        return;
    rng r = { 2000 + (uint64_t)_i };
    int n_prob = n_random(_i, N_RANDOM / 2);
    note_quick("a quarter of the random problems");
    for (int it = 0; it < n_prob; it++) {
        static const int ts[] = { 1, 3, 9, 40, 75, 131 };
        int T = ts[rng_int(&r, 0, 5)], B = rng_int(&r, 1, 2);
        if (T > 40)
            B = 1;
        mhsa_config cfg = random_cfg(&r, T);
        vprob p;
        vprob_make(&p, &r, cfg, B, T, rng_int(&r, 0, 3) == 0,
                   rng_int(&r, 0, 2) == 0);
        mhsa_block *blk = vprob_block(&p);
        mhsa_workspace *ws = NULL;
        mhsa_grads *g[2] = { NULL, NULL };
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        int D = cfg.d_model;
        size_t ny = (size_t)B * T * D, nq = p.nqkv * (size_t)D;
        float *y = malloc(ny * sizeof(float));
        float *dx[2] = { malloc(ny * sizeof(float)),
                         malloc(ny * sizeof(float)) };
        mhsa_forward_args a = { p.x, B, T, p.mask, p.seq_len, y, NULL };
        for (int t = 0; t < 2; t++) {
            omp_set_num_threads(t + 1);
            ck_assert_int_eq(mhsa_grads_create(blk, &g[t]), MHSA_OK);
            ck_assert_int_eq(mhsa_forward_ex(blk, ws, &a), MHSA_OK);
            ck_assert_int_eq(mhsa_backward(blk, ws, p.dy, dx[t], g[t]),
                             MHSA_OK);
        }
        ck_assert(!memcmp(dx[0], dx[1], ny * sizeof(float)));
        ck_assert(!memcmp(g[0]->w_qkv, g[1]->w_qkv, nq * sizeof(float)));
        ck_assert(!memcmp(g[0]->w_out, g[1]->w_out,
                          (size_t)D * D * sizeof(float)));
        // (tensor, its gradient, size) to probe
        struct { float *v; const float *g; size_t n; const char *name; } t[] = {
            { p.w_qkv, g[0]->w_qkv, nq, "w_qkv" },
            { p.w_out, g[0]->w_out, (size_t)D * D, "w_out" },
            { p.x, dx[0], ny, "x" },
            { p.b_qkv, g[0]->b_qkv, cfg.bias ? p.nqkv : 0, "b_qkv" },
        };
        for (size_t ti = 0; ti < 4; ti++) {
            if (!t[ti].n)
                continue;
            double gmax = 1e-3;
            for (size_t i = 0; i < t[ti].n; i++)
                gmax = fabs(t[ti].g[i]) > gmax ? fabs(t[ti].g[i]) : gmax;
            for (int probe = 0; probe < 8; probe++) {
                size_t i = (size_t)rng_int(&r, 0, (int)t[ti].n - 1);
                if (ti == 0 && probe < 5)   // the k and v rows (groups)
                    i = (size_t)D * D + (size_t)rng_int(
                            &r, 0, (int)(nq - (size_t)D * D) - 1);
                double want = fd(&p, &t[ti].v[i]);
                double err = fabs(t[ti].g[i] - want) / gmax;
                ck_assert_msg(err < 2e-3, "%s %s: d%s[%zu] = %.6g, finite "
                              "difference %.6g (err %.3g of max %.3g)",
                              mhsa_isa_name(all_isas[_i]),
                              cfg_str(&cfg, B, T), t[ti].name, i,
                              (double)t[ti].g[i], want, err, gmax);
            }
        }
        for (int k = 0; k < 2; k++) {
            mhsa_grads_destroy(g[k]);
            free(dx[k]);
        }
        free(y);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
        vprob_free(&p);
    }
}
END_TEST

// A causal config with a KV cache: token by token, in chunks and in
// ragged steps (every sequence its own n_new, some 0), each sequence's
// rows equal the full causal forward of the reference over its history
// (with K and V rounded to the cache's dtype), on 1 and 2 threads with the
// same bits; then slot 0 is reset and reused.
START_TEST(cached_calls_match_reference)
{
    if (!use_isa(_i))
        return;
    rng r = { 3000 + (uint64_t)_i };
    int n_prob = n_random(_i, N_RANDOM);
    note_quick("a quarter of the random problems");
    for (int it = 0; it < n_prob; it++) {
        static const int ts[] = { 1, 4, 19, 70, 150, 300 };
        int T = ts[rng_int(&r, 0, 5)], B = rng_int(&r, 1, 4);
        mhsa_config cfg = random_cfg(&r, T);
        cfg.causal = 1;
        mhsa_dtype dt = (mhsa_dtype)rng_int(&r, 0, 2);
        vprob p;
        vprob_make(&p, &r, cfg, B, T, 0, 0);
        mhsa_block *blk = vprob_block(&p);
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        int D = cfg.d_model;
        size_t ny = (size_t)B * T * D;
        double *ry = malloc(ny * sizeof(double));
        refv m = vprob_ref(&p);
        m.kv_round = dt;
        refv_forward(&m, ry, NULL);
        float *y[2] = { malloc(ny * sizeof(float)), malloc(ny * sizeof(float)) };
        size_t nstep = (size_t)B * 6 * D;   // t_new <= 6
        float *xs = malloc(nstep * sizeof(float));
        float *ys = malloc(nstep * sizeof(float));
        int *n_new = malloc(sizeof(int) * (size_t)B);
        int *done = malloc(sizeof(int) * (size_t)B);
        for (int th = 0; th < 2; th++) {
            omp_set_num_threads(th + 1);
            rng rs = { 77 + (uint64_t)it };   // the same steps both times
            mhsa_kv_cache *c = NULL;
            mhsa_kv_config kc = { B, T, dt };
            ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &c), MHSA_OK);
            memset(done, 0, sizeof(int) * (size_t)B);
            for (;;) {
                int t_new = rng_int(&rs, 1, 6), any = 0;
                if (t_new > cfg.max_seq_len)   // the workspace's rows
                    t_new = cfg.max_seq_len;
                if (rng_int(&rs, 0, 2) == 0)
                    t_new = 1;
                for (int b = 0; b < B; b++) {
                    int left = T - done[b];
                    int n = rng_int(&rs, 0, t_new);
                    n_new[b] = n < left ? n : left;
                    any |= left > 0;
                    for (int t = 0; t < t_new; t++)
                        for (int d = 0; d < D; d++) {
                            size_t o = ((size_t)b * t_new + t) * D + d;
                            xs[o] = t < n_new[b]
                                    ? p.x[((size_t)b * T + done[b] + t) * D + d]
                                    : NAN;   // not a token: never read
                        }
                }
                if (!any)
                    break;
                mhsa_cached_args ca = { xs, B, t_new, n_new, ys };
                ck_assert_msg(mhsa_forward_cached_ex(blk, ws, c, &ca) ==
                              MHSA_OK, "%s", mhsa_last_error());
                for (int b = 0; b < B; b++) {
                    for (int t = 0; t < t_new; t++) {
                        const float *yr = ys + ((size_t)b * t_new + t) * D;
                        if (t >= n_new[b]) {
                            for (int d = 0; d < D; d++)
                                ck_assert(yr[d] == 0.0f);
                            continue;
                        }
                        memcpy(y[th] + ((size_t)b * T + done[b] + t) * D, yr,
                               (size_t)D * sizeof(float));
                    }
                    done[b] += n_new[b];
                    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, b), done[b]);
                }
            }
            double e = rel_err_d(y[th], ry, ny);
            ck_assert_msg(e < 1e-4, "%s %s dtype %d: cached err %.3g",
                          mhsa_isa_name(all_isas[_i]), cfg_str(&cfg, B, T),
                          (int)dt, e);
            {   // a step wider than max_seq_len is refused, nothing changed
                int zero[4] = { 0, 0, 0, 0 };
                float *wide = calloc((size_t)B * (cfg.max_seq_len + 1) * D,
                                     sizeof(float));
                mhsa_cached_args ca = { wide, B, cfg.max_seq_len + 1, zero,
                                        wide };
                ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, &ca),
                                 MHSA_ERR_SHAPE);
                for (int b = 0; b < B; b++)
                    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, b), T);
                free(wide);
            }
            // A reset slot is a fresh one: sequence 0 again, token by token.
            ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, 0), MHSA_OK);
            ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 0), 0);
            for (int t = 0; t < T; t++) {
                int one[1] = { 1 };
                mhsa_cached_args ca = { p.x + (size_t)t * D, 1, 1, one, ys };
                ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, &ca),
                                 MHSA_OK);
                double et = rel_err_d(ys, ry + (size_t)t * D, (size_t)D);
                ck_assert_msg(et < 1e-4, "reset slot, t=%d: err %.3g", t, et);
            }
            mhsa_kv_cache_destroy(c);
        }
        ck_assert_msg(!memcmp(y[0], y[1], ny * sizeof(float)),
                      "%s: cached bits differ on 1 and 2 threads",
                      cfg_str(&cfg, B, T));
        free(y[0]);
        free(y[1]);
        free(xs);
        free(ys);
        free(n_new);
        free(done);
        free(ry);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
        vprob_free(&p);
    }
}
END_TEST

// One sequence's bits never depend on the other sequences' contents: in
// mhsa_forward_ex (with padding) and in a ragged cached step.
START_TEST(sequences_are_independent)
{
    if (!use_isa(_i))
        return;
    rng r = { 4000 + (uint64_t)_i };
    int n_prob = test_count(8);
    note_quick("a quarter of the random problems");
    for (int it = 0; it < n_prob; it++) {
        int T = rng_int(&r, 2, 150), B = 3;
        mhsa_config cfg = random_cfg(&r, T);
        vprob p;
        vprob_make(&p, &r, cfg, B, T, 0, 1);
        mhsa_block *blk = vprob_block(&p);
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        size_t per = (size_t)T * cfg.d_model, ny = B * per;
        float *y1 = malloc(ny * sizeof(float)), *y2 = malloc(ny * sizeof(float));
        mhsa_forward_args a = { p.x, B, T, NULL, p.seq_len, y1, NULL };
        ck_assert_int_eq(mhsa_forward_ex(blk, ws, &a), MHSA_OK);
        fill_uniform(&r, p.x, per, -3.0f, 3.0f);   // sequence 0 changes
        p.x[per + 1] = NAN;                        // and 1 reads a NaN
        a.y = y2;
        ck_assert_int_eq(mhsa_forward_ex(blk, ws, &a), MHSA_OK);
        ck_assert_msg(!memcmp(y1 + 2 * per, y2 + 2 * per,
                              per * sizeof(float)),
                      "%s: sequence 2 changed with the others",
                      cfg_str(&cfg, B, T));
        free(y1);
        free(y2);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
        vprob_free(&p);
    }
}
END_TEST

// A window that ends a long way from the start: the tiles before it are
// never read (NaN there changes nothing), on forward, backward and decode.
START_TEST(keys_outside_the_window_are_never_read)
{
    if (!use_isa(_i))
        return;
    rng r = { 5000 + (uint64_t)_i };
    mhsa_config cfg = { 32, 4, 400, 1, 1, 2, 8, 0.0f, 0, 20 };
    int T = 400;
    vprob p;
    vprob_make(&p, &r, cfg, 1, T, 0, 0);
    mhsa_block *blk = vprob_block(&p);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    size_t ny = (size_t)T * 32;
    float *y1 = malloc(ny * sizeof(float)), *y2 = malloc(ny * sizeof(float));
    ck_assert_int_eq(mhsa_forward(blk, ws, p.x, 1, T, NULL, y1, NULL),
                     MHSA_OK);
    for (int d = 0; d < 32; d++)
        p.x[5 * 32 + d] = NAN;   // token 5: outside every window past 24
    ck_assert_int_eq(mhsa_forward(blk, ws, p.x, 1, T, NULL, y2, NULL),
                     MHSA_OK);
    // Rows that read token 5 are NaN; the others stay finite and equal to
    // fp32 rounding (a tile holding a NaN V row takes the scalar path that
    // skips blocked pairs, which sums in another order).
    for (int t = 0; t < T; t++) {
        int reads = t >= 5 && t < 5 + 20;
        for (int d = 0; d < 32; d++) {
            float a = y1[t * 32 + d], b = y2[t * 32 + d];
            if (reads)
                ck_assert_msg(isnan(b), "row %d reads token 5", t);
            else
                ck_assert_msg(fabsf(a - b) <= 1e-5f * (1 + fabsf(a)),
                              "row %d changed: %g vs %g", t, (double)a,
                              (double)b);
        }
    }
    free(y1);
    free(y2);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    vprob_free(&p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("variants");
    TCase *tc = tcase_create("variants");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, forward_matches_reference, 0, N_ISAS);
    tcase_add_loop_test(tc, backward_matches_finite_differences, 0, N_ISAS);
    tcase_add_loop_test(tc, cached_calls_match_reference, 0, N_ISAS);
    tcase_add_loop_test(tc, sequences_are_independent, 0, N_ISAS);
    tcase_add_loop_test(tc, keys_outside_the_window_are_never_read, 0, N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
