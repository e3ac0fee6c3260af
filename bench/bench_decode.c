// bench_decode.c — one-token decode against a KV cache: the attention
// over the cache alone (decode/core, what mhsa_forward_cached runs between
// the projections) and the whole block step (decode/block,
// mhsa_forward_cached_ex), for every cache dtype, a grouped-query cache,
// and a ragged batch whose sequences hold very different lengths.
//
// Every case reports GB/s of the K and V bytes the step must read as they
// are stored (2 * Hkv * dh * sizeof(dtype) per cached position, summed
// over the sequences; decode/block adds the weights), and that as a
// fraction of the read bandwidth measured at the same working set and
// thread count in the same run (bench_roofline.c).
//
// Arguments: B, H, Hkv, dh, L, dtype (mhsa_dtype), lens, threads, where
// lens says how long each sequence is:
//   0  every sequence holds L positions;
//   1  ragged: lengths spread geometrically from 128 to L (B = 8: 128,
//      232, 420, 761, 1378, 2496, 4521, 8192), in a fixed mixed order, as
//      the slots of a server hold them;
//   2  uniform with the ragged total: every sequence the ragged mean, so
//      the same bytes in equal pieces.
// A timed step appends the position after each sequence's cached ones:
// the cache lengths are set back before every call (an assignment).
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attend.h"
#include "bench_util.h"
#include "api/objects.h"
#include "shim.h"

enum { MAX_B = 16, RAGGED_MIN = 128 };

// ---- one block, workspace and cache, kept while consecutive cases share
// the shape (the cache is made again when only its dtype changes) ---------

typedef struct decode_fixture {
    int B, H, Hkv, dh, L;
    mhsa_dtype dt;
    mhsa_block *blk;
    mhsa_workspace *ws;
    mhsa_kv_cache *cache;
    float *x, *y;    // (B, 1, D)
} decode_fixture;

static decode_fixture fx;

static void fixture_free(void)
{
    mhsa_kv_cache_destroy(fx.cache);
    mhsa_workspace_destroy(fx.ws);
    mhsa_block_destroy(fx.blk);
    free(fx.x);
    free(fx.y);
    memset(&fx, 0, sizeof fx);
}

// Random K and V written straight into the cache in its storage type (the
// decode reads them the same whatever their values), converted by the
// active table, a slice at a time.
static int cache_fill(void)
{
    const mhsa_kernels *k = mhsa__kernels();
    size_t es = mhsa_dtype_size(fx.dt);
    size_t n = (size_t)fx.B * fx.Hkv * fx.L * fx.dh, slice = (size_t)1 << 20;
    float *buf = mhsa_bench_floats(slice);
    if (!buf)
        return 0;
    for (int which = 0; which < 2; which++) {
        char *dst = which ? fx.cache->v : fx.cache->k;
        for (size_t off = 0, s = 0; off < n; off += slice, s++) {
            size_t len = n - off < slice ? n - off : slice;
            mhsa_bench_fill(buf, len, (unsigned)(31 + 2 * s + which));
            k->cvt_from_f32(len, buf, dst + off * es, fx.dt);
        }
    }
    free(buf);
    return 1;
}

static int fixture_get(mhsa_bench_state *st, int B, int H, int Hkv, int dh,
                       int L, mhsa_dtype dt)
{
    int same = fx.blk && fx.B == B && fx.H == H && fx.Hkv == Hkv &&
               fx.dh == dh && fx.L == L;
    if (same && fx.cache && fx.dt == dt)
        return 1;
    if (!same) {
        fixture_free();
        mhsa_config cfg = { H * dh, H, L, 1, 1 };
        cfg.n_kv_heads = Hkv;
        size_t n = (size_t)B * H * dh;
        if (mhsa_block_create(&cfg, &fx.blk) != MHSA_OK ||
            mhsa_block_init_random(fx.blk, 42) != MHSA_OK ||
            mhsa_workspace_create(fx.blk, B, &fx.ws) != MHSA_OK ||
            !(fx.x = mhsa_bench_floats(n)) || !(fx.y = mhsa_bench_floats(n)))
            goto fail;
        fx.B = B;
        fx.H = H;
        fx.Hkv = Hkv;
        fx.dh = dh;
        fx.L = L;
        mhsa_bench_fill(fx.x, n, 11);
    }
    mhsa_kv_cache_destroy(fx.cache);
    fx.cache = NULL;
    mhsa_kv_config kc = { B, L, dt };
    if (mhsa_kv_cache_create_ex(fx.blk, &kc, &fx.cache) != MHSA_OK)
        goto fail;
    fx.dt = dt;
    if (!cache_fill())
        goto fail;
    return 1;
fail:
    mhsa_bench_skip(st, *mhsa_last_error() ? mhsa_last_error()
                                           : "out of memory");
    fixture_free();
    return 0;
}

