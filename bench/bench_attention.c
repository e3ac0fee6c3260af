// bench_attention.c — the attention block's headline cases: whole-block
// forward, the fused causal attention core next to a naive
// materialised T x T attention, and forward+backward; each at 1 and all
// threads, each as a fraction of this run's measured limit
// (bench_roofline.c). One-token decode against a KV cache is in
// bench_decode.c.
//
// FLOP conventions (causal throughout; masked half not counted):
//   attention core        2*B*H*T*T*dh   (Q K^T and P V, each T*T*dh/2 MACs)
//   block forward         8*B*T*D*D (QKV and output projections)
//                         + 2*B*T*T*D (the core)
//   forward + backward    3 x forward (backward = twice the forward's work,
//                         no credit for recomputing P)
// The naive attention is counted with the same useful FLOPs, so its
// GFLOP/s compares directly (it does twice that work: the whole T x T).
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "attn/attend.h"
#include "api/objects.h"
#include "shim.h"

static double peak_of(int threads)
{
    return mhsa_bench_peak_gflops(mhsa_active_isa(), threads);
}

// ---- a block with its workspace and inputs ---------------------------------

typedef struct fixture {
    int B, T, D, H;
    mhsa_block *blk;
    mhsa_workspace *ws;
    mhsa_grads *g;
    float *x, *y, *dy, *dx;
} fixture;

static void fixture_free(fixture *f)
{
    mhsa_grads_destroy(f->g);
    mhsa_workspace_destroy(f->ws);
    mhsa_block_destroy(f->blk);
    free(f->x);
    free(f->y);
    free(f->dy);
    free(f->dx);
    memset(f, 0, sizeof *f);
}

// Causal block with biases, Xavier weights, inputs in [-1, 1). Made with
// OpenMP's full thread count, so the workspace serves 1 or all threads.
// io_tokens: tokens of x, y, dy, dx (B*T for a forward, 1 for decoding).
static int fixture_init(fixture *f, mhsa_bench_state *st, int B, int T,
                        int D, int H, size_t io_tokens)
{
    memset(f, 0, sizeof *f);
    f->B = B;
    f->T = T;
    f->D = D;
    f->H = H;
    mhsa_config cfg = { D, H, T, 1, 1 };
    size_t n = io_tokens * (size_t)D;
    if (mhsa_block_create(&cfg, &f->blk) != MHSA_OK ||
        mhsa_block_init_random(f->blk, 42) != MHSA_OK ||
        mhsa_workspace_create(f->blk, B, &f->ws) != MHSA_OK ||
        mhsa_grads_create(f->blk, &f->g) != MHSA_OK ||
        !(f->x = mhsa_bench_floats(n)) || !(f->y = mhsa_bench_floats(n)) ||
        !(f->dy = mhsa_bench_floats(n)) || !(f->dx = mhsa_bench_floats(n))) {
        mhsa_bench_skip(st, mhsa_last_error());
        fixture_free(f);
        return 0;
    }
    mhsa_bench_fill(f->x, n, 11);
    mhsa_bench_fill(f->dy, n, 12);
    return 1;
}

static double forward_flops(double B, double T, double D)
{
    return 8.0 * B * T * D * D + 2.0 * B * T * T * D;
}

static const char *const shape_names[] = { "B", "T", "D", "H", "threads" };

// mhsa_forward, y = block(x), no attention weights returned.
static void bm_forward(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int B = (int)mhsa_bench_arg(st, 0), T = (int)mhsa_bench_arg(st, 1);
    int D = (int)mhsa_bench_arg(st, 2), H = (int)mhsa_bench_arg(st, 3);
    int threads = (int)mhsa_bench_arg(st, 4);
    fixture f;
    if (!fixture_init(&f, st, B, T, D, H, (size_t)B * T))
        return;
    double peak = peak_of(threads);
    thread_scope ts = threads_begin(threads);
    if (mhsa_forward(f.blk, f.ws, f.x, B, T, NULL, f.y, NULL) != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
    } else {
        // Tiny shapes take microseconds: batch them past the shim's cost.
        int64_t batch = (double)B * T * D * D < 1e6 ? 16 : 1;
        while (mhsa_bench_keep_running_batch(st, batch)) {
            for (int64_t i = 0; i < batch; i++)
                mhsa_forward(f.blk, f.ws, f.x, B, T, NULL, f.y, NULL);
            mhsa_bench_use(f.y);
        }
        double gf = forward_flops(B, T, D) * 1e-9;
        mhsa_bench_rate(st, "GFLOP", gf);
        mhsa_bench_rate(st, "frac_peak", gf / peak);
    }
    threads_end(ts);
    fixture_free(&f);
}

