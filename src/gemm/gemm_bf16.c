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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_bf16.h"
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
    if (atomic_compare_exchange_strong(&choice, &expected, want))
        return want;
    return expected;
}

int mhsa__bf16_auto_takes(const mhsa_cpu_features *f,
                          const mhsa_bf16_tiles *t)
{
    if (t->emulated || t->needs != MHSA_BF16_NEEDS_AVX512_BF16)
        return 1;
    return f->vendor != MHSA_CPU_INTEL;
}

const mhsa_bf16_tiles *mhsa_gemm_bf16_tiles(const mhsa_kernels *k)
{
    int c = choice_now();
    if (c == 1)
        return NULL;
    const mhsa_bf16_tiles *t = c >= 2 ? usable(k, choices[c]) : NULL;
    if (t)
        return t;
    t = usable(k, NULL);
    return t && mhsa__bf16_auto_takes(mhsa__cpu_features(), t) ? t : NULL;
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
