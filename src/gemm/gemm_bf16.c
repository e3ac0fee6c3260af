// gemm_bf16.c — the bf16-compute GEMM driver (gemm_bf16.h): gemm.c's loop
// nest on a table's bf16 tiles, and the choice of tile set.
//
//   for pc in K by KC:                 pack bf16 op(B)[pc:pc+kc, :] (shared)
//     parallel for (ic, jc) tiles:     pack bf16 alpha*op(A) block (own)
//       for jr in the chunk by NR:
//         for ir in the block by MR:   t->ukr(kc, ...), beta first, then 1
//
// Packed panels are bf16 (2 bytes) in the caller's fp32 scratch: the
// tile set's (mc x kc) A block in the thread's mhsa_gemm_a_floats(k)
// floats, its kc x n B block in s->b (mhsa_gemm_bf16_fits checks both).
// AMX sets configure the tiles once per thread and GEMM (thread_begin)
// and release them at the end (thread_end).
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm_bf16.h"
#include "gemm_scratch.h"
#include "tile.h"
#include "core/cpu_features.h"
#include "core/status.h"
#include "core/threads.h"

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

// ---- which tile set ------------------------------------------------------

static const char *const choices[] = { "auto", "none", "amx_bf16",
                                       "avx512_bf16" };
enum { N_CHOICES = sizeof choices / sizeof choices[0] };

int mhsa_gemm_bf16_runnable(const mhsa_bf16_tiles *t)
{
    const mhsa_cpu_features *f = mhsa__cpu_features();
    switch (t->needs) {
    case MHSA_BF16_NEEDS_NOTHING:     return 1;
    case MHSA_BF16_NEEDS_AVX512_BF16: return f->avx512_bf16;
    // The AMX set's packers round with vcvtne2ps2bf16 (AVX512-BF16).
    case MHSA_BF16_NEEDS_AMX_BF16:
        return f->avx512_bf16 && f->amx_bf16 && mhsa__amx_permitted();
    }
    return 0;
}

int mhsa_gemm_bf16_fits(const mhsa_kernels *k, const mhsa_bf16_tiles *t)
{
    const mhsa_gemm_blocking *b = &t->blocking, *f = &k->blocking;
    size_t kg = (size_t)t->kgran, mr = (size_t)t->mr, nr = (size_t)t->nr;
    if (!kg || !mr || !nr || !b->kc || b->kc % kg || !b->mc ||
        b->mc % mr || !b->nc || b->nc % nr)
        return 0;
    // A: mc x kc bf16 within one thread's mc x kc floats.
    if (b->mc * b->kc * 2 > mhsa_gemm_a_floats(k) * 4)
        return 0;
    // B: kc x round_up(n, nr) bf16 within kc_f32 x round_up(n, nr_f32)
    // floats for every n: nr divides the fp32 nr, and 2 kc <= 4 kc_f32.
    if ((size_t)k->nr % nr || b->kc * 2 > f->kc * 4)
        return 0;
    // fp32-prepacked B (gemm.h) is read panel by panel: the same panel
    // width, and fp32 KC blocks that start on t's depth steps.
    return (size_t)k->nr == nr && f->kc % kg == 0;
}

static const mhsa_bf16_tiles *usable(const mhsa_kernels *k, const char *name)
{
    if (!k->bf16)
        return NULL;
    for (const mhsa_bf16_tiles *const *t = k->bf16; *t; t++)
        if ((!name || strcmp((*t)->name, name) == 0) &&
            mhsa_gemm_bf16_runnable(*t) &&
            mhsa_gemm_bf16_fits(k, *t))
            return *t;
    return NULL;
}

// Whether some table dispatch gives here can run the set called name. A
// test's stand-in table counts even where the CPU's own table of that ISA
// shadows it (an emulated AMX set on an AVX-512 CPU without AMX): only a
// test installs one, and it then asks for that set by name.
static int available(const char *name)
{
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
        const mhsa_kernels *k = mhsa_kernels_for(i);
        if (k && usable(k, name))
            return 1;
    }
    const mhsa_kernels *s = mhsa__stand_in();
    return s && usable(s, name);
}

static _Atomic int choice = -1;   // index into choices; -1: not read yet
static _Atomic int choice_by_env; // 1: MHSA_BF16_TILES made the choice