// mhsa_forward then mhsa_backward (with dx), gradients accumulating.
static void bm_fwd_bwd(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int B = (int)mhsa_bench_arg(st, 0), T = (int)mhsa_bench_arg(st, 1);
    int D = (int)mhsa_bench_arg(st, 2), H = (int)mhsa_bench_arg(st, 3);
    int threads = (int)mhsa_bench_arg(st, 4);
    fixture f;
    if (!fixture_init(&f, st, B, T, D, H, (size_t)B * T))
        return;
    double peak = peak_of(threads);
    thread_scope ts = threads_begin(threads);
    if (mhsa_forward(f.blk, f.ws, f.x, B, T, NULL, f.y, NULL) != MHSA_OK ||
        mhsa_backward(f.blk, f.ws, f.dy, f.dx, f.g) != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
    } else {
        int64_t batch = (double)B * T * D * D < 1e6 ? 16 : 1;
        while (mhsa_bench_keep_running_batch(st, batch)) {
            for (int64_t i = 0; i < batch; i++) {
                mhsa_forward(f.blk, f.ws, f.x, B, T, NULL, f.y, NULL);
                mhsa_backward(f.blk, f.ws, f.dy, f.dx, f.g);
            }
            mhsa_bench_use(f.dx);
        }
        double gf = 3.0 * forward_flops(B, T, D) * 1e-9;
        mhsa_bench_rate(st, "GFLOP", gf);
        mhsa_bench_rate(st, "frac_peak", gf / peak);
    }
    threads_end(ts);
    fixture_free(&f);
}

// ---- the attention core: fused, and naive for comparison ------------------

static const char *const core_names[] = { "B", "H", "dh", "T", "threads" };

static int core_init(fixture *f, mhsa_bench_state *st)
{
    int B = (int)mhsa_bench_arg(st, 0), H = (int)mhsa_bench_arg(st, 1);
    int dh = (int)mhsa_bench_arg(st, 2), T = (int)mhsa_bench_arg(st, 3);
    if (!fixture_init(f, st, B, T, H * dh, H, (size_t)B * T))
        return 0;
    // Scores of q k with entries in [-1, 1)/sqrt(dh) (q is stored scaled),
    // so softmax weights spread over many keys, as in a trained model.
    size_t n = (size_t)B * T * H * dh;
    mhsa_bench_fill(f->ws->q, n, 21);
    float s = 1.0f / sqrtf((float)dh);
    for (size_t i = 0; i < n; i++)
        f->ws->q[i] *= s;
    mhsa_bench_fill(f->ws->k, n, 22);
    mhsa_bench_fill(f->ws->v, n, 23);
    return 1;
}

static attn_job core_job(const fixture *f)
{
    attn_job j = {
        .batch = (size_t)f->B, .H = (size_t)f->H, .Hkv = (size_t)f->H,
        .dh = (size_t)(f->D / f->H), .tq = (size_t)f->T,
        .tk = (size_t)f->T, .kv_t = (size_t)f->T, .q_pos = 0, .causal = 1,
        .mask = NULL, .q = f->ws->q, .k = f->ws->k, .v = f->ws->v,
        .ctx = f->ws->ctx, .lse = f->ws->lse, .attn = NULL,
    };
    return j;
}

static double core_gflop(const fixture *f)
{
    return 2.0 * f->B * f->T * (double)f->T * f->D * 1e-9;
}

// The library's fused attention (mhsa__attention, as mhsa_forward runs it
// between the projections): flash-style tiles, causal blocks skipped.
static void bm_attn_fused(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int threads = (int)mhsa_bench_arg(st, 4);
    fixture f;
    if (!core_init(&f, st))
        return;
    double peak = peak_of(threads);
    const mhsa_kernels *k = mhsa__kernels();
    attn_job j = core_job(&f);
    thread_scope ts = threads_begin(threads);
    while (mhsa_bench_keep_running(st)) {
        mhsa__attention(k, &f.ws->attn, &j);
        mhsa_bench_use(j.ctx);
    }
    threads_end(ts);
    mhsa_bench_rate(st, "GFLOP", core_gflop(&f));
    mhsa_bench_rate(st, "frac_peak", core_gflop(&f) / peak);
    fixture_free(&f);
}

