// gemm_bf16.h — the bf16-compute GEMM on a table's bf16 tiles (AMX,
// AVX512-BF16: kernels.h, mhsa_bf16_tiles), beside the fp32 driver.
//
//   C (m x n, ldc) = beta * C + bf16(alpha * op(A)) * bf16(op(B))
//
// op(A), op(B), the arguments and the scratch are mhsa_sgemm_dt's
// (gemm.h): B stored as F32, F16 or BF16, or B prepacked for the same
// table in fp32 (bp_prepacked, then b/ldb/trans_b unused). Both operands
// are rounded to bf16 (nearest even; alpha multiplied into A in fp32
// first, as the fp32 pack_a does) and the products accumulate in fp32 in
// the tiles' order (kernels.h). Work is split as in gemm.c: (MC row block,
// NC column chunk) tiles with sizes fixed by the shapes and the tile set's
// blocking, K never split and summed block after block in order, so the
// bits of C do not depend on the thread count. beta == 0 never reads C.
// The packed bf16 panels live in the caller's fp32 scratch (sized for the
// fp32 path: mhsa_gemm_a_floats(k) per thread, mhsa_gemm_b_floats(k, n)
// shared); a tile set whose blocking would not fit is never used.
#ifndef MHSA_GEMM_BF16_H
#define MHSA_GEMM_BF16_H

#include "core/cpu_features.h"
#include "gemm/gemm_scratch.h"

// The tile set table k runs bf16 products with in this process, or NULL
// for the exact fallback (fp32 products of the rounded operands): what
// mhsa__bf16_choice(k) chose.
const mhsa_bf16_tiles *mhsa_gemm_bf16_tiles(const mhsa_kernels *k);

// ---- the choice, and why ----------------------------------------------------
// MHSA_BF16_TILES (or mhsa__bf16_select) naming a set of k or "none" forces
// it. Otherwise ("auto"), among k's sets the CPU and OS allow (AVX512_BF16;
// AMX-BF16 with AVX512_BF16 and Linux's tile data permission, asked once)
// and that fit k's fp32 scratch:
//   - the test-only emulated sets (the emulated AVX-512 table): taken;
//   - a CPU in the table of measured CPUs (mhsa__bf16_table_row): its
//     row (a row naming a set k lacks counts as no row);
//   - no set: the fallback;
//   - any other CPU: a micro-benchmark at the first call for k (a few
//     milliseconds, single-threaded, once per process, under a lock), each
//     set against the fallback; the fastest set if mhsa__bf16_tiles_win,
//     else the fallback.
// The tiles and the fallback differ in their last bits (docs/api.md): on
// a CPU outside the table the bits follow that measurement, and
// MHSA_BF16_TILES pins them.

// A row of the table of measured CPUs: vendor (MHSA_CPU_*), family, models
// model_lo..model_hi, AVX512-BF16 and AMX-BF16 flags as avx512_bf16 and
// amx (0 or 1; -1 either), and take: "none", "avx512_bf16" or "amx_bf16".
typedef struct mhsa_bf16_row {
    const char *what;
    int vendor, family, model_lo, model_hi;
    int avx512_bf16, amx;
    const char *take;
} mhsa_bf16_row;

// The first row of the table that matches f, or NULL (then auto measures).
const mhsa_bf16_row *mhsa__bf16_table_row(const mhsa_cpu_features *f);

typedef enum mhsa_bf16_how {
    MHSA_BF16_FORCED_ENV,    // MHSA_BF16_TILES
    MHSA_BF16_FORCED_CALL,   // mhsa__bf16_select
    MHSA_BF16_NO_TILES,      // no set of k runs here
    MHSA_BF16_EMULATED,      // the test-only emulated set
    MHSA_BF16_TABLE,         // a row of the table
    MHSA_BF16_MEASURED,      // the micro-benchmark
} mhsa_bf16_how;

typedef struct mhsa_bf16_choice {
    const mhsa_bf16_tiles *tiles;   // what runs; NULL: the exact fallback
    mhsa_bf16_how how;
    const mhsa_bf16_row *row;       // MHSA_BF16_TABLE: the row
    const mhsa_bf16_tiles *timed;   // MHSA_BF16_MEASURED: the fastest set
    double ms_tiles, ms_fallback;   // MHSA_BF16_MEASURED: best trial times
} mhsa_bf16_choice;

// The choice for table k (above). Thread-safe; the first call for a table
// outside the table of measured CPUs may take a few milliseconds.
mhsa_bf16_choice mhsa__bf16_choice(const mhsa_kernels *k);
// The measured choice alone, whatever the table says (what auto takes on
// a CPU outside it): NO_TILES where k has no runnable set, else MEASURED,
// made at the first call for k's first runnable set and then remembered
// for the process (the test-only emulated sets are measured too, at a
// smaller shape; only tests ask).
mhsa_bf16_choice mhsa__bf16_measured_choice(const mhsa_kernels *k);
// Why, in one line for mhsa-info ("table: <row>", "measured: x ms vs y
// ms", "forced by MHSA_BF16_TILES=..."); snprintf's return.
int mhsa__bf16_explain(const mhsa_bf16_choice *c, char *buf, size_t n);

