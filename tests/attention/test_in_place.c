// test_in_place.c — the small forward that reads q, k and v in place in
// the QKV projection's rows (forward.c: reads_in_place, the fused small
// view with row strides and q scaled on load) against the split path it
// stands in for, bit for bit, through the public API: y without weights
// (in place where the call allows it) against y with weights asked for
// (the split, always), then the backward after each (dx and every
// gradient; after an in-place forward it splits first), on every ISA
// table, at 1 and 2 threads. Random shapes in and out of the in-place
// sizes (T from 2 to 17, head widths 1 to 33; T = 1, which decodes
// without weights and so has no reference here, must not be in place),
// grouped-query heads, key
// padding, additive masks with -inf entries, windows that do and do not
// cut a row's first keys, with and without biases; and NaN or inf in one
// sequence's x, which the fused kernel declines, so that the call goes
// back to the split and the tiled path. Enough forwards must have stayed
// in place (else the comparison would test nothing), and every declined
// one must have gone back (the workspace's split_pending).
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "api/objects.h"
#include "mhsa.h"

enum { N_CASES = 60 };

static const int T_choices[] = { 1, 2, 3, 5, 12, 16, 17 };
static const int dh_choices[] = { 1, 3, 8, 13, 16, 32, 33 };

typedef struct run_out {
    float *y, *dx, *g[4];
    int in_place;   // the forward left the split to the backward
} run_out;

typedef struct shape {
    mhsa_config cfg;
    int B, T;
    size_t nqkv;
    float *x, *dy, *mask;
    int *seq_len;
} shape;

static void shape_make(shape *s, rng *r)
{
    memset(s, 0, sizeof *s);
    int T = T_choices[rng_int(r, 0, (int)(sizeof T_choices /
                                          sizeof *T_choices) - 1)];
    int dh = dh_choices[rng_int(r, 0, (int)(sizeof dh_choices /
                                            sizeof *dh_choices) - 1)];
    int H = rng_int(r, 1, 4), divs[4], nd = 0;
    for (int d = 1; d <= H; d++)
        if (H % d == 0)
            divs[nd++] = d;
    mhsa_config c = { 0 };
    c.d_model = H * dh;
    c.n_heads = H;
    c.n_kv_heads = divs[rng_int(r, 0, nd - 1)];
    c.max_seq_len = T + rng_int(r, 0, 2);
    c.causal = rng_int(r, 0, 1);
    c.bias = rng_int(r, 0, 1);
    if (c.causal && rng_int(r, 0, 2) == 0)   // cuts when below T
        c.window = rng_int(r, 1, T + 1);
    s->cfg = c;
    s->B = rng_int(r, 1, 3);
    s->T = T;
    s->nqkv = (size_t)(H + 2 * c.n_kv_heads) * (size_t)dh;
    size_t n = (size_t)s->B * T * c.d_model;
    s->x = malloc(n * sizeof(float));
    s->dy = malloc(n * sizeof(float));
    fill_uniform(r, s->x, n, -1.0f, 1.0f);
    fill_uniform(r, s->dy, n, -1.0f, 1.0f);
    if (rng_int(r, 0, 2) == 0) {   // NaN or inf in one sequence's x
        static const float bad[] = { NAN, INFINITY, -INFINITY };
        s->x[rng_int(r, 0, (int)n - 1)] = bad[rng_int(r, 0, 2)];
    }
    if (rng_int(r, 0, 2) == 0) {
        s->mask = malloc((size_t)T * T * sizeof(float));
        for (int i = 0; i < T * T; i++)
            s->mask[i] = rng_int(r, 0, 4) == 0 ? -INFINITY
                                               : rng_uniform(r, -2.0f, 1.0f);
    }
    if (rng_int(r, 0, 1)) {
        s->seq_len = malloc((size_t)s->B * sizeof(int));
        for (int b = 0; b < s->B; b++)
            s->seq_len[b] = rng_int(r, 1, T);
    }
}

static void shape_free(shape *s)
{
    free(s->x);
    free(s->dy);
    free(s->mask);
    free(s->seq_len);
}

