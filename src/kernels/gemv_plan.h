// gemv_plan.h — the streaming plan of the one-row products gemv_n (fp32
// rows) and gemv_n16 (F16 / BF16 rows) (contracts in kernels.h), written
// once for the ISAs that build them from a register tile:
// src/{avx2,avx512,neon}/gemv_n.c and gemv_n16.c instantiate it with
// theirs. Static inline and forced inline, so it is compiled with the
// flags of the ISA file that includes it (never include it from baseline
// files: BUILD-NOTES, pitfalls).
//
// Decoding one token reads each weight matrix once, one FMA per element,
// so these run at the speed of memory (L3 or DRAM): what matters is how
// many independent sequential streams the core has in flight. Taking rows
// side by side (4 at a time, as before) reads 4 short streams that end
// every row (1152 bytes for a 16-bit row of 576): the hardware prefetchers
// barely train on them before they stop, and one row at a time is one
// stream, too few. So the n rows are cut into MHSA_GEMV_STREAMS equal
// runs of consecutive rows, and the tile takes one row from each run per
// step: that many long sequential streams, each a run of whole rows.
// Measured on Zen 3 (AMD EPYC, 1 thread, matrices from DRAM; the figures
// in docs/performance.md, "Measurements behind the code"): 6 streams read
// 576x576 .. 2048x2048 (and 49152x576, the head) faster than one plain
// sequential read of the same bytes, and faster than the tiles they
// replace (16-bit and fp32 alike); 4 and 8 streams come close, 16 fall
// back to a single stream's speed. The NEON and AVX-512 tiles follow the
// same plan unmeasured (no such hardware here: checked for their bits
// under qemu and SIMDe only).
//
// Bits: each row is one accumulator chain in the tile (the ISA's gemv_n
// order: its vector chunks in order, its tail, its reduction), whichever
// run or step it falls in, so a row's result depends on d only, and a
// 16-bit row gives the bits of gemv_n on the same row widened to fp32
// (test_kernel_gemv16.c checks both).
//
// The tile an ISA passes in (forced inline, so each call below with a
// constant row count and dtype becomes its own loop):
//   rows(R, d, a, stride, dt, x, y, ys, beta): for r < R (a constant: the
//     plan's MHSA_GEMV_STREAMS, 4, 2 or 1), row r at a + r * stride bytes
//     (d elements of dt), y[r * ys] = beta * y[r * ys] + row . x, y not
//     read when beta == 0.
#ifndef MHSA_GEMV_PLAN_H
#define MHSA_GEMV_PLAN_H

#include <stddef.h>

#include "kernels/kernels.h"

#define MHSA_GEMV_PLAN_INLINE static inline __attribute__((always_inline))

enum { MHSA_GEMV_STREAMS = 6 };

typedef void mhsa_gemv_rows_fn(size_t rows, size_t d, const char *a,
                               size_t stride, mhsa_dtype dt, const float *x,
                               float *y, size_t ys, float beta);

// y = beta*y + A x over n rows of A (row_bytes apart) stored as dt (a
// constant).
MHSA_GEMV_PLAN_INLINE void mhsa_gemv_plan(mhsa_gemv_rows_fn *rows, size_t n,
                                          size_t d, const char *a,
                                          size_t row_bytes, mhsa_dtype dt,
                                          const float *x, float *y,
                                          float beta)
{
    // Run s is rows [s*m, (s+1)*m); step t reads row s*m + t of each run.
    size_t m = n / MHSA_GEMV_STREAMS;
    for (size_t t = 0; t < m; t++)
        rows(MHSA_GEMV_STREAMS, d, a + t * row_bytes, m * row_bytes, dt, x,
             y + t, m, beta);
    // The last n % MHSA_GEMV_STREAMS rows, side by side.
    size_t j = MHSA_GEMV_STREAMS * m;
    if (j + 4 <= n) {
        rows(4, d, a + j * row_bytes, row_bytes, dt, x, y + j, 1, beta);
        j += 4;
    }
    if (j + 2 <= n) {
        rows(2, d, a + j * row_bytes, row_bytes, dt, x, y + j, 1, beta);
        j += 2;
    }
    if (j < n)
        rows(1, d, a + j * row_bytes, row_bytes, dt, x, y + j, 1, beta);
}

#endif
