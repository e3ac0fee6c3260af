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

// The tile set table k runs bf16 products with in this process, or NULL:
// the first of k->bf16 that the CPU and OS allow (AVX512_BF16; AMX-BF16
// with AVX512_BF16 and Linux's tile data permission, asked once) and that
// fits k's fp32 scratch, unless MHSA_BF16_TILES or mhsa__bf16_select
// chose otherwise. The test-only emulated AVX-512 table has emulated sets
// (t->emulated), which run anywhere.
const mhsa_bf16_tiles *mhsa_gemm_bf16_tiles(const mhsa_kernels *k);
// Whether "auto" takes the best runnable set t on a CPU with features f,
// by measurement (docs/performance.md, the bf16 rows of each machine): a
// set of AMX tiles, an emulated set, and AVX512-BF16 on AMD (Zen 4, Zen
// 5: vdpbf16ps at twice the fp32 FMA rate) yes; AVX512-BF16 on Intel
// without usable AMX (Sapphire and Emerald Rapids with AMX hidden) no:
// there vdpbf16ps gives no more products per cycle than fp32 FMAs and the
// tiles took 1.84x the exact fallback's time. Then auto is none.
int mhsa__bf16_auto_takes(const mhsa_cpu_features *f,
                          const mhsa_bf16_tiles *t);
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
// product takes the exact fallback), NULL or "auto" the best one where
// mhsa__bf16_auto_takes it. A set
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