// A forward (weights asked for or not) and the backward after it.
static run_out run(const shape *s, const mhsa_block *blk, int weights)
{
    size_t D = (size_t)s->cfg.d_model, n = (size_t)s->B * s->T * D;
    size_t H = (size_t)s->cfg.n_heads, T = (size_t)s->T;
    run_out o = { 0 };
    o.y = malloc(n * sizeof(float));
    o.dx = malloc(n * sizeof(float));
    float *attn = weights ? malloc((size_t)s->B * H * T * T * sizeof(float))
                          : NULL;
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, s->B, &ws), MHSA_OK);
    mhsa_forward_args a = { s->x, s->B, s->T, s->mask, s->seq_len, o.y,
                            attn };
    ck_assert_int_eq(mhsa_forward_ex(blk, ws, &a), MHSA_OK);
    o.in_place = ws->split_pending;
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(blk, ws, s->dy, o.dx, g), MHSA_OK);
    ck_assert(!ws->split_pending);
    size_t sizes[4] = { s->nqkv * D, s->nqkv, D * D, D };
    float *src[4] = { g->w_qkv, g->b_qkv, g->w_out, g->b_out };
    for (int i = 0; i < 4; i++)
        if (src[i]) {
            o.g[i] = malloc(sizes[i] * sizeof(float));
            memcpy(o.g[i], src[i], sizes[i] * sizeof(float));
        }
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    free(attn);
    return o;
}

static void run_free(run_out *o)
{
    free(o->y);
    free(o->dx);
    for (int i = 0; i < 4; i++)
        free(o->g[i]);
}

static int same(const float *a, const float *b, size_t n)
{
    return (!a && !b) || (a && b && !memcmp(a, b, n * sizeof(float)));
}

START_TEST(in_place_equals_split)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    const char *isa = mhsa_isa_name(mhsa_active_isa());
    int has_small = mhsa__kernels()->attn_small != NULL;
    rng r = { 0x1a9ce + (uint64_t)_i };
    int in_place = 0, cases = test_count(N_CASES);
    for (int c = 0; c < cases; c++) {
        shape s;
        shape_make(&s, &r);
        mhsa_block *blk = NULL;
        ck_assert_int_eq(mhsa_block_create(&s.cfg, &blk), MHSA_OK);
        ck_assert_int_eq(mhsa_block_init_random(blk, 7 + (uint64_t)c),
                         MHSA_OK);
        size_t D = (size_t)s.cfg.d_model, n = (size_t)s.B * s.T * D;
        size_t sizes[4] = { s.nqkv * D, s.nqkv, D * D, D };
        omp_set_num_threads(1);
        run_out ref = run(&s, blk, 1);   // the split, always
        ck_assert(!ref.in_place);
        for (int nt = 1; nt <= 2; nt++) {
            omp_set_num_threads(nt);
            run_out o = run(&s, blk, 0);
            in_place += o.in_place;
            // In place only where the table has the fused kernel and
            // every value was finite (else it went back to the split).
            ck_assert(!o.in_place || (has_small && all_finite(s.x, n)));
            if (s.T == 1) {
                // One row decodes without weights (decode.c, its own
                // sums) and takes the tiles with them: no reference
                // here, and never in place.
                ck_assert(!o.in_place);
                run_free(&o);
                continue;
            }
            ck_assert_msg(same(o.y, ref.y, n) && same(o.dx, ref.dx, n),
                          "%s case %d (T %d, D %d, H %d/%d, window %d, "
                          "%d threads, in place %d): y or dx differs from "
                          "the split path", isa, c, s.T, s.cfg.d_model,
                          s.cfg.n_heads, s.cfg.n_kv_heads, s.cfg.window,
                          nt, o.in_place);
            for (int i = 0; i < 4; i++)
                ck_assert_msg(same(o.g[i], ref.g[i], sizes[i]),
                              "%s case %d (%d threads, in place %d): "
                              "gradient %d differs from the split path",
                              isa, c, nt, o.in_place, i);
            run_free(&o);
        }
        run_free(&ref);
        mhsa_block_destroy(blk);
        shape_free(&s);
    }
    omp_set_num_threads(2);
    printf("%s: %d of %d forwards in place\n", isa, in_place, 2 * cases);
    // The shapes above put about a fifth of them in place.
    if (has_small)
        ck_assert_int_ge(in_place, cases / 4);
    else
        ck_assert_int_eq(in_place, 0);
}
END_TEST

int main(void)
{
    note_quick("a quarter of the random shapes");
    Suite *s = suite_create("in_place");
    ADD_CASE(s, in_place_equals_split, N_ISAS, NULL);
    return run_suite(s);
}
