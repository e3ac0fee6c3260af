// bench_compute_bf16.c — what compute_dtype MHSA_BF16 costs or gains against
// fp32 in the same run: the block forward B=1 T=512 D=512 H=8 causal, and
// forward + backward B=8 T=128 D=256 H=8 causal, each in f32 and bf16, and
// their time ratios (bf16 / f32; the targets, 0.33x and 0.4x, are for AMX;
// where the CPU has no bf16 instructions the ratio is the cost of the exact
// fallback: rounding the packed panels).
#include <stdio.h>
#include <stdlib.h>

#include <omp.h>

#include "bench_util.h"
#include "mhsa.h"
#include "shim.h"

// Arguments: B, T, D, H, compute dtype, backward (0/1), threads.
static void bm_block(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int B = (int)mhsa_bench_arg(st, 0), T = (int)mhsa_bench_arg(st, 1);
    int D = (int)mhsa_bench_arg(st, 2), H = (int)mhsa_bench_arg(st, 3);
    int cd = (int)mhsa_bench_arg(st, 4), bwd = (int)mhsa_bench_arg(st, 5);
    int threads = (int)mhsa_bench_arg(st, 6);
    mhsa_config cfg = { D, H, T, 1, 1 };
    cfg.compute_dtype = cd;
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    size_t n = (size_t)B * T * D;
    float *x = mhsa_bench_floats(n), *y = mhsa_bench_floats(n);
    float *dy = mhsa_bench_floats(n), *dx = mhsa_bench_floats(n);
    if (!x || !y || !dy || !dx || mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_block_init_random(blk, 42) != MHSA_OK ||
        mhsa_workspace_create(blk, B, &ws) != MHSA_OK ||
        mhsa_grads_create(blk, &g) != MHSA_OK) {
        mhsa_bench_skip(st, *mhsa_last_error() ? mhsa_last_error()
                                               : "out of memory");
    } else {
        mhsa_bench_fill(x, n, 11);
        mhsa_bench_fill(dy, n, 12);
        int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        while (mhsa_bench_keep_running(st)) {
            mhsa_forward(blk, ws, x, B, T, NULL, y, NULL);
            if (bwd)
                mhsa_backward(blk, ws, dy, dx, g);
            mhsa_bench_use(y);
            mhsa_bench_use(dx);
        }
        omp_set_num_threads(saved);
        // Projections 8 B T D^2, causal attention about half of 4 B T^2 D;
        // the backward about twice the forward.
        double gf = (8.0 * B * T * (double)D * D +
                     2.0 * B * T * (double)T * D) * 1e-9 * (bwd ? 3.0 : 1.0);
        mhsa_bench_rate(st, "GFLOP", gf);
    }
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x); free(y); free(dy); free(dx);
}

void mhsa_bench_register_compute_bf16(void)
{
    static const char *const names[] = { "B", "T", "D", "H", "compute",
                                         "backward", "threads" };
    static const struct { int64_t B, T, D, H, bwd; const char *what; }
    cases[] = {
        { 1, 512, 512, 8, 0, "forward B=1 T=512 D=512 H=8 causal" },
        { 8, 128, 256, 8, 1, "fwd+bwd B=8 T=128 D=256 H=8 causal" },
    };
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    char label[2][192], ratio[192];
    for (int c = 0; c < ntc; c++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            for (int cd = 0; cd < 2; cd++) {
                int64_t args[7] = { cases[i].B, cases[i].T, cases[i].D,
                                    cases[i].H, cd ? MHSA_BF16 : MHSA_F32,
                                    cases[i].bwd, tc[c] };
                snprintf(label[cd], sizeof label[cd], "%s compute %s, %d "
                         "thread%s", cases[i].what, cd ? "bf16" : "f32",
                         (int)tc[c], tc[c] > 1 ? "s" : "");
                mhsa_bench_headline h = { label[cd], "GFLOP", NULL,
                                          MHSA_GOAL_NONE, 0.0, NULL, NULL,
                                          NULL };
                mhsa_bench_add_headline(&h, "bf16/block", bm_block, NULL, 7,
                                        args, names);
            }
            snprintf(ratio, sizeof ratio, "%s, bf16 / f32, %d thr",
                     cases[i].what, (int)tc[c]);
            mhsa_bench_add_ratio(ratio, label[1], label[0], 0.0);
        }
}
