// bench_step.c — one token through a stack of blocks at its bytes (small
// problems, 16-bit weights), group "decode/step", and the 16-bit-weight
// prefill beside F32 ("decode/prefill16").
//
// decode/step: mhsa_forward_cached (t_new = 1) through `blocks` blocks of
// one shape in turn, each with its own F32 cache holding L - 1 positions,
// so the step attends over L keys: D576 H9 Hkv3 (SmolLM2-135M's attention,
// RoPE, no bias) through 30 blocks, and D2048 H32 Hkv8 through 2 (42 MB of
// F32 weights a block). Every step reads each block's weights once and its
// cache once, so the stack's bytes (weights in their stored type plus K
// and V) come from beyond L2 (L3 or DRAM) whatever the dtype: they are
// printed beside the time (bytes_per_blk), with the read bandwidth of the
// same working set at the same thread count measured in this run
// (bench_roofline.c) and the time that bandwidth allows (lim_us_blk).
// frac_bw = bytes / time / bandwidth: 1.0 is a step at the speed of its
// bytes (the target "<= 1.1 of its bytes" is frac_bw >= 0.91). The
// bandwidth is the best of 100 short reads; frac_bw_med is the same
// against their median (bw_med_GB/s), the like-for-like limit for the
// median step on a machine whose neighbours share the memory, and
// frac_bw_pass against whole passes over a buffer of the stack's size
// (bw_pass_GB/s), the speed a sustained stream of those bytes gets.
//
// Side-by-side rows after the summary: 16-bit over F32 (target 0.55, the
// 16-bit weights'), 2 threads over 1 (target 1/1.5, the small problems'),
// prefill 16-bit over F32 (target 1.05). The caches stay F32, so the bytes
// themselves shrink less than half: 2.56 / 4.33 MB = 0.59 a block at D576
// (786 KB of K and V beside 3.5 MB of F32 weights), 23.1 / 44.0 MB = 0.52 at
// D2048; compare the 16-bit ratios with those.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/objects.h"   // the cache's lengths, set back per step
#include "bench_util.h"
#include "shim.h"

enum { MAX_BLOCKS = 30 };

typedef struct step_fixture {
    int D, H, Hkv, L, blocks, wdt;
    mhsa_block *blk[MAX_BLOCKS];
    mhsa_workspace *ws[MAX_BLOCKS];
    mhsa_kv_cache *cache[MAX_BLOCKS];
    float *x, *y;
} step_fixture;

static step_fixture sf;

static void step_free(void)
{
    for (int i = 0; i < MAX_BLOCKS; i++) {
        mhsa_kv_cache_destroy(sf.cache[i]);
        mhsa_workspace_destroy(sf.ws[i]);
        mhsa_block_destroy(sf.blk[i]);
    }
    free(sf.x);
    free(sf.y);
    memset(&sf, 0, sizeof sf);
}

// Fills a cache with L - 1 positions through the library's own prefill
// (the values do not change the time of a step; this makes them real).
static int cache_prefill(mhsa_block *blk, mhsa_workspace *ws,
                         mhsa_kv_cache *c, int D, int n, unsigned seed)
{
    float *x = mhsa_bench_floats((size_t)n * D);
    float *y = mhsa_bench_floats((size_t)n * D);
    int ok = x && y;
    if (ok) {
        mhsa_bench_fill(x, (size_t)n * D, seed);
        ok = mhsa_forward_cached(blk, ws, c, x, 1, n, y) == MHSA_OK;
    }
    free(x);
    free(y);
    return ok;
}

static int step_get(mhsa_bench_state *st, int D, int H, int Hkv, int L,
                    int blocks, int wdt)
{
    if (sf.blk[0] && sf.D == D && sf.H == H && sf.Hkv == Hkv &&
        sf.L == L && sf.blocks == blocks && sf.wdt == wdt)
        return 1;
    step_free();
    mhsa_config cfg = { D, H, L, 1, 0 };
    cfg.n_kv_heads = Hkv;
    cfg.rope_dim = D / H;
    cfg.weight_dtype = wdt;
    if (!(sf.x = mhsa_bench_floats((size_t)D)) ||
        !(sf.y = mhsa_bench_floats((size_t)D)))
        goto fail;
    mhsa_bench_fill(sf.x, (size_t)D, 5);
    for (int i = 0; i < blocks; i++) {
        mhsa_kv_config kc = { 1, L, MHSA_F32 };
        if (mhsa_block_create(&cfg, &sf.blk[i]) != MHSA_OK ||
            mhsa_block_init_random(sf.blk[i], 100 + (uint64_t)i) != MHSA_OK ||
            mhsa_workspace_create(sf.blk[i], 1, &sf.ws[i]) != MHSA_OK ||
            mhsa_kv_cache_create_ex(sf.blk[i], &kc, &sf.cache[i]) !=
                MHSA_OK ||
            !cache_prefill(sf.blk[i], sf.ws[i], sf.cache[i], D, L - 1,
                           (unsigned)(200 + i)))
            goto fail;
    }
    sf.D = D;
    sf.H = H;
    sf.Hkv = Hkv;
    sf.L = L;
    sf.blocks = blocks;
    sf.wdt = wdt;
    return 1;
fail:
    mhsa_bench_skip(st, *mhsa_last_error() ? mhsa_last_error()
                                           : "out of memory");
    step_free();
    return 0;
}

