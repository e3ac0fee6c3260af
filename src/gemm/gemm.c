// gemm.c — the blocked SGEMM driver: BLIS's five loops around one
// register-blocked micro-kernel, with packing and OpenMP, written once for
// every ISA (the ISA directories hold only pack_a, pack_b, sgemm_ukr,
// sgemm_ukr_ra and sgemm_ukr_ta).
//
// Loop nest for one call (jc over N in NC chunks is folded into the shared B
// panel, which holds all n columns of one KC block):
//   for pc in K by KC:                 pack op(B)[pc:pc+kc, :] (shared;
//                                      read in place when it already is
//                                      one panel: b_is_one_panel)
//     parallel for (ic, jc) tiles:     pack op(A)[ic:ic+mc, pc:pc+kc] (own)
//       for jr in the chunk by NR:     B micro-panel stays in L1
//         for ir in the block by MR:   A block stays in L2
//           sgemm_ukr(kc, ...)         beta on the first KC block, then 1
// With few NR panels A is not packed: sgemm_ukr_ra (or, transposed,
// sgemm_ukr_ta) reads it in place (use_row_major_a). A bias
// (mhsa_sgemm_bias) enters on the first KC block, in place of beta.
#include <omp.h>
#include <string.h>

#include "gemm.h"
#include "gemm_bf16.h"
#include "pack_b16.h"
#include "core/threads.h"

#include "core/alloc.h"
#include "core/fpenv.h"
#include "round_bf16.h"

// Cache blocking (kc, mc, nc) comes from the table (kernels.h:
// mhsa_gemm_blocking, set in each src/<isa>/table.c).

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

size_t mhsa_gemm_prepacked_floats(const mhsa_kernels *k, size_t kdim, size_t n)
{
    size_t f;
    if (n > ((size_t)-1) / 2 || !mhsa__mul(kdim, round_up(n, (size_t)k->nr), &f))
        return 0;
    return f;
}

// Panel p (columns p*nr ..) of the kc x n block of op(B) at depth b0.
// With rounding (compute dtype BF16) the panel's values, zero padding
// included, are then rounded to bf16 in place.
static void pack_b_panel(const mhsa_kernels *k, size_t p, size_t kc,
                         size_t n, const char *b0, mhsa_dtype bdt,
                         size_t ldb, int trans_b, float *bp, int rounding)
{
    size_t nr = (size_t)k->nr, es = mhsa_dtype_size(bdt);
    size_t j = p * nr, w = n - j < nr ? n - j : nr;
    const char *src = b0 + (trans_b ? j * ldb : j) * es;
    if (bdt == MHSA_F32)
        k->pack_b(kc, w, (const float *)src, ldb, trans_b, bp + p * nr * kc);
    else
        mhsa__pack_b_16(k, kc, w, src, ldb, trans_b, bdt, bp + p * nr * kc);
    if (rounding)
        mhsa__round_bf16(bp + p * nr * kc, nr * kc);
}

// Packs the kc x n block of op(B) starting at depth pc into panels.
static void pack_b_block(const mhsa_kernels *k, size_t pc, size_t kc,
                         size_t n, const void *b, mhsa_dtype bdt, size_t ldb,
                         int trans_b, float *bp, int parallel, int rounding)
{
    size_t nr = (size_t)k->nr;
    size_t panels = (n + nr - 1) / nr;
    const char *b0 = (const char *)b +
                     (trans_b ? pc : pc * ldb) * mhsa_dtype_size(bdt);
    if (parallel) {
#pragma omp for schedule(static)
        for (size_t p = 0; p < panels; p++)
            pack_b_panel(k, p, kc, n, b0, bdt, ldb, trans_b, bp, rounding);
    } else {
        for (size_t p = 0; p < panels; p++)
            pack_b_panel(k, p, kc, n, b0, bdt, ldb, trans_b, bp, rounding);
    }
}

