// bench_latency.c — small problems: shapes where a call takes
// microseconds and fixed costs (parallel regions, packing, per-row setup)
// weigh as much as the arithmetic. Each row runs through the public API at
// 1 and all threads and prints its limit beside it: the FLOPs at the FMA
// peak measured in the same run (bench_roofline.c), as limit_us, and the
// fraction of it reached (frac_peak).
//
// Rows (filter `latency`):
//   tiny        B8 T12 D32 H4, causal, biases (the demo's block,
//               docs/training.md "The demo": H=4 D=32 T=12): forward, and forward+backward
//   gpt_block   B8 T64 D64 H4, causal (the Rust lesson's tiny GPT block)
//   encoder     B1 T32 D384 H12, non-causal, key padding 27 of 32 valid
// FLOPs as bench_attention.c counts them: 8*B*T*D*D for the projections,
// plus the core's Q K^T and P V over the key pairs rows see (causal: half,
// T*T/2; padding: T*valid); forward+backward = 3 x forward.
// The PyTorch line for the same rows: tools/torch_latency.py.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "shim.h"

static const char *const lat_names[] = { "B", "T", "D", "H", "causal",
                                         "valid", "bwd", "threads" };

typedef struct lat_case {
    int B, T, D, H, causal, valid, bwd, threads;
} lat_case;

static lat_case read_case(const mhsa_bench_state *st)
{
    lat_case c;
    c.B = (int)mhsa_bench_arg(st, 0);
    c.T = (int)mhsa_bench_arg(st, 1);
    c.D = (int)mhsa_bench_arg(st, 2);
    c.H = (int)mhsa_bench_arg(st, 3);
    c.causal = (int)mhsa_bench_arg(st, 4);
    c.valid = (int)mhsa_bench_arg(st, 5);
    c.bwd = (int)mhsa_bench_arg(st, 6);
    c.threads = (int)mhsa_bench_arg(st, 7);
    return c;
}

static double case_flops(const lat_case *c)
{
    double B = c->B, T = c->T, D = c->D;
    double pairs = c->causal ? T * T / 2.0 : T * (double)c->valid;
    double fwd = 8.0 * B * T * D * D + 4.0 * B * pairs * D;
    return c->bwd ? 3.0 * fwd : fwd;
}

static void bm_latency(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    lat_case c = read_case(st);
    double peak = mhsa_bench_peak_gflops(mhsa_active_isa(), c.threads);
    int saved = omp_get_max_threads();
    mhsa_config cfg = { c.D, c.H, c.T, c.causal, 1 };
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    size_t n = (size_t)c.B * c.T * c.D;
    float *x = mhsa_bench_floats(n), *y = mhsa_bench_floats(n);
    float *dy = mhsa_bench_floats(n), *dx = mhsa_bench_floats(n);
    int *seq_len = malloc((size_t)c.B * sizeof(int));
    if (!x || !y || !dy || !dx || !seq_len ||
        mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_block_init_random(blk, 42) != MHSA_OK ||
        mhsa_workspace_create(blk, c.B, &ws) != MHSA_OK ||
        mhsa_grads_create(blk, &g) != MHSA_OK) {
        mhsa_bench_skip(st, x && seq_len ? mhsa_last_error()
                                         : "out of memory");
        goto done;
    }
    mhsa_bench_fill(x, n, 31);
    mhsa_bench_fill(dy, n, 32);
    for (int b = 0; b < c.B; b++)
        seq_len[b] = c.valid;
    mhsa_forward_args a = { x, c.B, c.T, NULL,
                            c.valid < c.T ? seq_len : NULL, y, NULL };
    omp_set_num_threads(c.threads);
    if (mhsa_forward_ex(blk, ws, &a) != MHSA_OK ||
        (c.bwd && mhsa_backward(blk, ws, dy, dx, g) != MHSA_OK)) {
        mhsa_bench_skip(st, mhsa_last_error());
    } else {
        // Microseconds a call: batch them past the shim's own cost.
        while (mhsa_bench_keep_running_batch(st, 16)) {
            for (int i = 0; i < 16; i++) {
                mhsa_forward_ex(blk, ws, &a);
                if (c.bwd)
                    mhsa_backward(blk, ws, dy, dx, g);
            }
            mhsa_bench_use(c.bwd ? dx : y);
        }
        double gf = case_flops(&c) * 1e-9;
        mhsa_bench_rate(st, "GFLOP", gf);
        mhsa_bench_rate(st, "frac_peak", gf / peak);
        mhsa_bench_counter(st, "limit_us", gf / peak * 1e6);
    }
    omp_set_num_threads(saved);
done:
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x);
    free(y);
    free(dy);
    free(dx);
    free(seq_len);
}

void mhsa_bench_register_latency(void)
{
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    // B, T, D, H, causal, valid keys, backward; the small-problem target
    // at one thread (goal, value) and the name of the row.
    static const struct {
        int64_t shape[7];
        mhsa_bench_goal goal;
        double target;
        const char *what;
    } rows[] = {
        { { 8, 12, 32, 4, 1, 12, 0 }, MHSA_GOAL_US_MAX, 8.0,
          "latency tiny forward B=8 T=12 D=32 H=4" },
        { { 8, 12, 32, 4, 1, 12, 1 }, MHSA_GOAL_US_MAX, 25.0,
          "latency tiny fwd+bwd B=8 T=12 D=32 H=4" },
        { { 8, 64, 64, 4, 1, 64, 0 }, MHSA_GOAL_FRAC_MIN, 0.5,
          "latency gpt block forward B=8 T=64 D=64 H=4" },
        { { 1, 32, 384, 12, 0, 27, 0 }, MHSA_GOAL_FRAC_MIN, 0.8,
          "latency encoder B=1 T=32 D=384 H=12 pad 27/32" },
    };
    static char labels[8][2][128];
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (int c = 0; c < ntc; c++) {
            int64_t args[8];
            memcpy(args, rows[r].shape, sizeof rows[r].shape);
            args[7] = tc[c];
            snprintf(labels[r][c], sizeof labels[r][c], "%s, %d thread%s",
                     rows[r].what, (int)tc[c], tc[c] > 1 ? "s" : "");
            mhsa_bench_headline h = { labels[r][c], "GFLOP", "frac_peak",
                                      rows[r].goal, rows[r].target, NULL,
                                      NULL, NULL };
            if (c > 0) {   // more threads: never slower than one
                h.goal = MHSA_GOAL_SPEEDUP_MIN;
                h.target = 1.0;
                h.ref = labels[r][0];
            }
            mhsa_bench_add_headline(&h, "latency", bm_latency, NULL, 8, args,
                                    lat_names);
        }
}