// Cached positions per sequence (see the file's top) and their sum; the
// step attends over len[b] keys.
static size_t seq_lengths(int B, int L, int kind, size_t len[MAX_B])
{
    size_t total = 0;
    for (int i = 0; i < B; i++) {
        double g = B > 1 && L > RAGGED_MIN
                   ? RAGGED_MIN * pow((double)L / RAGGED_MIN,
                                      (double)i / (B - 1))
                   : L;
        // Mixed order: sequence i*5 mod B gets the i-th shortest (5 is
        // coprime to the B used here; otherwise in order).
        int at = B % 5 ? (i * 5) % B : i;
        len[at] = (size_t)lround(g);
        total += len[at];
    }
    if (kind == 0) {
        total = 0;
        for (int i = 0; i < B; i++)
            total += len[i] = (size_t)L;
    } else if (kind == 2) {
        size_t mean = (total + (size_t)B / 2) / (size_t)B;
        total = 0;
        for (int i = 0; i < B; i++)
            total += len[i] = mean;
    }
    return total;
}

typedef struct case_args {
    int B, H, Hkv, dh, L, lens, threads;
    mhsa_dtype dt;
} case_args;

static case_args args_of(const mhsa_bench_state *st)
{
    case_args a = {
        (int)mhsa_bench_arg(st, 0), (int)mhsa_bench_arg(st, 1),
        (int)mhsa_bench_arg(st, 2), (int)mhsa_bench_arg(st, 3),
        (int)mhsa_bench_arg(st, 4), (int)mhsa_bench_arg(st, 6),
        (int)mhsa_bench_arg(st, 7), (mhsa_dtype)mhsa_bench_arg(st, 5),
    };
    return a;
}

// The limit of a case's working set at its thread count, and how much
// the limit itself grows from 1 thread to that count.
static double limit_gbs(mhsa_bench_state *st, double bytes, int threads)
{
    double bw = mhsa_bench_read_gbs((size_t)bytes, threads);
    double bw1 = threads > 1 ? mhsa_bench_read_gbs((size_t)bytes, 1) : bw;
    mhsa_bench_counter(st, "bw_limit_GB/s", bw);
    mhsa_bench_counter(st, "lim_speedup", bw / bw1);
    return bw;
}

// ---- the cases ---------------------------------------------------------------

// The attention over the cache: one query row per head and sequence
// against its len[b] keys, as mhsa_forward_cached_ex runs it.
static void bm_core(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    case_args a = args_of(st);
    if (!fixture_get(st, a.B, a.H, a.Hkv, a.dh, a.L, a.dt))
        return;
    size_t len[MAX_B], kv_len[MAX_B];
    size_t total = seq_lengths(a.B, a.L, a.lens, len);
    for (int b = 0; b < a.B; b++)
        kv_len[b] = len[b] - 1;   // cached before the new row
    double kv = 2.0 * a.Hkv * a.dh * (double)mhsa_dtype_size(a.dt) *
                (double)total;
    double bw = limit_gbs(st, kv, a.threads);
    size_t nq = (size_t)a.B * a.H * a.dh;
    mhsa_bench_fill(fx.ws->q, nq, 33);
    float scale = 1.0f / sqrtf((float)a.dh);
    for (size_t i = 0; i < nq; i++)
        fx.ws->q[i] *= scale;
    attn_job j = {
        .batch = (size_t)a.B, .H = (size_t)a.H, .Hkv = (size_t)a.Hkv,
        .dh = (size_t)a.dh, .tq = 1, .kv_t = (size_t)a.L, .causal = 1,
        .kv_len = kv_len, .q = fx.ws->q, .k = fx.cache->k,
        .v = fx.cache->v, .kv_dtype = a.dt, .ctx = fx.ws->ctx,
    };
    const mhsa_kernels *k = mhsa__kernels();
    thread_scope ts = threads_begin(a.threads);
    int64_t batch = kv < 4e6 ? 8 : 1;
    while (mhsa_bench_keep_running_batch(st, batch)) {
        for (int64_t i = 0; i < batch; i++)
            mhsa__attention(k, &fx.ws->attn, &j);
        mhsa_bench_use(j.ctx);
    }
    threads_end(ts);
    mhsa_bench_rate(st, "KV_GB", kv * 1e-9);
    mhsa_bench_rate(st, "frac_bw", kv * 1e-9 / bw);
}