// Naive: per head, S = Q K^T (T x T, our GEMM), causal -INFINITY, a whole-
// row softmax, O = P V (our GEMM), in the same merged layout.
static void bm_attn_naive(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int threads = (int)mhsa_bench_arg(st, 4);
    fixture f;
    if (!core_init(&f, st))
        return;
    double peak = peak_of(threads);
    const mhsa_kernels *k = mhsa__kernels();
    size_t T = (size_t)f.T, H = (size_t)f.H, dh = (size_t)(f.D / f.H);
    size_t B = (size_t)f.B, D = (size_t)f.D;
    float *s = mhsa_bench_floats(T * T);
    mhsa_gemm_scratch gs = {
        .a = mhsa_bench_floats((size_t)threads * mhsa_gemm_a_floats(k)),
        .b = mhsa_bench_floats(mhsa_gemm_b_floats(k, T > dh ? T : dh)),
        .b_floats = mhsa_gemm_b_floats(k, T > dh ? T : dh),
        .max_threads = threads,
    };
    if (!s || !gs.a || !gs.b) {
        mhsa_bench_skip(st, "out of memory");
    } else {
        thread_scope ts = threads_begin(threads);
        while (mhsa_bench_keep_running(st)) {
            for (size_t bh = 0; bh < B * H; bh++) {
                size_t b = bh / H, h = bh % H;
                const float *q = f.ws->q + bh * T * dh;
                const float *kk = f.ws->k + bh * T * dh;
                const float *v = f.ws->v + bh * T * dh;
                mhsa_sgemm(k, &gs, 0, 1, T, T, dh, 1.0f, q, dh, kk, dh,
                           NULL, 0.0f, s, T);
#pragma omp parallel for schedule(static)
                for (size_t r = 0; r < T; r++) {
                    float *row = s + r * T;
                    for (size_t c = r + 1; c < T; c++)
                        row[c] = -INFINITY;
                    k->softmax_row(T, row, row);
                }
                mhsa_sgemm(k, &gs, 0, 0, T, dh, T, 1.0f, s, T, v, dh, NULL,
                           0.0f, f.ws->ctx + b * T * D + h * dh, D);
            }
            mhsa_bench_use(f.ws->ctx);
        }
        threads_end(ts);
        mhsa_bench_rate(st, "GFLOP", core_gflop(&f));
        mhsa_bench_rate(st, "frac_peak", core_gflop(&f) / peak);
    }
    free(s);
    free(gs.a);
    free(gs.b);
    fixture_free(&f);
}

// ---- memory -----------------------------------------------------------------

