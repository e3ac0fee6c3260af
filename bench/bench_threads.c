// bench_threads.c — 1 thread against 2 on the same call, interleaved (issue
// 22: "every row at 2 threads never slower than at 1"), group "threads".
//
// Every iteration times the call a few times at 1 thread and a few times
// at 2, in alternating order, so both counts see the same machine: on a
// shared or busy host a 1-thread row and a 2-thread row measured minutes
// apart compare the load, not the library. Counters: us_1t and us_2t, the
// medians per call, us_1t_min and us_2t_min (noise only adds time, so the
// minima are the machine's best), and speedup = us_1t / us_2t (medians):
// >= 1 means 2 threads are not slower.
//
// Rows: the tiny block (B8 T12 D32 H4) forward and forward+backward, the
// GPT's decoding step (mhsa_train.h, L2 D64 and L4 D128, 128-token cache),
// and the one-token step through 30 blocks D576 H9 Hkv3 (SmolLM2-135M's
// attention, RoPE, cache 512) in each weight type.
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/objects.h"   // the caches' lengths, set back per step
#include "bench_util.h"
#include "mhsa_train.h"
#include "shim.h"

enum { MAX_SAMPLES = 4096, STEP_BLOCKS = 30 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*call_fn)(void *ctx);

// Samples of one call at 1 and 2 threads, interleaved.
typedef struct samples {
    double *t[2];
    int n[2];
} samples;

// One iteration: `reps` timed calls at each count, the order alternating
// with the iteration, after one untimed call at each count.
static void one_round(samples *s, int round, int reps, call_fn f, void *ctx)
{
    for (int q = 0; q < 2; q++) {
        int th = ((round + q) & 1) + 1;
        omp_set_num_threads(th);
        f(ctx);
        for (int r = 0; r < reps && s->n[th - 1] < MAX_SAMPLES; r++) {
            double t0 = now_s();
            f(ctx);
            s->t[th - 1][s->n[th - 1]++] = now_s() - t0;
        }
    }
}

static void run(mhsa_bench_state *st, int reps, call_fn f, void *ctx)
{
    samples s = { { malloc(MAX_SAMPLES * sizeof(double)),
                    malloc(MAX_SAMPLES * sizeof(double)) }, { 0, 0 } };
    if (!s.t[0] || !s.t[1]) {
        mhsa_bench_skip(st, "out of memory");
        goto out;
    }
    thread_scope ts = threads_begin(1);
    int round = 0;
    while (mhsa_bench_keep_running(st))
        one_round(&s, round++, reps, f, ctx);
    threads_end(ts);
    for (int i = 0; i < 2; i++)
        qsort(s.t[i], (size_t)s.n[i], sizeof(double), by_value);
    if (s.n[0] && s.n[1]) {
        double m1 = s.t[0][s.n[0] / 2] * 1e6, m2 = s.t[1][s.n[1] / 2] * 1e6;
        mhsa_bench_counter(st, "us_1t", m1);
        mhsa_bench_counter(st, "us_2t", m2);
        mhsa_bench_counter(st, "us_1t_min", s.t[0][0] * 1e6);
        mhsa_bench_counter(st, "us_2t_min", s.t[1][0] * 1e6);
        mhsa_bench_counter(st, "speedup", m1 / m2);
    }
out:
    free(s.t[0]);
    free(s.t[1]);
}

// ---- the tiny block ---------------------------------------------------------

typedef struct block_call {
    mhsa_block *blk;
    mhsa_workspace *ws;
    mhsa_grads *g;
    float *x, *y, *dx;
    int B, T, bwd;
} block_call;

static void block_run(void *p)
{
    block_call *c = p;
    mhsa_forward(c->blk, c->ws, c->x, c->B, c->T, NULL, c->y, NULL);
    if (c->bwd)
        mhsa_backward(c->blk, c->ws, c->y, c->dx, c->g);
}

static void bm_block(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int bwd = (int)mhsa_bench_arg(st, 0);
    block_call c = { NULL, NULL, NULL, NULL, NULL, NULL, 8, 12, bwd };
    mhsa_config cfg = { 32, 4, 12, 1, 1 };
    size_t n = 8 * 12 * 32;
    // The workspace is made at 2 threads: it holds 2 threads' views.
    thread_scope ts = threads_begin(2);
    c.x = mhsa_bench_floats(n);
    c.y = mhsa_bench_floats(n);
    c.dx = mhsa_bench_floats(n);
    if (c.x && c.y && c.dx && mhsa_block_create(&cfg, &c.blk) == MHSA_OK &&
        mhsa_block_init_random(c.blk, 42) == MHSA_OK &&
        mhsa_workspace_create(c.blk, 8, &c.ws) == MHSA_OK &&
        mhsa_grads_create(c.blk, &c.g) == MHSA_OK) {
        mhsa_bench_fill(c.x, n, 31);
        run(st, 50, block_run, &c);
    } else {
        mhsa_bench_skip(st, c.x ? mhsa_last_error() : "out of memory");
    }
    threads_end(ts);
    mhsa_grads_destroy(c.g);
    mhsa_workspace_destroy(c.ws);
    mhsa_block_destroy(c.blk);
    free(c.x);
    free(c.y);
    free(c.dx);
}

// ---- the GPT's decoding step ------------------------------------------------

typedef struct gpt_call {
    mhsa_gpt *g;
    mhsa_gpt_cache *c;
    int T;
    int32_t tok[128];
    float logits[256];
} gpt_call;

