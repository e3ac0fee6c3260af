// bench_phases.c — where one block forward's time goes (for two threads
// that scale): the forward's four phases run one after another
// exactly as api/forward.c calls them (the QKV projection GEMM with its
// bias, the split into heads, the attention core, the output projection),
// each timed on its own, so a case shows per phase the microseconds per
// forward and the GFLOP/s; run at 1 and 2 threads it shows which phase
// scales how. Beside them, not part of the sum: each projection again on
// a copy of the table whose micro-kernel does nothing, i.e. the bias
// copy, the packing of A and the parallel region's cost ("…_nokernel").
// cpu_us_* are the process's CPU time per phase: at 1 thread the phase's
// time without the waits a loaded machine adds; at 2 threads both threads'
// time, spinning at barriers included.
//
// Bench-only: nothing is added to the library's own paths. Cases
// phases/forward/B:../threads:N; ./build/bench --benchmark_filter=phases.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "api/objects.h"
#include "attn/attend.h"
#include "attn/split.h"
#include "core/fpenv.h"
#include "gemm/linear.h"
#include "shim.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
// CPU time of the process: at 1 thread the phase's own time even when the
// machine is loaded (wall time then includes time the thread waited).
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static void no_kernel(size_t kd, const float *ap, const float *bp, float *c,
                      size_t ldc, size_t m, size_t n, float beta,
                      const float *bias)
{
    (void)kd; (void)ap; (void)bp; (void)c; (void)ldc; (void)m; (void)n;
    (void)beta; (void)bias;
}

enum { P_QKV, P_SPLIT, P_ATTN, P_OUT, P_QKV_NOK, P_OUT_NOK, N_PHASES };
static const char *const phase_name[N_PHASES] = {
    "qkv_gemm", "split", "attention", "out_gemm", "qkv_nokernel",
    "out_nokernel",
};