// The choice, read from MHSA_BF16_TILES at the first call unless
// mhsa__bf16_select came first; several threads may race here, all
// compute the same value and the first CAS wins.
static int choice_now(void)
{
    int c = atomic_load_explicit(&choice, memory_order_acquire);
    if (c >= 0)
        return c;
    int want = 0;
    const char *e = getenv("MHSA_BF16_TILES");
    for (int i = 0; e && i < N_CHOICES; i++)
        if (strcmp(e, choices[i]) == 0 && (i < 2 || available(e)))
            want = i;
    int expected = -1;
    if (want > 0)   // before the CAS: whoever reads the choice sees it
        atomic_store_explicit(&choice_by_env, 1, memory_order_relaxed);
    if (atomic_compare_exchange_strong(&choice, &expected, want))
        return want;
    return expected;
}

// ---- auto: the table of measured CPUs, else a measurement ---------------

// The CPUs whose choice was measured (docs/performance.md has the figures,
// each machine's bf16 rows). A row matches a CPU of its vendor and family
// with a model in [model_lo, model_hi], whose AVX512-BF16 and AMX-BF16
// flags equal avx512_bf16 and amx (-1: either). take is the set auto runs
// there, or "none" for the exact fallback. Only measured CPUs belong here:
// any other one is measured at its first bf16 product (measure below).
static const mhsa_bf16_row rows[] = {
    // Every family 25 part with AVX512-BF16 is a Zen 4 core: 512-bit
    // vdpbf16ps gives twice the products of the fp32 FMAs it is issued
    // like, so the tiles beat rounding plus the fp32 micro-kernel.
    { "AMD Zen 4 (family 25) with AVX512-BF16, no AMX: avx512_bf16 tiles",
      MHSA_CPU_AMD, 25, 0x00, 0xff, 1, 0, "avx512_bf16" },
    // Zen 5 (family 26, models 0x00-0x4f): the same, with a full 512-bit
    // datapath; measured on model 2.
    { "AMD Zen 5 (family 26) with AVX512-BF16, no AMX: avx512_bf16 tiles",
      MHSA_CPU_AMD, 26, 0x00, 0x4f, 1, 0, "avx512_bf16" },
    // Emerald Rapids with AMX hidden by the host: vdpbf16ps gives no more
    // products per cycle than fp32 FMAs, so the tiles lose to the
    // fallback; without AVX512-BF16 no tile set runs at all.
    { "Intel Emerald Rapids (family 6 model 207), AMX not exposed: exact "
      "fallback", MHSA_CPU_INTEL, 6, 207, 207, -1, 0, "none" },
};

const mhsa_bf16_row *mhsa__bf16_table_row(const mhsa_cpu_features *f)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const mhsa_bf16_row *r = &rows[i];
        if (f->vendor == r->vendor && f->family == r->family &&
            f->model >= r->model_lo && f->model <= r->model_hi &&
            (r->avx512_bf16 < 0 || !f->avx512_bf16 == !r->avx512_bf16) &&
            (r->amx < 0 || !f->amx_bf16 == !r->amx))
            return r;
    }
    return NULL;
}