// Bytes of a workspace (B=1, D=512, H=8) for max_seq_len T, and of the
// (B, H, T, T) weights a caller must supply to get attn back: the workspace
// is the same either way, linear in T.
static void bm_workspace_bytes(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int T = (int)mhsa_bench_arg(st, 0);
    mhsa_config cfg = { 512, 8, T, 1, 1 };
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    if (mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_workspace_create(blk, 1, &ws) != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
    } else {
        size_t bytes = 0;
        while (mhsa_bench_keep_running(st))
            bytes = mhsa_workspace_bytes(ws);
        mhsa_bench_counter(st, "ws_MiB", (double)bytes / (1 << 20));
        mhsa_bench_counter(st, "attn_MiB",
                           8.0 * T * (double)T * sizeof(float) / (1 << 20));
    }
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

// ---- registration ---------------------------------------------------------

static void label_t(char *buf, size_t n, const char *what, int64_t t)
{
    snprintf(buf, n, "%s, %d thread%s", what, (int)t, t > 1 ? "s" : "");
}

void mhsa_bench_register_attention(void)
{
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    char label[128], what[96];

    // Whole-block forward: D=512, H=8; tiny shapes.
    static const int64_t fwd_shapes[][4] = {   // B, T, D, H
        { 1, 128, 512, 8 }, { 1, 512, 512, 8 }, { 1, 2048, 512, 8 },
        { 4, 512, 512, 8 }, { 8, 12, 32, 4 },   { 8, 32, 64, 4 },
    };
    for (size_t s = 0; s < sizeof fwd_shapes / sizeof fwd_shapes[0]; s++)
        for (int c = 0; c < ntc; c++) {
            const int64_t *a = fwd_shapes[s];
            int64_t args[5] = { a[0], a[1], a[2], a[3], tc[c] };
            snprintf(what, sizeof what, "forward B=%d T=%d D=%d H=%d",
                     (int)a[0], (int)a[1], (int)a[2], (int)a[3]);
            label_t(label, sizeof label, what, tc[c]);
            int tiny = a[0] == 8 && a[1] == 12 && tc[c] == 1;
            mhsa_bench_headline h = {
                label, "GFLOP", "frac_peak",
                tiny ? MHSA_GOAL_US_MAX : MHSA_GOAL_NONE, 15.0, NULL };
            mhsa_bench_add_headline(&h, "forward", bm_forward, NULL, 5,
                                    args, shape_names);
        }

    // Forward + backward.
    static const int64_t fb_shapes[][4] = {
        { 8, 128, 256, 8 }, { 8, 12, 32, 4 },
    };
    for (size_t s = 0; s < sizeof fb_shapes / sizeof fb_shapes[0]; s++)
        for (int c = 0; c < ntc; c++) {
            const int64_t *a = fb_shapes[s];
            int64_t args[5] = { a[0], a[1], a[2], a[3], tc[c] };
            snprintf(what, sizeof what, "fwd+bwd B=%d T=%d D=%d H=%d",
                     (int)a[0], (int)a[1], (int)a[2], (int)a[3]);
            label_t(label, sizeof label, what, tc[c]);
            mhsa_bench_headline h = { label, "GFLOP", "frac_peak",
                                      MHSA_GOAL_NONE, 0.0, NULL };
            if (tc[c] == 1) {
                h.goal = s == 0 ? MHSA_GOAL_FRAC_MIN : MHSA_GOAL_US_MAX;
                h.target = s == 0 ? 0.75 : 50.0;
            }
            mhsa_bench_add_headline(&h, "fwd_bwd", bm_fwd_bwd, NULL, 5,
                                    args, shape_names);
        }

    // The causal attention core, fused and naive.
    static const int64_t core_shapes[][4] = {   // B, H, dh, T
        { 1, 8, 64, 512 }, { 1, 8, 64, 2048 },
    };
    char ref[128];
    for (size_t s = 0; s < sizeof core_shapes / sizeof core_shapes[0]; s++)
        for (int naive = 0; naive <= 1; naive++)
            for (int c = 0; c < ntc; c++) {
                const int64_t *a = core_shapes[s];
                int64_t args[5] = { a[0], a[1], a[2], a[3], tc[c] };
                snprintf(what, sizeof what, "attention %s H=8 dh=64 T=%d",
                         naive ? "naive" : "fused", (int)a[3]);
                label_t(label, sizeof label, what, tc[c]);
                mhsa_bench_headline h = { label, "GFLOP", "frac_peak",
                                          MHSA_GOAL_NONE, 0.0, NULL };
                if (!naive && tc[c] == 1) {
                    h.goal = MHSA_GOAL_FRAC_MIN;
                    h.target = 0.60;
                    snprintf(ref, sizeof ref, "%s", label);
                } else if (!naive) {
                    h.goal = MHSA_GOAL_SPEEDUP_MIN;
                    h.target = 1.9;
                    h.ref = ref;
                }
                mhsa_bench_add_headline(&h, naive ? "attention/naive"
                                                  : "attention/fused",
                                        naive ? bm_attn_naive
                                              : bm_attn_fused,
                                        NULL, 5, args, core_names);
            }

    static const char *const ws_names[] = { "T" };
    static const int64_t ws_t[] = { 2048, 8192 };
    for (size_t i = 0; i < sizeof ws_t / sizeof ws_t[0]; i++)
        mhsa_bench_add("memory/workspace_D512_H8_B1", bm_workspace_bytes,
                       NULL, 1, &ws_t[i], ws_names);
}