// The whole block: mhsa_forward_cached_ex with one new row per sequence
// (projections as gemv or a small GEMM, then the decode core).
static void bm_block(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    case_args a = args_of(st);
    if (!fixture_get(st, a.B, a.H, a.Hkv, a.dh, a.L, a.dt))
        return;
    size_t len[MAX_B];
    size_t total = seq_lengths(a.B, a.L, a.lens, len);
    double D = (double)a.H * a.dh;
    double kv = 2.0 * a.Hkv * a.dh * (double)mhsa_dtype_size(a.dt) *
                (double)total;
    double wts = ((double)fx.blk->nqkv + D) * D * sizeof(float);
    double bw = limit_gbs(st, kv + wts, a.threads);
    mhsa_cached_args ca = { fx.x, a.B, 1, NULL, fx.y };
    thread_scope ts = threads_begin(a.threads);
    mhsa_status s = MHSA_OK;
    while (mhsa_bench_keep_running(st)) {
        for (int b = 0; b < a.B; b++)
            fx.cache->len[b] = len[b] - 1;
        s = mhsa_forward_cached_ex(fx.blk, fx.ws, fx.cache, &ca);
        mhsa_bench_use(fx.y);
    }
    threads_end(ts);
    if (s != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
        return;
    }
    mhsa_bench_rate(st, "KV_GB", kv * 1e-9);
    mhsa_bench_rate(st, "GB", (kv + wts) * 1e-9);
    mhsa_bench_rate(st, "frac_bw", (kv + wts) * 1e-9 / bw);
}

// The last decode case frees the fixture: registered after all of them.
static void bm_done(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    fixture_free();
    while (mhsa_bench_keep_running(st)) {
    }
}

// ---- registration -------------------------------------------------------------

static const char *const dtype_name[] = { "f32", "f16", "bf16" };

typedef struct shape {
    int B, H, Hkv, dh, L, lens;
    int block;   // also a decode/block row
} shape;

static const shape shapes[] = {
    { 1, 8, 8, 64, 512, 0, 1 },      { 1, 8, 8, 64, 2048, 0, 1 },
    { 1, 8, 8, 64, 8192, 0, 1 },     { 1, 32, 32, 128, 512, 0, 1 },
    { 1, 32, 32, 128, 2048, 0, 1 },  { 1, 32, 32, 128, 8192, 0, 1 },
    { 1, 32, 8, 128, 8192, 0, 1 },   // GQA, a quarter the bytes
    { 8, 8, 8, 64, 8192, 1, 1 },     // ragged 128..8192
    { 8, 8, 8, 64, 8192, 2, 1 },     //   and uniform, the same bytes
};

// "decode core H=32 Hkv=8 dh=128 L=8192" and the like.
static void shape_name(char *buf, size_t n, const char *what,
                       const shape *s)
{
    char heads[32], lens[48];
    if (s->Hkv == s->H)
        snprintf(heads, sizeof heads, "H=%d", s->H);
    else
        snprintf(heads, sizeof heads, "H=%d Hkv=%d", s->H, s->Hkv);
    size_t len[MAX_B];
    size_t total = seq_lengths(s->B, s->L, s->lens, len);
    (void)total;
    if (s->lens == 1)
        snprintf(lens, sizeof lens, "B=%d L=%d..%d", s->B, RAGGED_MIN, s->L);
    else if (s->lens == 2)
        snprintf(lens, sizeof lens, "B=%d L=%zu each", s->B, len[0]);
    else if (s->B > 1)
        snprintf(lens, sizeof lens, "B=%d L=%d", s->B, s->L);
    else
        snprintf(lens, sizeof lens, "L=%d", s->L);
    snprintf(buf, n, "decode %s %s dh=%d %s", what, heads, s->dh, lens);
}

static void with_threads(char *buf, size_t n, const char *what, int64_t t)
{
    snprintf(buf, n, "%.160s, %d thread%s", what, (int)t,
             t > 1 ? "s" : "");
}

// The targets (1 thread unless said): the kernel targets for the F32
// cache, the 16-bit caches' for F16 and BF16, the ragged batches' for the
// ragged step.
static void goal_of(const shape *s, int dt, int64_t t, int64_t t1,
                    mhsa_bench_headline *h, const char *ref)
{
    int dram = s->H == 32 && s->Hkv == 32 && s->L == 8192;
    int l3 = s->H == 8 && s->L == 2048 && s->B == 1;
    int ragged = s->lens == 1;
    (void)dt;
    if (t == t1) {
        if (dram) {
            h->goal = MHSA_GOAL_FRAC_MIN;
            h->target = 0.90;
        } else if (l3 || ragged) {
            h->goal = MHSA_GOAL_FRAC_MIN;
            h->target = 0.80;
        }
    } else if (dram || ragged) {
        h->goal = MHSA_GOAL_SPEEDUP_MIN;
        h->target = 1.8;
        h->ref = ref;
    }
}