static void bm_phases(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int B = (int)mhsa_bench_arg(st, 0), T = (int)mhsa_bench_arg(st, 1);
    int D = (int)mhsa_bench_arg(st, 2), H = (int)mhsa_bench_arg(st, 3);
    int threads = (int)mhsa_bench_arg(st, 4);
    mhsa_config cfg = { D, H, T, 1, 1 };
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    size_t n = (size_t)B * T * D;
    float *x = mhsa_bench_floats(n), *y = mhsa_bench_floats(n);
    if (!x || !y || mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_block_init_random(blk, 42) != MHSA_OK ||
        mhsa_workspace_create(blk, B, &ws) != MHSA_OK) {
        mhsa_bench_skip(st, "setup failed");
        goto out;
    }
    mhsa_bench_fill(x, n, 11);
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    // One forward through the API first: packs the weights for the active
    // table, as every later forward would find them.
    mhsa_forward(blk, ws, x, B, T, NULL, y, NULL);
    const mhsa_kernels *k = mhsa__kernels();
    mhsa_kernels nok = *k;
    nok.sgemm_ukr = no_kernel;
    nok.sgemm_ukr_ra = NULL;   // the GEMM then packs A and calls no_kernel
    size_t Dz = blk->D, bt = (size_t)B * T;
    const float *wq = blk->packed_for == k ? blk->w_qkv_packed : NULL;
    const float *wo = blk->packed_for == k ? blk->w_out_packed : NULL;
    head_layout lay = mhsa__head_layout(blk);
    split_args sp = { .batch = (size_t)B, .t = (size_t)T, .qkv = ws->qkv,
                      .q = ws->q, .k = ws->k, .v = ws->v, .kv_t = (size_t)T,
                      .dt = MHSA_F32, .tmp = ws->row };
    attn_job j = { .batch = (size_t)B, .H = blk->H, .Hkv = blk->Hkv,
                   .dh = blk->dh, .tq = (size_t)T, .kv_t = (size_t)T,
                   .causal = blk->cfg.causal, .q_pos = 0, .tk = (size_t)T,
                   .q = ws->q, .k = ws->k, .v = ws->v,
                   .kv_dtype = MHSA_F32, .ctx = ws->ctx, .lse = ws->lse };
    double sum[N_PHASES] = { 0 }, csum[4] = { 0 };
    mhsa_fpstate fp = mhsa__fp_enter();
    while (mhsa_bench_keep_running(st)) {
        double t[N_PHASES + 1], c[5];
        c[0] = cpu_now(); t[0] = now();
        mhsa__linear(k, &ws->gemm, bt, blk->nqkv, Dz, x, blk->w_qkv,
                     blk->wdt, wq, blk->b_qkv, blk->cdt, ws->qkv);
        t[1] = now(); c[1] = cpu_now();
        mhsa__split_heads(k, &lay, &sp);
        t[2] = now(); c[2] = cpu_now();
        mhsa__attention(k, &ws->attn, &j);
        t[3] = now(); c[3] = cpu_now();
        mhsa__linear(k, &ws->gemm, bt, Dz, Dz, ws->ctx, blk->w_out,
                     blk->wdt, wo, blk->b_out, blk->cdt, y);
        t[4] = now(); c[4] = cpu_now();
        for (int p = 0; p < 4; p++) {
            sum[p] += t[p + 1] - t[p];
            csum[p] += c[p + 1] - c[p];
        }
        // The same projections without the micro-kernel (into scratch
        // the real phases overwrite next time round).
        t[0] = now();
        mhsa__linear(&nok, &ws->gemm, bt, blk->nqkv, Dz, x, blk->w_qkv,
                     blk->wdt, wq, blk->b_qkv, blk->cdt, ws->qkv);
        t[1] = now();
        mhsa__linear(&nok, &ws->gemm, bt, Dz, Dz, ws->ctx, blk->w_out,
                     blk->wdt, wo, blk->b_out, blk->cdt, y);
        t[2] = now();
        sum[P_QKV_NOK] += t[1] - t[0];
        sum[P_OUT_NOK] += t[2] - t[1];
        mhsa_bench_use(y);
    }
    mhsa__fp_leave(fp);
    omp_set_num_threads(saved);
    double it = (double)mhsa_bench_iterations(st);
    double total = 0.0;
    for (int p = 0; p < N_PHASES; p++) {
        char name[32];
        snprintf(name, sizeof name, "us_%s", phase_name[p]);
        mhsa_bench_counter(st, name, it > 0 ? 1e6 * sum[p] / it : 0.0);
        if (p < 4) {
            total += sum[p];
            snprintf(name, sizeof name, "cpu_us_%s", phase_name[p]);
            mhsa_bench_counter(st, name, it > 0 ? 1e6 * csum[p] / it : 0.0);
        }
    }
    mhsa_bench_counter(st, "us_forward", it > 0 ? 1e6 * total / it : 0.0);
    double peak = mhsa_bench_peak_gflops(mhsa_active_isa(), threads);
    double fq = 2.0 * bt * (double)blk->nqkv * Dz, fo = 2.0 * bt * Dz * Dz;
    if (it > 0 && peak > 0.0) {
        mhsa_bench_counter(st, "qkv_of_peak",
                           fq * 1e-9 / (sum[P_QKV] / it) / peak);
        mhsa_bench_counter(st, "out_of_peak",
                           fo * 1e-9 / (sum[P_OUT] / it) / peak);
    }
out:
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x);
    free(y);
}

void mhsa_bench_register_phases(void)
{
    static const char *const names[] = { "B", "T", "D", "H", "threads" };
    static const int64_t shapes[][4] = { { 1, 512, 512, 8 },
                                         { 8, 128, 256, 8 } };
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int c = 0; c < ntc; c++) {
            int64_t a[5] = { shapes[s][0], shapes[s][1], shapes[s][2],
                             shapes[s][3], tc[c] };
            mhsa_bench_add("phases/forward", bm_phases, NULL, 5, a, names);
        }
}