// One step; a full cache is refilled with T / 2 tokens first (inside the
// timed call, in one sample of every T / 2, so the medians leave it out).
static void gpt_run(void *p)
{
    gpt_call *c = p;
    if (mhsa_gpt_cache_len(c->c) >= c->T) {
        mhsa_gpt_cache_reset(c->c);
        mhsa_gpt_forward_cached(c->g, c->c, c->tok, c->T / 2, c->logits);
    }
    mhsa_gpt_forward_cached(c->g, c->c, c->tok, 1, c->logits);
}

static void bm_gpt(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    gpt_call *c = calloc(1, sizeof *c);
    mhsa_gpt_config cfg = { 0 };
    cfg.vocab = 256;
    cfg.n_layer = (int)mhsa_bench_arg(st, 0);
    cfg.n_embd = (int)mhsa_bench_arg(st, 1);
    cfg.n_head = 4;
    cfg.block_size = 128;
    cfg.max_batch = 1;
    thread_scope ts = threads_begin(2);
    if (c && mhsa_gpt_create(&cfg, &c->g) == MHSA_OK &&
        mhsa_gpt_init_random(c->g, 1) == MHSA_OK &&
        mhsa_gpt_cache_create(c->g, 128, &c->c) == MHSA_OK) {
        c->T = 128;
        for (int i = 0; i < 128; i++)
            c->tok[i] = (i * 37) % 256;
        run(st, 50, gpt_run, c);
    } else {
        mhsa_bench_skip(st, c ? mhsa_last_error() : "out of memory");
    }
    threads_end(ts);
    if (c) {
        mhsa_gpt_cache_destroy(c->c);
        mhsa_gpt_destroy(c->g);
    }
    free(c);
}

// ---- one token through 30 blocks D576 -------------------------------------

typedef struct step_call {
    mhsa_block *blk[STEP_BLOCKS];
    mhsa_workspace *ws[STEP_BLOCKS];
    mhsa_kv_cache *kv[STEP_BLOCKS];
    float *x, *y;
} step_call;

enum { SD = 576, SH = 9, SHKV = 3, SL = 512 };

static void step_run(void *p)
{
    step_call *c = p;
    for (int i = 0; i < STEP_BLOCKS; i++) {
        c->kv[i]->len[0] = SL - 1;
        mhsa_forward_cached(c->blk[i], c->ws[i], c->kv[i], c->x, 1, 1, c->y);
    }
}

static void bm_step(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    step_call *c = calloc(1, sizeof *c);
    mhsa_config cfg = { SD, SH, SL, 1, 0 };
    cfg.n_kv_heads = SHKV;
    cfg.rope_dim = SD / SH;
    cfg.weight_dtype = (int)mhsa_bench_arg(st, 0);
    thread_scope ts = threads_begin(2);
    int ok = c && (c->x = mhsa_bench_floats((size_t)SL * SD)) &&
             (c->y = mhsa_bench_floats((size_t)SL * SD));
    if (ok)
        mhsa_bench_fill(c->x, (size_t)SL * SD, 5);
    for (int i = 0; ok && i < STEP_BLOCKS; i++) {
        mhsa_kv_config kc = { 1, SL, MHSA_F32 };
        ok = mhsa_block_create(&cfg, &c->blk[i]) == MHSA_OK &&
             mhsa_block_init_random(c->blk[i], 100 + (uint64_t)i) ==
                 MHSA_OK &&
             mhsa_workspace_create(c->blk[i], 1, &c->ws[i]) == MHSA_OK &&
             mhsa_kv_cache_create_ex(c->blk[i], &kc, &c->kv[i]) == MHSA_OK &&
             mhsa_forward_cached(c->blk[i], c->ws[i], c->kv[i], c->x, 1,
                                 SL - 1, c->y) == MHSA_OK;
    }
    if (ok)
        run(st, 3, step_run, c);
    else
        mhsa_bench_skip(st, c ? mhsa_last_error() : "out of memory");
    threads_end(ts);
    for (int i = 0; c && i < STEP_BLOCKS; i++) {
        mhsa_kv_cache_destroy(c->kv[i]);
        mhsa_workspace_destroy(c->ws[i]);
        mhsa_block_destroy(c->blk[i]);
    }
    if (c) {
        free(c->x);
        free(c->y);
    }
    free(c);
}

void mhsa_bench_register_threads(void)
{
    if (omp_get_max_threads() < 2)
        return;   // nothing to compare
    static const char *const bwd_names[] = { "bwd" };
    static const char *const gpt_names[] = { "L", "D" };
    static const char *const step_names[] = { "wdtype" };
    for (int64_t bwd = 0; bwd <= 1; bwd++)
        mhsa_bench_add("threads/tiny_B8_T12_D32_H4", bm_block, NULL, 1, &bwd,
                       bwd_names);
    static const int64_t gpt_shapes[][2] = { { 2, 64 }, { 4, 128 } };
    for (int i = 0; i < 2; i++)
        mhsa_bench_add("threads/gpt_decode_step", bm_gpt, NULL, 2,
                       gpt_shapes[i], gpt_names);
    for (int64_t w = MHSA_F32; w <= MHSA_BF16; w++)
        mhsa_bench_add("threads/step_D576_H9_Hkv3_L512_x30", bm_step, NULL, 1,
                       &w, step_names);
}