int mhsa__bf16_tiles_win(double ms_tiles, double ms_fallback)
{
    // Ties go to the exact fallback: it needs no measurement to trust, and
    // a margin keeps a CPU whose two candidates run about level from
    // flipping between processes on timing noise.
    return ms_tiles > 0.0 && ms_fallback > 0.0 &&
           ms_tiles <= 0.9 * ms_fallback;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void fill(float *x, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

static size_t up64(size_t bytes) { return round_up(bytes ? bytes : 1, 64); }

int mhsa__bf16_measure(const mhsa_kernels *k, const mhsa_bf16_tiles *t,
                       size_t m, size_t n, size_t kd, double budget_ms,
                       double *ms_tiles, double *ms_fallback)
{
    *ms_tiles = *ms_fallback = 0.0;
    if (!m || !n || !kd)
        return -1;
    // C11's allocator, not mhsa__alloc: a one-time, process-wide probe
    // must not shift the allocation count that fault-injection tests step
    // through, and its failing only means "no measurement" (the caller
    // then takes the exact fallback).
    size_t fa = m * kd, fb = kd * n, fc = m * n;
    size_t fap = mhsa_tile_a_floats(k, m, kd);
    size_t fbp = mhsa_tile_b_floats(k, kd, n);
    size_t ea = mhsa_tile_bf16_a_elems(t, m, kd);
    size_t eb = mhsa_tile_bf16_b_elems(t, kd, n);
    float *a = aligned_alloc(64, up64(fa * 4));
    float *b = aligned_alloc(64, up64(fb * 4));
    float *c = aligned_alloc(64, up64(fc * 4));
    float *ap = aligned_alloc(64, up64(fap * 4));
    float *bp = aligned_alloc(64, up64(fbp * 4));
    uint16_t *ap16 = aligned_alloc(64, up64(ea * 2));
    uint16_t *bp16 = aligned_alloc(64, up64(eb * 2));
    int rc = -1;
    if (a && b && c && ap && bp && ap16 && bp16) {
        fill(a, fa, 1);
        fill(b, fb, 2);
        // B is packed once, outside the clock, for both: the drivers pack
        // a weight's panels once per call and share them over every row
        // block, so per row of A their cost is small. A is packed (and
        // rounded) at every trial, as each call does.
        mhsa_tile_pack_b(k, kd, n, b, n, 0, MHSA_BF16, bp);
        mhsa_tile_bf16_pack_b(t, kd, n, b, MHSA_F32, n, 0, bp16);
        double best_f = 0.0, best_t = 0.0, start = now_ms();
        // A round that warms the caches and the code, not counted; then
        // alternating trials, the best of each (noise only adds time): at
        // least two rounds, then more while the budget lasts.
        for (int round = 0; round < 16; round++) {
            double t0 = now_ms();
            mhsa_tile_pack_a(k, m, kd, a, kd, 0, 1.0f, MHSA_BF16, ap);
            mhsa_tile_gemm(k, m, n, kd, ap, bp, c, n, 0.0f);
            double t1 = now_ms();
            mhsa_tile_bf16_begin(t);
            mhsa_tile_bf16_pack_a(t, m, kd, a, kd, 0, 1.0f, ap16);
            mhsa_tile_bf16_gemm(t, m, n, kd, ap16, bp16, c, n, 0.0f);
            mhsa_tile_bf16_end(t);
            double t2 = now_ms();
            if (round > 0) {
                if (best_f == 0.0 || t1 - t0 < best_f)
                    best_f = t1 - t0;
                if (best_t == 0.0 || t2 - t1 < best_t)
                    best_t = t2 - t1;
            }
            if (round >= 2 && t2 - start >= budget_ms)
                break;
        }
        // Timer granularity can round a tiny product to nothing.
        *ms_fallback = best_f > 0.0 ? best_f : 1e-6;
        *ms_tiles = best_t > 0.0 ? best_t : 1e-6;
        rc = 0;
    }
    free(a);
    free(b);
    free(c);
    free(ap);
    free(bp);
    free(ap16);
    free(bp16);
    return rc;
}

// Measurements made in this process, one per first runnable set of a
// table (the set pointer is the key: the tuned and fixed copies of a
// table share their sets). Written once each under the lock, published by
// the release store of t; read without the lock.
enum { MEASURED_SLOTS = 8 };
static struct measured {
    _Atomic(const mhsa_bf16_tiles *) key;
    const mhsa_bf16_tiles *take;   // NULL: the exact fallback
    const mhsa_bf16_tiles *timed;  // the set set against the fallback
    double ms_tiles, ms_fallback;
} measured[MEASURED_SLOTS];
static pthread_mutex_t measure_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct measured *find_measured(const mhsa_bf16_tiles *key)
{
    for (int i = 0; i < MEASURED_SLOTS; i++) {
        const mhsa_bf16_tiles *s =
            atomic_load_explicit(&measured[i].key, memory_order_acquire);
        if (s == key)
            return &measured[i];
        if (!s)
            break;
    }
    return NULL;
}

// The micro-benchmark's shape: a block of a projection's rows by one
// weight panel set, a multiple of every tile set's mr, nr and kgran, and
// within their kc: about 25 MFLOP, a tenth of a millisecond or two on
// the CPUs that have such tiles.
enum { PROBE_M = 192, PROBE_N = 256, PROBE_K = 256 };
#define PROBE_BUDGET_MS 4.0

// The measured choice for table k, whose first runnable set is first:
// each runnable set of k timed against the exact fallback, once per
// process; the fastest set if it wins (mhsa__bf16_tiles_win), else none.
static const struct measured *measure_once(const mhsa_kernels *k,
                                           const mhsa_bf16_tiles *first)
{
    const struct measured *m = find_measured(first);
    if (m)
        return m;
    pthread_mutex_lock(&measure_lock);
    m = find_measured(first);
    int slot = -1;
    for (int i = 0; !m && i < MEASURED_SLOTS && slot < 0; i++)
        if (!atomic_load_explicit(&measured[i].key, memory_order_relaxed))
            slot = i;
    if (!m && slot >= 0) {
        struct measured *w = &measured[slot];
        w->take = NULL;
        w->timed = first;
        w->ms_tiles = w->ms_fallback = 0.0;
        double best = 0.0;
        for (const mhsa_bf16_tiles *const *t = k->bf16; *t; t++) {
            double mt, mf;
            // The test-only emulated sets (only tests measure them) at a
            // small shape: their C emulation is slow.
            size_t sm = (*t)->emulated ? 24 : PROBE_M;
            size_t sn = (*t)->emulated ? 64 : PROBE_N;
            size_t sk = (*t)->emulated ? 64 : PROBE_K;
            if (!mhsa_gemm_bf16_runnable(*t) || !mhsa_gemm_bf16_fits(k, *t) ||
                mhsa__bf16_measure(k, *t, sm, sn, sk, PROBE_BUDGET_MS, &mt,
                                   &mf) != 0)
                continue;
            if (!w->ms_fallback || mf < w->ms_fallback)
                w->ms_fallback = mf;
            if (!best || mt < best) {
                best = mt;
                w->timed = *t;
                w->ms_tiles = mt;
            }
        }
        if (mhsa__bf16_tiles_win(w->ms_tiles, w->ms_fallback))
            w->take = w->timed;
        atomic_store_explicit(&w->key, first, memory_order_release);
        m = w;
    }
    pthread_mutex_unlock(&measure_lock);
    return m;   // NULL only when every slot is taken: the fallback then
}

mhsa_bf16_choice mhsa__bf16_choice(const mhsa_kernels *k)
{
    mhsa_bf16_choice r = { NULL, MHSA_BF16_NO_TILES, NULL, NULL, 0.0, 0.0 };
    int c = choice_now();
    if (c >= 1) {
        r.how = atomic_load_explicit(&choice_by_env, memory_order_relaxed)
                ? MHSA_BF16_FORCED_ENV : MHSA_BF16_FORCED_CALL;
        if (c == 1)
            return r;
        r.tiles = usable(k, choices[c]);
        if (r.tiles)
            return r;
        // The set chosen is not k's (another table's): auto for k.
    }
    const mhsa_bf16_tiles *first = usable(k, NULL);
    if (first && first->emulated) {   // test-only: always run, to be tested
        r.how = MHSA_BF16_EMULATED;
        r.tiles = first;
        return r;
    }
    const mhsa_bf16_row *row = mhsa__bf16_table_row(mhsa__cpu_features());
    if (row) {
        r.how = MHSA_BF16_TABLE;
        r.row = row;
        if (strcmp(row->take, "none") == 0)
            return r;
        r.tiles = usable(k, row->take);
        if (r.tiles)
            return r;
        // The row's set does not run with k: as if the CPU had no row.
        r.row = NULL;
    }
    return mhsa__bf16_measured_choice(k);
}

mhsa_bf16_choice mhsa__bf16_measured_choice(const mhsa_kernels *k)
{
    mhsa_bf16_choice r = { NULL, MHSA_BF16_NO_TILES, NULL, NULL, 0.0, 0.0 };
    const mhsa_bf16_tiles *first = usable(k, NULL);
    if (!first)
        return r;
    const struct measured *m = measure_once(k, first);
    r.how = MHSA_BF16_MEASURED;
    if (m) {
        r.tiles = m->take;
        r.timed = m->timed;
        r.ms_tiles = m->ms_tiles;
        r.ms_fallback = m->ms_fallback;
    }
    return r;
}

int mhsa__bf16_explain(const mhsa_bf16_choice *c, char *buf, size_t n)
{
    switch (c->how) {
    case MHSA_BF16_FORCED_ENV:
        return snprintf(buf, n, "forced by MHSA_BF16_TILES=%s",
                        choices[choice_now()]);
    case MHSA_BF16_FORCED_CALL:
        return snprintf(buf, n, "forced by mhsa__bf16_select(\"%s\")",
                        choices[choice_now()]);
    case MHSA_BF16_NO_TILES:
        return snprintf(buf, n, "no bf16 tile set runs with this table "
                        "on this CPU");
    case MHSA_BF16_EMULATED:
        return snprintf(buf, n, "the test-only emulated set");
    case MHSA_BF16_TABLE:
        return snprintf(buf, n, "table: %s", c->row ? c->row->what : "?");
    case MHSA_BF16_MEASURED:
        return snprintf(buf, n, "measured: %s tiles %.3f ms vs exact "
                        "fallback %.3f ms (best trials; tiles taken at <= "
                        "0.9x)", c->timed ? c->timed->name : "?",
                        c->ms_tiles, c->ms_fallback);
    }
    return snprintf(buf, n, "?");
}

const mhsa_bf16_tiles *mhsa_gemm_bf16_tiles(const mhsa_kernels *k)
{
    return mhsa__bf16_choice(k).tiles;
}

int mhsa_gemm_bf16_native(const mhsa_kernels *k)
{
    return mhsa_gemm_bf16_tiles(k) != NULL;
}

mhsa_status mhsa__bf16_select(const char *name)
{
    if (!name)
        name = "auto";
    int c = -1;
    for (int i = 0; i < N_CHOICES; i++)
        if (strcmp(name, choices[i]) == 0)
            c = i;
    if (c < 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "bf16 tiles '%s': not auto, none, amx_bf16 or "
                          "avx512_bf16", name);
    if (c >= 2) {
        if (!available(name))
            return mhsa__fail(MHSA_ERR_UNSUPPORTED,
                              "bf16 tiles '%s' are not available (this CPU "
                              "or OS lacks them, or the build does)", name);
    }
    atomic_store_explicit(&choice_by_env, 0, memory_order_relaxed);
    atomic_store_explicit(&choice, c, memory_order_release);
    return MHSA_OK;
}

const char *mhsa__bf16_selected(void) { return choices[choice_now()]; }

// ---- the driver ------------------------------------------------------------

// Panel p of the kc x n block of op(B) at depth pc, into bp.
static void pack_b_panel(const mhsa_kernels *k, const mhsa_bf16_tiles *t,
                         size_t p, size_t pc, size_t kc, size_t kdim,
                         size_t n, const void *b, mhsa_dtype bdt, size_t ldb,
                         int trans_b, const float *bpre, uint16_t *bp)
{
    size_t nr = (size_t)t->nr, es = mhsa_dtype_size(bdt);
    size_t j = p * nr, w = n - j < nr ? n - j : nr;
    size_t kpad = round_up(kc, (size_t)t->kgran);
    uint16_t *dst = bp + p * nr * kpad;
    if (!bpre) {
        const char *src = (const char *)b +
                          (trans_b ? j * ldb + pc : pc * ldb + j) * es;
        t->pack_b(kc, w, src, bdt, ldb, trans_b, dst);
        return;
    }
    // fp32-prepacked: KC_f32 blocks of depth, each as nr-column panels
    // (row-major inside, so a non-transposed B with ldb = nr). The pieces
    // of [pc, pc + kc) start on depth steps (mhsa_gemm_bf16_fits).
    size_t kcf = k->blocking.kc, npad = round_up(n, (size_t)k->nr);
    for (size_t d = pc; d < pc + kc;) {
        size_t blk = d / kcf * kcf, kcur = kdim - blk < kcf ? kdim - blk : kcf;
        size_t end = blk + kcur < pc + kc ? blk + kcur : pc + kc;
        const float *src = bpre + blk * npad + j * kcur + (d - blk) * nr;
        t->pack_b(end - d, w, src, MHSA_F32, nr, 0, dst + (d - pc) * nr);
        d = end;
    }
}

typedef struct tile_plan {
    size_t mc, nc, m_blocks, n_chunks;
} tile_plan;

static void run_tiles(const mhsa_bf16_tiles *t, const tile_plan *tp,
                      uint16_t *apack, int trans_a, size_t m, size_t n,
                      size_t pc, size_t kc, float alpha, const float *a,
                      size_t lda, const uint16_t *bpk, float beta, float *c,
                      size_t ldc)
{
    size_t mr = (size_t)t->mr, nr = (size_t)t->nr;
    size_t kpad = round_up(kc, (size_t)t->kgran);
    size_t packed_ib = (size_t)-1;
    size_t tiles = tp->m_blocks * tp->n_chunks;
#pragma omp for schedule(static)
    for (size_t ti = 0; ti < tiles; ti++) {
        size_t ib = ti / tp->n_chunks, jb = ti % tp->n_chunks;
        size_t ic = ib * tp->mc;
        size_t mcur = m - ic < tp->mc ? m - ic : tp->mc;
        if (ib != packed_ib) {
            const float *a0 = trans_a ? a + pc * lda + ic : a + ic * lda + pc;
            for (size_t ir = 0; ir < mcur; ir += mr) {
                size_t h = mcur - ir < mr ? mcur - ir : mr;
                t->pack_a(h, kc, trans_a ? a0 + ir : a0 + ir * lda, lda,
                          trans_a, alpha, apack + ir * kpad);
            }
            packed_ib = ib;
        }
        size_t j0 = jb * tp->nc, j1 = j0 + tp->nc < n ? j0 + tp->nc : n;
        for (size_t jr = j0; jr < j1; jr += nr) {
            size_t w = j1 - jr < nr ? j1 - jr : nr;
            const uint16_t *bpanel = bpk + jr * kpad;
            for (size_t ir = 0; ir < mcur; ir += mr) {
                size_t h = mcur - ir < mr ? mcur - ir : mr;
                t->ukr(kc, apack + ir * kpad, bpanel,
                       c + (ic + ir) * ldc + jr, ldc, h, w, beta);
            }
        }
    }
}

static void scale_c(size_t m, size_t n, float beta, float *c, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

// One thread's share of mhsa_sgemm_bf16 (mhsa__team_run): the KC loop,
// B's panels packed by the team, then the tiles.
typedef struct bf16_ctx {
    const mhsa_kernels *k;
    const mhsa_bf16_tiles *t;
    const mhsa_gemm_scratch *s;
    const tile_plan *tp;
    int trans_a, trans_b;
    size_t m, n, kdim;
    float alpha;
    const float *a;
    size_t lda;
    const void *b;
    mhsa_dtype bdt;
    size_t ldb;
    const float *bp_prepacked;
    float beta;
    float *c;
    size_t ldc, panels, a_floats;
    uint16_t *bpack;
} bf16_ctx;

static void bf16_body(void *p)
{
    const bf16_ctx *x = p;
    const mhsa_bf16_tiles *t = x->t;
    const mhsa_gemm_blocking bl = t->blocking;
    if (t->thread_begin)
        t->thread_begin();
    uint16_t *apack = (uint16_t *)(void *)(
        x->s->a + (size_t)omp_get_thread_num() * x->a_floats);
    for (size_t pc = 0; pc < x->kdim; pc += bl.kc) {
        size_t kc = x->kdim - pc < bl.kc ? x->kdim - pc : bl.kc;
#pragma omp for schedule(static)
        for (size_t p = 0; p < x->panels; p++)
            pack_b_panel(x->k, t, p, pc, kc, x->kdim, x->n, x->b, x->bdt,
                         x->ldb, x->trans_b, x->bp_prepacked, x->bpack);
        // (the omp for ends with a barrier: B is whole before use)
        run_tiles(t, x->tp, apack, x->trans_a, x->m, x->n, pc, kc, x->alpha,
                  x->a, x->lda, x->bpack, pc == 0 ? x->beta : 1.0f, x->c,
                  x->ldc);
        // run_tiles' omp for ends with a barrier, so no thread repacks
        // the shared B panel while another still reads it.
    }
    if (t->thread_end)
        t->thread_end();
}

void mhsa_sgemm_bf16(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                     int trans_a, int trans_b, size_t m, size_t n,
                     size_t kdim, float alpha, const float *a, size_t lda,
                     const void *b, mhsa_dtype bdt, size_t ldb,
                     const float *bp_prepacked, float beta, float *c,
                     size_t ldc)
{
    const mhsa_bf16_tiles *t = mhsa_gemm_bf16_tiles(k);
    if (!t) {
        // A caller's bug (gemm_bf16.h: check mhsa_gemm_bf16_native): no
        // silent fp32 product in place of the bf16 one.
        fprintf(stderr, "mhsa_sgemm_bf16: table %s has no bf16 tiles that "
                "run here\n", k->name);
        abort();
    }
    if (m == 0 || n == 0)
        return;
    if (kdim == 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return;
    }
    const mhsa_gemm_blocking bl = t->blocking;
    tile_plan tp = { bl.mc, bl.nc, 0, 0 };
    tp.m_blocks = (m + tp.mc - 1) / tp.mc;
    tp.n_chunks = (n + tp.nc - 1) / tp.nc;
    size_t panels = (n + (size_t)t->nr - 1) / (size_t)t->nr;

    int nt = omp_get_max_threads();
    if (nt > s->max_threads)
        nt = s->max_threads;
    size_t tiles = tp.m_blocks * tp.n_chunks;
    if ((size_t)nt > tiles)
        nt = (int)tiles;
    if (nt < 1)
        nt = 1;
    nt = mhsa__pool_threads(nt);
    size_t a_floats = mhsa_gemm_a_floats(k);
    uint16_t *bpack = (uint16_t *)(void *)s->b;

    bf16_ctx cx = { k, t, s, &tp, trans_a, trans_b, m, n, kdim, alpha, a,
                    lda, b, bdt, ldb, bp_prepacked, beta, c, ldc, panels,
                    a_floats, bpack };
    mhsa__team_run(nt, bf16_body, &cx);
}

// ---- single-threaded tile helpers -----------------------------------------

size_t mhsa_tile_bf16_a_elems(const mhsa_bf16_tiles *t, size_t m,
                              size_t kdim)
{
    return round_up(m, (size_t)t->mr) * round_up(kdim, (size_t)t->kgran);
}

size_t mhsa_tile_bf16_b_elems(const mhsa_bf16_tiles *t, size_t kdim,
                              size_t n)
{
    return round_up(n, (size_t)t->nr) * round_up(kdim, (size_t)t->kgran);
}

void mhsa_tile_bf16_pack_a(const mhsa_bf16_tiles *t, size_t m, size_t kdim,
                           const float *a, size_t lda, int trans, float alpha,
                           uint16_t *ap)
{
    size_t mr = (size_t)t->mr, kpad = round_up(kdim, (size_t)t->kgran);
    for (size_t i = 0; i < m; i += mr) {
        size_t h = m - i < mr ? m - i : mr;
        t->pack_a(h, kdim, trans ? a + i : a + i * lda, lda, trans, alpha,
                  ap + i * kpad);
    }
}

void mhsa_tile_bf16_pack_b(const mhsa_bf16_tiles *t, size_t kdim, size_t n,
                           const void *b, mhsa_dtype dt, size_t ldb,
                           int trans, uint16_t *bp)
{
    size_t nr = (size_t)t->nr, kpad = round_up(kdim, (size_t)t->kgran);
    size_t es = mhsa_dtype_size(dt);
    for (size_t j = 0; j < n; j += nr) {
        size_t w = n - j < nr ? n - j : nr;
        t->pack_b(kdim, w, (const char *)b + (trans ? j * ldb : j) * es, dt,
                  ldb, trans, bp + j * kpad);
    }
}

void mhsa_tile_bf16_begin(const mhsa_bf16_tiles *t)
{
    if (t->thread_begin)
        t->thread_begin();
}

void mhsa_tile_bf16_end(const mhsa_bf16_tiles *t)
{
    if (t->thread_end)
        t->thread_end();
}

void mhsa_tile_bf16_gemm(const mhsa_bf16_tiles *t, size_t m, size_t n,
                         size_t kdim, const uint16_t *ap, const uint16_t *bp,
                         float *c, size_t ldc, float beta)
{
    size_t mr = (size_t)t->mr, nr = (size_t)t->nr;
    size_t kpad = round_up(kdim, (size_t)t->kgran);
    for (size_t j = 0; j < n; j += nr) {
        size_t w = n - j < nr ? n - j : nr;
        for (size_t i = 0; i < m; i += mr) {
            size_t h = m - i < mr ? m - i : mr;
            t->ukr(kdim, ap + i * kpad, bp + j * kpad, c + i * ldc + j, ldc,
                   h, w, beta);
        }
    }
}