void mhsa_gemm_prepack_b(const mhsa_kernels *k, size_t kdim, size_t n,
                         const float *b, size_t ldb, int trans_b, float *bp)
{
    size_t npad = round_up(n, (size_t)k->nr), kcb = k->blocking.kc;
    for (size_t pc = 0; pc < kdim; pc += kcb) {
        size_t kc = kdim - pc < kcb ? kdim - pc : kcb;
        pack_b_block(k, pc, kc, n, b, MHSA_F32, ldb, trans_b, bp + pc * npad,
                     0, 0);
    }
}

static void scale_c(size_t m, size_t n, float beta, float *c, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

// Tiles of one KC block, handed out statically by index so that which
// thread computes a tile never changes its arithmetic.
typedef struct tile_plan {
    size_t mc, nc, m_blocks, n_chunks;
    int row_major_a;   // sgemm_ukr_ra / _ta on the caller's A, no packing
} tile_plan;

// The rows [0, h) of C start as the bias (a product of depth 0: the bits
// of a whole-matrix bias copy then beta = 1). With depth, both tiles take
// the bias row themselves (kernels.h), where a copy into C cost a memcpy
// call per row of every tile (docs/performance.md, "Measurements behind
// the code").
static void bias_tile(size_t h, size_t w, const float *bias, float *c,
                      size_t ldc)
{
    for (size_t r = 0; r < h; r++)
        memcpy(c + r * ldc, bias, w * sizeof(float));
}

// Tile t of the plan (tp's block ib = t / n_chunks, chunk jb = t % n_chunks)
// for the KC block at depth pc; *packed_ib: the block whose A this
// thread's apack holds.
static void run_tile(const mhsa_kernels *k, const tile_plan *tp, size_t t,
                     size_t *packed_ib, float *apack, int trans_a, size_t m,
                     size_t n, size_t pc, size_t kc, float alpha,
                     const float *a, size_t lda, const float *bpk,
                     float beta, const float *bias, float *c, size_t ldc,
                     int rounding)
{
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    size_t ib = t / tp->n_chunks, jb = t % tp->n_chunks;
    size_t ic = ib * tp->mc;
    size_t mcur = m - ic < tp->mc ? m - ic : tp->mc;
    const float *a0 = trans_a ? a + pc * lda + ic : a + ic * lda + pc;
    if (!tp->row_major_a && ib != *packed_ib) {
        for (size_t ir = 0; ir < mcur; ir += mr) {
            size_t h = mcur - ir < mr ? mcur - ir : mr;
            k->pack_a(h, kc, trans_a ? a0 + ir : a0 + ir * lda, lda,
                      trans_a, alpha, apack + ir * kc);
        }
        if (rounding)   // bf16(alpha op(A)): after pack_a's alpha
            mhsa__round_bf16(apack, round_up(mcur, mr) * kc);
        *packed_ib = ib;
    }
    size_t j0 = jb * tp->nc, j1 = j0 + tp->nc < n ? j0 + tp->nc : n;
    for (size_t jr = j0; jr < j1; jr += nr) {
        size_t w = j1 - jr < nr ? j1 - jr : nr;
        const float *bpanel = bpk + jr * kc;
        const float *brow = bias ? bias + jr : NULL;
        for (size_t ir = 0; ir < mcur; ir += mr) {
            size_t h = mcur - ir < mr ? mcur - ir : mr;
            float *ct = c + (ic + ir) * ldc + jr;
            if (tp->row_major_a && trans_a) {
                k->sgemm_ukr_ta(kc, a0 + ir, lda, alpha, bpanel, ct, ldc, h,
                                w, beta, brow);
            } else if (tp->row_major_a) {
                k->sgemm_ukr_ra(kc, a0 + ir * lda, lda, alpha, bpanel, ct,
                                ldc, h, w, beta, brow);
            } else {
                k->sgemm_ukr(kc, apack + ir * kc, bpanel, ct, ldc, h, w,
                             beta, brow);
            }
        }
    }
}

// All tiles of one KC block: shared among the team (parallel), or all of
// them in the calling thread.
static void run_tiles(const mhsa_kernels *k, const tile_plan *tp,
                      float *apack, int trans_a, size_t m, size_t n,
                      size_t pc, size_t kc, float alpha, const float *a,
                      size_t lda, const float *bpk, float beta,
                      const float *bias, float *c, size_t ldc, int rounding,
                      int parallel)
{
    size_t packed_ib = (size_t)-1;
    size_t tiles = tp->m_blocks * tp->n_chunks;
    if (parallel) {
#pragma omp for schedule(static)
        for (size_t t = 0; t < tiles; t++)
            run_tile(k, tp, t, &packed_ib, apack, trans_a, m, n, pc, kc,
                     alpha, a, lda, bpk, beta, bias, c, ldc, rounding);
    } else {
        for (size_t t = 0; t < tiles; t++)
            run_tile(k, tp, t, &packed_ib, apack, trans_a, m, n, pc, kc,
                     alpha, a, lda, bpk, beta, bias, c, ldc, rounding);
    }
}

// Whether A goes to the micro-kernel row-major, unpacked. A packed A block
// is read by every nr-column panel of its KC block, so packing pays for
// itself only over enough panels; with few it is a large part of the call
// (the tiny forward's projections: n = 96 and 32 over k = 32). The row-
// major tile reads A with its row stride instead, the same instructions
// a step, and loses once the panels are many (strided rows, not one
// contiguous stream, through L1). The limit is the table's, measured per
// ISA (ra_max_panels, src/<isa>/table.c). A transposed (trans_a: the
// backward's weight gradients, X^T dY over the batch's rows) goes the
// same way through sgemm_ukr_ta where the table has it. The choice
// depends on the shapes and the table only, and every tile gives the same
// bits (kernels.h), so it never shows in C or in the thread count rule.
static int use_row_major_a(const mhsa_kernels *k, int trans_a, size_t n,
                           int rounding)
{
    if (rounding || !(trans_a ? k->sgemm_ukr_ta : k->sgemm_ukr_ra))
        return 0;
    return (n + (size_t)k->nr - 1) / (size_t)k->nr <=
           (size_t)k->ra_max_panels;
}

void mhsa_sgemm(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                int trans_a, int trans_b, size_t m, size_t n, size_t kdim,
                float alpha, const float *a, size_t lda,
                const float *b, size_t ldb, const float *bp_prepacked,
                float beta, float *c, size_t ldc)
{
    mhsa_sgemm_dt(k, s, trans_a, trans_b, m, n, kdim, alpha, a, lda, b,
                  MHSA_F32, ldb, bp_prepacked, beta, c, ldc);
}

// Whether op(B) already is its packed panel: exactly nr fp32 columns,
// rows nr floats apart, not transposed, not rounded. pack_b would copy it
// unchanged (a panel is kc rows of nr floats), so the tiles read B where
// it lies: the same values, the same bits. The tiny block's backward has
// four such products at d_model 32 (AVX-512's nr), whose packs, a copy of
// 40 KB through L2, were a visible part of its time (docs/performance.md,
// "Measurements behind the code").
static int b_is_one_panel(const mhsa_kernels *k, int trans_b, size_t n,
                          mhsa_dtype bdt, size_t ldb, int rounding)
{
    return !trans_b && !rounding && bdt == MHSA_F32 && n == (size_t)k->nr &&
           ldb == n;
}

// The KC loop of one call, run by each thread of the team (or by the
// caller alone, team 0: no omp for then, so that a call from inside
// another region never shares its loops with that region's threads):
// B's shared panel packed by all, then the tiles.
static void kc_loop(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                    const tile_plan *tp, int trans_a, int trans_b, size_t m,
                    size_t n, size_t kdim, float alpha, const float *a,
                    size_t lda, const void *b, mhsa_dtype bdt, size_t ldb,
                    const float *bp_prepacked, float beta, const float *bias,
                    float *c, size_t ldc, int rounding, int team)
{
    size_t kcb = k->blocking.kc, npad = round_up(n, (size_t)k->nr);
    mhsa_fpstate fp = mhsa__fp_enter_team();
    size_t me = team ? (size_t)omp_get_thread_num() : 0;
    float *apack = s->a + me * mhsa_gemm_a_floats(k);
    for (size_t pc = 0; pc < kdim; pc += kcb) {
        size_t kc = kdim - pc < kcb ? kdim - pc : kcb;
        const float *bpk;
        if (bp_prepacked) {
            bpk = bp_prepacked + pc * npad;
        } else if (b_is_one_panel(k, trans_b, n, bdt, ldb, rounding)) {
            bpk = (const float *)b + pc * ldb;
        } else {
            pack_b_block(k, pc, kc, n, b, bdt, ldb, trans_b, s->b, team,
                         rounding);
            bpk = s->b;   // the omp for above ends with a barrier
        }
        run_tiles(k, tp, apack, trans_a, m, n, pc, kc, alpha, a, lda, bpk,
                  pc == 0 ? beta : 1.0f, pc == 0 ? bias : NULL, c, ldc,
                  rounding, team);
        // run_tiles' omp for ends with a barrier, so no thread repacks
        // the shared B panel while another still reads it.
    }
    mhsa__fp_leave_team(fp);
}

// The driver; rounding: the packed A and B panels are rounded to bf16
// (the exact fallback of compute dtype BF16, round_bf16.h).
static void sgemm_driver(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                         int trans_a, int trans_b, size_t m, size_t n,
                         size_t kdim, float alpha, const float *a, size_t lda,
                         const void *b, mhsa_dtype bdt, size_t ldb,
                         const float *bp_prepacked, float beta,
                         const float *bias, float *c, size_t ldc,
                         int rounding)
{
    if (m == 0 || n == 0)
        return;
    if (kdim == 0 || alpha == 0.0f) {
        if (bias) {   // as the whole-matrix bias copy then beta = 1 did
            bias_tile(m, n, bias, c, ldc);
            beta = 1.0f;
        }
        scale_c(m, n, beta, c, ldc);
        return;
    }
    size_t nr = (size_t)k->nr;
    const mhsa_gemm_blocking bl = k->blocking;
    tile_plan tp = { bl.mc, bl.nc, 0, 0,
                     use_row_major_a(k, trans_a, n, rounding) };
    tp.m_blocks = (m + tp.mc - 1) / tp.mc;
    tp.n_chunks = (n + tp.nc - 1) / tp.nc;
    // As many blocks and chunks, evened out: the static split
    // hands each thread a contiguous run of tiles, and with m = 512 in
    // blocks of 240 (AVX-512's table) the last block held 32 rows, so one
    // of two threads got 2.4x the other's rows (and the QKV projection
    // scaled poorly at 2 threads: docs/performance.md, "Measurements
    // behind the code"). Block and chunk edges stay multiples of mr and
    // nr, so the micro-kernel calls, and the bits, are the same.
    tp.mc = round_up((m + tp.m_blocks - 1) / tp.m_blocks, (size_t)k->mr);
    tp.nc = round_up((n + tp.n_chunks - 1) / tp.n_chunks, nr);

    // Threads: never more than the scratch was sized for or than tiles,
    // and one thread below the work threshold (core/threads.h).
    size_t tiles = tp.m_blocks * tp.n_chunks;
    int nt = mhsa__threads(s->max_threads,
                           2.0 * (double)m * (double)n * (double)kdim, tiles);

    // One thread runs the loop in the caller, outside any OpenMP region:
    // a region of one still costs libgomp's team set-up, as much as the
    // arithmetic of a 12 x 12 x 8 product. The same loop either way.
    if (nt > 1) {
#pragma omp parallel num_threads(nt)
        kc_loop(k, s, &tp, trans_a, trans_b, m, n, kdim, alpha, a, lda, b,
                bdt, ldb, bp_prepacked, beta, bias, c, ldc, rounding, 1);
    } else {
        kc_loop(k, s, &tp, trans_a, trans_b, m, n, kdim, alpha, a, lda, b,
                bdt, ldb, bp_prepacked, beta, bias, c, ldc, rounding, 0);
    }
}

void mhsa_sgemm_dt(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                   int trans_a, int trans_b, size_t m, size_t n, size_t kdim,
                   float alpha, const float *a, size_t lda, const void *b,
                   mhsa_dtype bdt, size_t ldb, const float *bp_prepacked,
                   float beta, float *c, size_t ldc)
{
    sgemm_driver(k, s, trans_a, trans_b, m, n, kdim, alpha, a, lda, b, bdt,
                 ldb, bp_prepacked, beta, NULL, c, ldc, 0);
}

void mhsa_sgemm_cd(const mhsa_kernels *k, mhsa_dtype cdt,
                   const mhsa_gemm_scratch *s, int trans_a, int trans_b,
                   size_t m, size_t n, size_t kdim, float alpha,
                   const float *a, size_t lda, const void *b, mhsa_dtype bdt,
                   size_t ldb, const float *bp_prepacked, float beta, float *c,
                   size_t ldc)
{
    // The native bf16 tiles (AVX512-BF16, AMX: gemm_bf16.h) where this
    // table has a set the process can run; bp_prepacked is the table's
    // fp32 panels, already rounded (rounding again changes nothing).
    // Every other table takes the exact fallback: fp32 products of the
    // rounded operands.
    if (cdt == MHSA_BF16 && mhsa_gemm_bf16_native(k)) {
        mhsa_sgemm_bf16(k, s, trans_a, trans_b, m, n, kdim, alpha, a, lda, b,
                        bdt, ldb, bp_prepacked, beta, c, ldc);
        return;
    }
    sgemm_driver(k, s, trans_a, trans_b, m, n, kdim, alpha, a, lda, b, bdt,
                 ldb, bp_prepacked, beta, NULL, c, ldc, cdt == MHSA_BF16);
}

int mhsa_sgemm_folds_bias(const mhsa_kernels *k, mhsa_dtype cdt)
{
    return !(cdt == MHSA_BF16 && mhsa_gemm_bf16_native(k));
}

void mhsa_sgemm_bias(const mhsa_kernels *k, mhsa_dtype cdt,
                     const mhsa_gemm_scratch *s, int trans_a, int trans_b,
                     size_t m, size_t n, size_t kdim, float alpha,
                     const float *a, size_t lda, const void *b,
                     mhsa_dtype bdt, size_t ldb, const float *bp_prepacked,
                     const float *bias, float *c, size_t ldc)
{
    sgemm_driver(k, s, trans_a, trans_b, m, n, kdim, alpha, a, lda, b, bdt,
                 ldb, bp_prepacked, 0.0f, bias, c, ldc, cdt == MHSA_BF16);
}

// Rows [lo, hi) of n that thread t of nt streams: equal shares in whole
// groups of 8 rows (the tiles' row groups), so two threads read the same
// bytes (576 rows: 288 each, where 64-row chunks gave 320 and 256). A
// row's bits never depend on which call or tile computes it (kernels.h),
// so neither do they on this split.
static void row_share(size_t n, int t, int nt, size_t *lo, size_t *hi)
{
    size_t groups = (n + 7) / 8;
    size_t g0 = groups * (size_t)t / (size_t)nt;
    size_t g1 = groups * (size_t)(t + 1) / (size_t)nt;
    *lo = g0 * 8 < n ? g0 * 8 : n;
    *hi = g1 * 8 < n ? g1 * 8 : n;
}

// The threads for n rows of d: mhsa__threads' work threshold, counted in
// 64-row pieces.
static int gemv_threads(const mhsa_gemm_scratch *s, size_t n, size_t d)
{
    return mhsa__threads(s->max_threads, 2.0 * (double)n * (double)d,
                         (n + 63) / 64);
}

// n rows of W (stored as wdt) times x: the table's gemv_n, or gemv_n16 for
// 16-bit rows.
static void gemv_n_dt(const mhsa_kernels *k, size_t n, size_t d,
                      const void *w, mhsa_dtype wdt, size_t ldw,
                      const float *x, float *y, float beta)
{
    if (wdt == MHSA_F32)
        k->gemv_n(n, d, w, ldw, x, y, beta);
    else
        k->gemv_n16(n, d, w, ldw, wdt, x, y, beta);
}

void mhsa_gemv_rows(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                    size_t n, size_t d, const float *w, size_t ldw,
                    const float *x, float *y, float beta)
{
    mhsa_gemv_rows_dt(k, s, n, d, w, MHSA_F32, ldw, x, y, beta);
}

void mhsa_gemv_rows_dt(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                       size_t n, size_t d, const void *w, mhsa_dtype wdt,
                       size_t ldw, const float *x, float *y, float beta)
{
    size_t es = mhsa_dtype_size(wdt);
    int nt = gemv_threads(s, n, d);
    if (nt <= 1) {   // no parallel region below the threshold
        gemv_n_dt(k, n, d, w, wdt, ldw, x, y, beta);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        mhsa_fpstate fp = mhsa__fp_enter_team();
        size_t lo, hi;
        row_share(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        if (hi > lo)
            gemv_n_dt(k, hi - lo, d, (const char *)w + lo * ldw * es, wdt,
                      ldw, x, y + lo, beta);
        mhsa__fp_leave_team(fp);
    }
}

// A thread's share of mhsa_gemv_rows_16m (mhsa__team_run).
enum { CB = 64 };   // W rows per kv_dot call when y is added to
typedef struct rows16m_ctx {
    const mhsa_kernels *k;
    size_t m, n, d;
    const void *w;
    mhsa_dtype wdt;
    size_t ldw;
    const float *x;
    size_t ldx;
    float *y;
    size_t ldy;
    float beta;
} rows16m_ctx;

static void rows16m_body(void *p)
{
    const rows16m_ctx *c = p;
    const mhsa_kernels *k = c->k;
    size_t m = c->m, d = c->d, ldw = c->ldw, ldx = c->ldx, ldy = c->ldy;
    size_t es = mhsa_dtype_size(c->wdt);
    const float *x = c->x;
    float *y = c->y, beta = c->beta;
    size_t lo, hi;
    row_share(c->n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
    const char *w0 = (const char *)c->w;
    if (beta == 0.0f && hi > lo) {   // straight into y
        k->kv_dot(m, hi - lo, d, x, ldx, w0 + lo * ldw * es, ldw, c->wdt,
                  y + lo, ldy);
    } else {
        float t[MHSA_FEW_ROWS_16 * CB];
        for (size_t j = lo; j < hi; j += CB) {
            size_t cb = hi - j < CB ? hi - j : CB;
            k->kv_dot(m, cb, d, x, ldx, w0 + j * ldw * es, ldw, c->wdt, t,
                      cb);
            for (size_t r = 0; r < m; r++)
                for (size_t col = 0; col < cb; col++)
                    y[r * ldy + j + col] =
                        beta * y[r * ldy + j + col] + t[r * cb + col];
        }
    }
}

void mhsa_gemv_rows_16m(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                        size_t m, size_t n, size_t d, const void *w,
                        mhsa_dtype wdt, size_t ldw, const float *x,
                        size_t ldx, float *y, size_t ldy, float beta)
{
    int nt = mhsa__threads(s->max_threads,
                           2.0 * (double)m * (double)n * (double)d,
                           (n + 63) / 64);
    rows16m_ctx c = { k, m, n, d, w, wdt, ldw, x, ldx, y, ldy, beta };
    mhsa__team_run(nt, rows16m_body, &c);
}
