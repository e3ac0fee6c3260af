// bench_variants.c — what the attention variants (GQA, RoPE, windows) cost,
// each beside the case it should cost (almost) the same as:
//
// - RoPE: the whole-block forward B=1 T=2048 D=512 H=8 with a rotary
//   embedding over the whole head (rope_dim = 64) and without; the
//   rotation happens in the split into heads, and its cost is the time
//   ratio (target <= 1.03).
// - Sliding window: the causal attention core at T=4096 with W=256, whose
//   work is O(T*W): every query sees at most W keys. Its fair baseline is
//   the same number of query rows each seeing exactly W keys: 16
//   sequences of T=256 without a causal mask (4096 x 256 (query, key)
//   pairs; the window has 4096 x 256 - 255 x 256 / 2, 3% fewer). Target:
//   the window's time within 1.2x of it. Shown beside it: 16 causal
//   sequences of T=256 (the "T=256 run scaled by 4096/256"; half the
//   pairs, since a causal row sees 128.5 keys on average, so the window
//   should take about twice its time), and the full causal T=4096 (what
//   the window saves).
//
// GFLOP counts the (query, key) pairs each case really computes: 4 * dh
// per pair and head (Q K^T and P V), so the GFLOP/s of the four attention
// rows compare directly, as fractions of the same peak.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attend.h"
#include "bench_util.h"
#include "api/objects.h"
#include "shim.h"

static double peak_of(int threads)
{
    return mhsa_bench_peak_gflops(mhsa_active_isa(), threads);
}

// ---- RoPE: the whole forward, rotated or not ---------------------------------

// Arguments: B, T, D, H, rope_dim, threads.
static void bm_forward(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int B = (int)mhsa_bench_arg(st, 0), T = (int)mhsa_bench_arg(st, 1);
    int D = (int)mhsa_bench_arg(st, 2), H = (int)mhsa_bench_arg(st, 3);
    int rope = (int)mhsa_bench_arg(st, 4);
    int threads = (int)mhsa_bench_arg(st, 5);
    mhsa_config cfg = { D, H, T, 1, 1 };
    cfg.rope_dim = rope;
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    size_t n = (size_t)B * T * D;
    float *x = mhsa_bench_floats(n), *y = mhsa_bench_floats(n);
    if (!x || !y || mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_block_init_random(blk, 42) != MHSA_OK ||
        mhsa_workspace_create(blk, B, &ws) != MHSA_OK) {
        mhsa_bench_skip(st, *mhsa_last_error() ? mhsa_last_error()
                                               : "out of memory");
    } else {
        mhsa_bench_fill(x, n, 11);
        double peak = peak_of(threads);
        thread_scope ts = threads_begin(threads);
        while (mhsa_bench_keep_running(st)) {
            mhsa_forward(blk, ws, x, B, T, NULL, y, NULL);
            mhsa_bench_use(y);
        }
        threads_end(ts);
        // As bench_attention.c counts a forward (the rotation is free).
        double gf = (8.0 * B * T * (double)D * D +
                     2.0 * B * T * (double)T * D) * 1e-9;
        mhsa_bench_rate(st, "GFLOP", gf);
        mhsa_bench_rate(st, "frac_peak", gf / peak);
    }
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x);
    free(y);
}

// ---- sliding window: the attention core --------------------------------------

// (query, key) pairs a sequence of T rows computes: causal (window 0) or
// windowed rows see min(p + 1, W) keys; non-causal rows see T.
static double pairs(int T, int causal, int W)
{
    if (!causal)
        return (double)T * T;
    double p = 0.0;
    for (int i = 0; i < T; i++)
        p += W && i + 1 > W ? W : i + 1;
    return p;
}