// The micro-benchmark: bf16(A) (m x kd) times B (kd x n) on set t against
// the exact fallback on k's fp32 micro-kernel, single-threaded, B packed
// once for each and A packed at every trial (as each call packs it); one
// warm-up round, then alternating trials, at least two, more while
// budget_ms lasts (at most 15). *ms_tiles, *ms_fallback: the best trial
// of each. 0, or -1 (no memory, or an empty shape).
int mhsa__bf16_measure(const mhsa_kernels *k, const mhsa_bf16_tiles *t,
                       size_t m, size_t n, size_t kd, double budget_ms,
                       double *ms_tiles, double *ms_fallback);
// Whether tiles timed ms_tiles beat the fallback timed ms_fallback by the
// margin auto asks (ties go to the fallback).
int mhsa__bf16_tiles_win(double ms_tiles, double ms_fallback);

// Nonzero when k has bf16 tiles this process can run (above): then
// mhsa_sgemm_bf16 may be called with k; otherwise the caller takes the
// exact fallback (fp32 products of the rounded operands).
int mhsa_gemm_bf16_native(const mhsa_kernels *k);

// The bf16 GEMM on mhsa_gemm_bf16_tiles(k), which must not be NULL (the
// caller checks mhsa_gemm_bf16_native; a call without tiles aborts).
// Call from outside any OpenMP region; it opens its own.
void mhsa_sgemm_bf16(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                     int trans_a, int trans_b, size_t m, size_t n,
                     size_t kdim, float alpha, const float *a, size_t lda,
                     const void *b, mhsa_dtype bdt, size_t ldb,
                     const float *bp_prepacked, float beta, float *c,
                     size_t ldc);

// Which tile set runs, process-wide: name "amx_bf16" or "avx512_bf16"
// prefers that set (where a table has it), "none" uses none (every bf16
// product takes the exact fallback), NULL or "auto" what auto chooses
// (mhsa__bf16_choice). A set
// that no table of this build can run here is MHSA_ERR_UNSUPPORTED (never
// an illegal instruction later), an unknown name MHSA_ERR_INVALID_ARG;
// either way the choice is unchanged. The environment variable
// MHSA_BF16_TILES sets the same at the first use (a value that cannot run
// here is ignored, as MHSA_ISA's are). Internal (tests, bench, tools).
mhsa_status mhsa__bf16_select(const char *name);
// The set mhsa__bf16_select / MHSA_BF16_TILES chose: "auto", "none",
// "amx_bf16" or "avx512_bf16".
const char *mhsa__bf16_selected(void);

// 1 when the CPU and OS allow t's instructions (t->needs; always for the
// emulated sets).
int mhsa_gemm_bf16_runnable(const mhsa_bf16_tiles *t);
// 1 when t's blocking fits k's fp32 scratch (A per thread, B for any n,
// fp32-prepacked B readable in t's depth steps); the driver never runs a
// set that does not.
int mhsa_gemm_bf16_fits(const mhsa_kernels *k, const mhsa_bf16_tiles *t);

// ---- single-threaded tile helpers for the attention loops ----------------
// gemm.h's mhsa_tile_* in bf16 on one tile set t (mhsa_gemm_bf16_tiles):
// whole blocks packed once at depth kdim (padded to t->kgran), then the
// micro-kernel over them, no KC blocking or threads. For a kdim within
// t->blocking.kc the bits equal mhsa_sgemm_bf16's (the same ukr calls on
// the same panels).

// bf16 elements (2 bytes each) that mhsa_tile_bf16_pack_a / _b write.
size_t mhsa_tile_bf16_a_elems(const mhsa_bf16_tiles *t, size_t m,
                              size_t kdim);
size_t mhsa_tile_bf16_b_elems(const mhsa_bf16_tiles *t, size_t kdim,
                              size_t n);
// All of an m x kdim op(A) as ceil(m/mr) panels: bf16(alpha * op(A)).
void mhsa_tile_bf16_pack_a(const mhsa_bf16_tiles *t, size_t m, size_t kdim,
                           const float *a, size_t lda, int trans, float alpha,
                           uint16_t *ap);
// All of a kdim x n op(B), stored as dt (F32, F16, BF16), as ceil(n/nr)
// panels.
void mhsa_tile_bf16_pack_b(const mhsa_bf16_tiles *t, size_t kdim, size_t n,
                           const void *b, mhsa_dtype dt, size_t ldb,
                           int trans, uint16_t *bp);
// Bracket a thread's mhsa_tile_bf16_gemm calls (AMX: load the tile
// configuration, then release the tiles; nothing for AVX512-BF16).
void mhsa_tile_bf16_begin(const mhsa_bf16_tiles *t);
void mhsa_tile_bf16_end(const mhsa_bf16_tiles *t);
// C (m x n) = beta * C + Ap Bp for blocks packed by the two above.
void mhsa_tile_bf16_gemm(const mhsa_bf16_tiles *t, size_t m, size_t n,
                         size_t kdim, const uint16_t *ap, const uint16_t *bp,
                         float *c, size_t ldc, float beta);

#endif