static const char *const step_names[] = { "D", "H", "Hkv", "L", "blocks",
                                          "wdtype", "threads" };

// One token through every block: the caches are set back to L - 1
// positions before each block's step (an assignment), so every step
// appends position L - 1 and attends over L keys.
static void bm_step(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int D = (int)mhsa_bench_arg(st, 0), H = (int)mhsa_bench_arg(st, 1);
    int Hkv = (int)mhsa_bench_arg(st, 2), L = (int)mhsa_bench_arg(st, 3);
    int blocks = (int)mhsa_bench_arg(st, 4);
    int wdt = (int)mhsa_bench_arg(st, 5);
    int threads = (int)mhsa_bench_arg(st, 6);
    if (!step_get(st, D, H, Hkv, L, blocks, wdt))
        return;
    double wbytes = (double)mhsa_block_weight_bytes(sf.blk[0]);
    double kv = 2.0 * Hkv * (double)(D / H) * sizeof(float) * (double)L;
    double per_blk = wbytes + kv;
    double bw = mhsa_bench_read_gbs((size_t)(per_blk * blocks), threads);
    double bw_med =
        mhsa_bench_read_gbs_median((size_t)(per_blk * blocks), threads);
    double bw_pass =
        mhsa_bench_read_pass_gbs((size_t)(per_blk * blocks), threads);
    thread_scope ts = threads_begin(threads);
    mhsa_status s = MHSA_OK;
    while (mhsa_bench_keep_running(st)) {
        for (int i = 0; i < blocks; i++) {
            sf.cache[i]->len[0] = (size_t)L - 1;
            s |= mhsa_forward_cached(sf.blk[i], sf.ws[i], sf.cache[i], sf.x,
                                     1, 1, sf.y);
        }
        mhsa_bench_use(sf.y);
    }
    threads_end(ts);
    if (s != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
        return;
    }
    mhsa_bench_counter(st, "bytes_per_blk", per_blk);
    mhsa_bench_counter(st, "bw_GB/s", bw);
    mhsa_bench_counter(st, "lim_us_blk", bw > 0.0 ? per_blk * 1e-3 / bw
                                                   : 0.0);
    mhsa_bench_rate(st, "GB", per_blk * blocks * 1e-9);
    if (bw > 0.0)
        mhsa_bench_rate(st, "frac_bw", per_blk * blocks * 1e-9 / bw);
    // Against the median trial: on a shared host the best of 100 short
    // reads runs well above their median (docs/performance.md, "AMD EPYC
    // Zen 4", "Small problems and the one-token step"), so frac_bw alone
    // understates a step that streams at the read's usual speed.
    if (bw_med > 0.0) {
        mhsa_bench_counter(st, "bw_med_GB/s", bw_med);
        mhsa_bench_rate(st, "frac_bw_med", per_blk * blocks * 1e-9 / bw_med);
    }
    // Against whole passes over the stack's bytes: what one sustained stream
    // of that size reads at (on a shared VM well under the best short read:
    // the same section), so that a step's frac_bw below 0.9 can be told apart
    // from a machine whose memory only gives that much to a long stream.
    if (bw_pass > 0.0) {
        mhsa_bench_counter(st, "bw_pass_GB/s", bw_pass);
        mhsa_bench_rate(st, "frac_bw_pass",
                        per_blk * blocks * 1e-9 / bw_pass);
    }
}

// ---- prefill T512 D512 H8: 16-bit weights against F32 -----------------------

static const char *const pf_names[] = { "T", "D", "H", "wdtype", "threads" };

static void bm_prefill(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int T = (int)mhsa_bench_arg(st, 0), D = (int)mhsa_bench_arg(st, 1);
    int H = (int)mhsa_bench_arg(st, 2), wdt = (int)mhsa_bench_arg(st, 3);
    int threads = (int)mhsa_bench_arg(st, 4);
    mhsa_config cfg = { D, H, T, 1, 1 };
    cfg.weight_dtype = wdt;
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    float *x = mhsa_bench_floats((size_t)T * D);
    float *y = mhsa_bench_floats((size_t)T * D);
    if (!x || !y || mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_block_init_random(blk, 7) != MHSA_OK ||
        mhsa_workspace_create(blk, 1, &ws) != MHSA_OK) {
        mhsa_bench_skip(st, *mhsa_last_error() ? mhsa_last_error()
                                               : "out of memory");
        goto out;
    }
    mhsa_bench_fill(x, (size_t)T * D, 3);
    thread_scope ts = threads_begin(threads);
    mhsa_status s = mhsa_forward(blk, ws, x, 1, T, NULL, y, NULL);
    while (s == MHSA_OK && mhsa_bench_keep_running(st)) {
        mhsa_forward(blk, ws, x, 1, T, NULL, y, NULL);
        mhsa_bench_use(y);
    }
    threads_end(ts);
    if (s != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
        goto out;
    }
    // 4 projections 2 T D^2 each, scores and context 2 T^2 D each (causal:
    // half of them).
    double t = T, d = D;
    double gf = (8.0 * t * d * d + 2.0 * t * t * d) * 1e-9;
    double peak = mhsa_bench_peak_gflops(mhsa_active_isa(), threads);
    mhsa_bench_rate(st, "GFLOP", gf);
    if (peak > 0.0)
        mhsa_bench_rate(st, "frac_peak", gf / peak);
out:
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x);
    free(y);
}

