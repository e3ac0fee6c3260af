// bench_adversarial.c — what subnormal inputs cost: the whole-block forward
// B=1 T=128 D=64 H=4 (test_adversarial.c's subnormal guard) over inputs
// scaled into the subnormal range (x * 1e-39) against the same forward
// over the normal inputs, alternating in one loop on one table.
//
// The counter subnormal_ratio is the subnormal forward's time over the
// normal one's. The library computes with subnormals as zero (FTZ/DAZ,
// shared API.md), so it should be near 1 on every CPU; an Intel core that
// took a microcode assist per subnormal operand ran the same forward
// 30-150x slower before 0.3.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#include "mhsa.h"
#include "shim.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const mhsa_isa isas[] = { MHSA_ISA_SCALAR, MHSA_ISA_AVX2,
                                 MHSA_ISA_AVX512, MHSA_ISA_NEON };

// ctx: the mhsa_isa. One thread (the timing guard's setting).
static void bm_subnormal_ratio(mhsa_bench_state *st, const void *ctx)
{
    mhsa_isa isa = *(const mhsa_isa *)ctx;
    mhsa_isa was = mhsa_active_isa();
    if (mhsa_select_isa(isa) != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
        return;
    }
    enum { T = 128, D = 64, H = 4 };
    mhsa_config cfg = { D, H, T, 1, 1 };
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    size_t n = (size_t)T * D;
    float *x = mhsa_bench_floats(n), *xs = mhsa_bench_floats(n);
    float *y = mhsa_bench_floats(n);
    if (!x || !xs || !y || mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_block_init_random(blk, 7) != MHSA_OK ||
        mhsa_workspace_create(blk, 1, &ws) != MHSA_OK) {
        mhsa_bench_skip(st, "out of memory");
    } else {
        mhsa_bench_fill(x, n, 5);
        for (size_t i = 0; i < n; i++)
            xs[i] = x[i] * 1e-39f;
        double t_norm = 0.0, t_sub = 0.0;
        int threads = omp_get_max_threads();
        omp_set_num_threads(1);
        while (mhsa_bench_keep_running(st)) {
            double t0 = now();
            mhsa_forward(blk, ws, x, 1, T, NULL, y, NULL);
            double t1 = now();
            mhsa_forward(blk, ws, xs, 1, T, NULL, y, NULL);
            double t2 = now();
            mhsa_bench_use(y);
            t_norm += t1 - t0;
            t_sub += t2 - t1;
        }
        omp_set_num_threads(threads);
        mhsa_bench_counter(st, "subnormal_ratio", t_sub / t_norm);
        mhsa_bench_counter(st, "normal_us",
                           1e6 * t_norm / (double)mhsa_bench_iterations(st));
    }
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x);
    free(xs);
    free(y);
    mhsa_select_isa(was);
}

void mhsa_bench_register_adversarial(void)
{
    static const char *const names[] = { "threads" };
    static const int64_t one[] = { 1 };
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "adversarial/subnormal_ratio/%s",
                 mhsa_isa_name(isas[i]));
        mhsa_bench_add(name, bm_subnormal_ratio, &isas[i], 1, one, names);
    }
}