void mhsa_bench_register_decode(void)
{
    static const char *const names[] = { "B", "H", "Hkv", "dh", "L",
                                         "dtype", "lens", "threads" };
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    // Labels must outlive registration (the shim copies them, but the
    // ratio rows below name rows by label, built here again).
    char what[128], pivot[192], label[192], ref[192], num[192], den[192];
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        for (int dt = MHSA_F32; dt <= MHSA_BF16; dt++)
            for (int whole = 0; whole <= s->block; whole++)
                for (int c = 0; c < ntc; c++) {
                    int64_t args[8] = { s->B, s->H, s->Hkv, s->dh, s->L, dt,
                                        s->lens, tc[c] };
                    shape_name(what, sizeof what, whole ? "block" : "core",
                               s);
                    with_threads(pivot, sizeof pivot, what, tc[c]);
                    char w2[192];
                    snprintf(w2, sizeof w2, "%.120s %s", what, dtype_name[dt]);
                    with_threads(label, sizeof label, w2, tc[c]);
                    if (c == 0)
                        snprintf(ref, sizeof ref, "%s", label);
                    mhsa_bench_headline h = {
                        label, whole ? "GB" : "KV_GB", "frac_bw",
                        MHSA_GOAL_NONE, 0.0, NULL, pivot, dtype_name[dt] };
                    if (!whole)
                        goal_of(s, dt, tc[c], tc[0], &h, ref);
                    mhsa_bench_add_headline(&h, whole ? "decode/block"
                                                      : "decode/core",
                                            whole ? bm_block : bm_core,
                                            NULL, 8, args, names);
                }
    }
    mhsa_bench_add("decode/free_fixture", bm_done, NULL, 0, NULL, NULL);

    // Side by side: the time of one row over another's.
    for (int c = 0; c < ntc; c++) {
        const shape *mha = &shapes[5], *gqa = &shapes[6];
        const shape *rag = &shapes[7], *uni = &shapes[8];
        for (int dt = MHSA_F16; dt <= MHSA_BF16; dt++) {
            // A 16-bit cache reads half the bytes.
            shape_name(what, sizeof what, "core", mha);
            snprintf(label, sizeof label, "%.120s %s", what,
                     dtype_name[dt]);
            with_threads(num, sizeof num, label, tc[c]);
            snprintf(label, sizeof label, "%.120s f32", what);
            with_threads(den, sizeof den, label, tc[c]);
            snprintf(label, sizeof label, "%s / f32, %d thr",
                     dtype_name[dt], (int)tc[c]);
            char l2[200];
            snprintf(l2, sizeof l2, "decode H=32 dh=128 L=8192 %.120s", label);
            mhsa_bench_add_ratio(l2, num, den, 0.55);
        }
        // GQA H/Hkv = 4 against the MHA cache of the same H.
        shape_name(what, sizeof what, "core", gqa);
        snprintf(label, sizeof label, "%.120s f32", what);
        with_threads(num, sizeof num, label, tc[c]);
        shape_name(what, sizeof what, "core", mha);
        snprintf(label, sizeof label, "%.120s f32", what);
        with_threads(den, sizeof den, label, tc[c]);
        snprintf(label, sizeof label,
                 "decode L=8192 Hkv=8 / Hkv=32 (H=32 dh=128), %d thr",
                 (int)tc[c]);
        mhsa_bench_add_ratio(label, num, den, 0.0);
        // Ragged against uniform, the same bytes.
        for (int dt = MHSA_F32; dt <= MHSA_F16; dt++) {
            shape_name(what, sizeof what, "core", rag);
            snprintf(label, sizeof label, "%.120s %s", what,
                     dtype_name[dt]);
            with_threads(num, sizeof num, label, tc[c]);
            shape_name(what, sizeof what, "core", uni);
            snprintf(label, sizeof label, "%.120s %s", what,
                     dtype_name[dt]);
            with_threads(den, sizeof den, label, tc[c]);
            snprintf(label, sizeof label,
                     "decode B=8 ragged / uniform (same bytes) %s, %d thr",
                     dtype_name[dt], (int)tc[c]);
            mhsa_bench_add_ratio(label, num, den, 1.1);
        }
    }
}