static void bm_done(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    step_free();
    while (mhsa_bench_keep_running(st)) {
    }
}

// ---- registration -------------------------------------------------------------

static const char *const wname[] = { "f32", "f16", "bf16" };

typedef struct step_shape { int D, H, Hkv, L, blocks; } step_shape;

static const step_shape step_shapes[] = {
    { 576, 9, 3, 512, 30 },    // SmolLM2-135M's attention, 30 layers
    { 2048, 32, 8, 512, 2 },   // 42 MB of F32 weights a block
};

static void step_label(char *buf, size_t n, const step_shape *s, int wdt,
                       int64_t t)
{
    snprintf(buf, n, "step D%d H%d Hkv%d L%d x%d blk, w %s, %d thr", s->D,
             s->H, s->Hkv, s->L, s->blocks, wname[wdt], (int)t);
}

static void prefill_label(char *buf, size_t n, int wdt, int64_t t)
{
    snprintf(buf, n, "prefill T512 D512 H8, w %s, %d thr", wname[wdt],
             (int)t);
}

void mhsa_bench_register_step(void)
{
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    char label[160], num[160], den[160];
    for (size_t i = 0; i < sizeof step_shapes / sizeof step_shapes[0]; i++) {
        const step_shape *s = &step_shapes[i];
        for (int wdt = MHSA_F32; wdt <= MHSA_BF16; wdt++)
            for (int c = 0; c < ntc; c++) {
                int64_t args[7] = { s->D, s->H, s->Hkv, s->L, s->blocks, wdt,
                                    tc[c] };
                step_label(label, sizeof label, s, wdt, tc[c]);
                mhsa_bench_headline h = { label, "GB", "frac_bw",
                                          MHSA_GOAL_NONE, 0.0, NULL, NULL,
                                          NULL };
                if (tc[c] == 1) {   // small problems: <= 1.1 of its bytes
                    h.goal = MHSA_GOAL_FRAC_MIN;
                    h.target = 1.0 / 1.1;
                }
                mhsa_bench_add_headline(&h, "decode/step", bm_step, NULL, 7,
                                        args, step_names);
            }
    }
    mhsa_bench_add("decode/step_free", bm_done, NULL, 0, NULL, NULL);
    for (int wdt = MHSA_F32; wdt <= MHSA_BF16; wdt++)
        for (int c = 0; c < ntc; c++) {
            int64_t args[5] = { 512, 512, 8, wdt, tc[c] };
            prefill_label(label, sizeof label, wdt, tc[c]);
            mhsa_bench_headline h = { label, "GFLOP", "frac_peak",
                                      MHSA_GOAL_NONE, 0.0, NULL, NULL, NULL };
            mhsa_bench_add_headline(&h, "decode/prefill16", bm_prefill, NULL,
                                    5, args, pf_names);
        }

    // Side by side (median times): 16-bit over F32, 2 threads over 1.
    for (size_t i = 0; i < sizeof step_shapes / sizeof step_shapes[0]; i++) {
        const step_shape *s = &step_shapes[i];
        for (int c = 0; c < ntc; c++)
            for (int wdt = MHSA_F16; wdt <= MHSA_BF16; wdt++) {
                step_label(num, sizeof num, s, wdt, tc[c]);
                step_label(den, sizeof den, s, MHSA_F32, tc[c]);
                snprintf(label, sizeof label, "step D%d, %d thr: %s / f32",
                         s->D, (int)tc[c], wname[wdt]);
                mhsa_bench_add_ratio(label, num, den, 0.55);
            }
        if (ntc > 1)
            for (int wdt = MHSA_F32; wdt <= MHSA_BF16; wdt++) {
                step_label(num, sizeof num, s, wdt, tc[1]);
                step_label(den, sizeof den, s, wdt, 1);
                snprintf(label, sizeof label,
                         "step D%d w %s: %d thr / 1 thr", s->D, wname[wdt],
                         (int)tc[1]);
                mhsa_bench_add_ratio(label, num, den, 1.0 / 1.5);
            }
    }
    for (int c = 0; c < ntc; c++)
        for (int wdt = MHSA_F16; wdt <= MHSA_BF16; wdt++) {
            prefill_label(num, sizeof num, wdt, tc[c]);
            prefill_label(den, sizeof den, MHSA_F32, tc[c]);
            snprintf(label, sizeof label, "prefill T512 D512, %d thr: %s / f32",
                     (int)tc[c], wname[wdt]);
            mhsa_bench_add_ratio(label, num, den, 1.05);
        }
}