// Arguments: B, H, dh, T, causal, window, threads. Random q (scaled), k
// and v in the workspace's head layout, as bench_attention.c's core.
static void bm_core(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int B = (int)mhsa_bench_arg(st, 0), H = (int)mhsa_bench_arg(st, 1);
    int dh = (int)mhsa_bench_arg(st, 2), T = (int)mhsa_bench_arg(st, 3);
    int causal = (int)mhsa_bench_arg(st, 4), W = (int)mhsa_bench_arg(st, 5);
    int threads = (int)mhsa_bench_arg(st, 6);
    mhsa_config cfg = { H * dh, H, T, 1, 0 };
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    if (mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_workspace_create(blk, B, &ws) != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
        mhsa_block_destroy(blk);
        return;
    }
    size_t n = (size_t)B * T * H * dh;
    mhsa_bench_fill(ws->q, n, 21);
    float s = 1.0f / sqrtf((float)dh);
    for (size_t i = 0; i < n; i++)
        ws->q[i] *= s;
    mhsa_bench_fill(ws->k, n, 22);
    mhsa_bench_fill(ws->v, n, 23);
    attn_job j = {
        .batch = (size_t)B, .H = (size_t)H, .Hkv = (size_t)H,
        .dh = (size_t)dh, .tq = (size_t)T, .kv_t = (size_t)T,
        .tk = (size_t)T, .causal = causal, .window = (size_t)W,
        .q = ws->q, .k = ws->k, .v = ws->v, .ctx = ws->ctx, .lse = ws->lse,
    };
    const mhsa_kernels *k = mhsa__kernels();
    double peak = peak_of(threads);
    thread_scope ts = threads_begin(threads);
    while (mhsa_bench_keep_running(st)) {
        mhsa__attention(k, &ws->attn, &j);
        mhsa_bench_use(j.ctx);
    }
    threads_end(ts);
    double gf = 4.0 * dh * H * B * pairs(T, causal, W) * 1e-9;
    mhsa_bench_rate(st, "GFLOP", gf);
    mhsa_bench_rate(st, "frac_peak", gf / peak);
    mhsa_bench_counter(st, "pairs_M", B * pairs(T, causal, W) * 1e-6);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

// ---- registration -------------------------------------------------------------

static void with_threads(char *buf, size_t n, const char *what, int64_t t)
{
    snprintf(buf, n, "%.160s, %d thread%s", what, (int)t,
             t > 1 ? "s" : "");
}

void mhsa_bench_register_variants(void)
{
    static const char *const fwd_names[] = { "B", "T", "D", "H", "rope",
                                             "threads" };
    static const char *const core_names[] = { "B", "H", "dh", "T", "causal",
                                              "window", "threads" };
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    char what[128], label[160], num[160], den[160];

    for (int c = 0; c < ntc; c++)
        for (int rope = 0; rope <= 64; rope += 64) {
            int64_t args[6] = { 1, 2048, 512, 8, rope, tc[c] };
            snprintf(what, sizeof what, "forward B=1 T=2048 D=512 H=8 %s",
                     rope ? "RoPE 64" : "no RoPE");
            with_threads(label, sizeof label, what, tc[c]);
            mhsa_bench_headline h = { label, "GFLOP", "frac_peak",
                                      MHSA_GOAL_NONE, 0.0, NULL, NULL,
                                      NULL };
            mhsa_bench_add_headline(&h, "variants/forward", bm_forward,
                                    NULL, 6, args, fwd_names);
        }

    static const struct { int64_t B, T, causal, W; const char *what; }
    cores[] = {
        { 1, 4096, 1, 256, "attention window W=256 T=4096" },
        { 16, 256, 0, 0, "attention non-causal B=16 T=256" },
        { 16, 256, 1, 0, "attention causal B=16 T=256" },
        { 1, 4096, 1, 0, "attention causal T=4096" },
    };
    for (int c = 0; c < ntc; c++)
        for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
            int64_t args[7] = { cores[i].B, 8, 64, cores[i].T,
                                cores[i].causal, cores[i].W, tc[c] };
            snprintf(what, sizeof what, "%s H=8 dh=64", cores[i].what);
            with_threads(label, sizeof label, what, tc[c]);
            mhsa_bench_headline h = { label, "GFLOP", "frac_peak",
                                      MHSA_GOAL_NONE, 0.0, NULL, NULL,
                                      NULL };
            mhsa_bench_add_headline(&h, "variants/attention", bm_core, NULL,
                                    7, args, core_names);
        }

    for (int c = 0; c < ntc; c++) {
        snprintf(what, sizeof what, "forward B=1 T=2048 D=512 H=8 RoPE 64");
        with_threads(num, sizeof num, what, tc[c]);
        snprintf(what, sizeof what, "forward B=1 T=2048 D=512 H=8 no RoPE");
        with_threads(den, sizeof den, what, tc[c]);
        snprintf(label, sizeof label,
                 "forward T=2048 D=512 RoPE / no RoPE, %d thr", (int)tc[c]);
        mhsa_bench_add_ratio(label, num, den, 1.03);

        static const struct { size_t den; const char *name; double max; }
        vs[] = {
            { 1, "window W=256 T=4096 / non-causal 16 x T=256", 1.2 },
            { 2, "window W=256 T=4096 / causal 16 x T=256", 0.0 },
            { 3, "window W=256 T=4096 / causal T=4096", 0.0 },
        };
        snprintf(what, sizeof what, "%s H=8 dh=64", cores[0].what);
        with_threads(num, sizeof num, what, tc[c]);
        for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
            snprintf(what, sizeof what, "%s H=8 dh=64", cores[vs[i].den].what);
            with_threads(den, sizeof den, what, tc[c]);
            snprintf(label, sizeof label, "%s, %d thr", vs[i].name,
                     (int)tc[c]);
            mhsa_bench_add_ratio(label, num, den, vs[i].max);
        }
    }
}
