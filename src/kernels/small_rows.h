// small_rows.h — the keys each query row of a small attention tile sees,
// shared by the x86 attn_small and attn_small_bwd kernels (contract in
// kernels.h), whose lanes compare a key index with the row's ends.
#ifndef MHSA_KERNELS_SMALL_ROWS_H
#define MHSA_KERNELS_SMALL_ROWS_H

#include <stddef.h>

#include "kernels/kernels.h"

// For r < tq: hi[r] = one past the last key row r sees by
// mhsa_mask_view_range (a float, exact for these small counts, for the
// lanes' compares; left as it is for a row that sees no key), *hmax the
// largest. Returns 0 when a row's keys start past key 0 (a window the
// tiles do not handle: the caller falls back), else 1. Inlined into each
// of a kernel's specializations, as the loop it replaces was.
static inline __attribute__((always_inline)) int
mhsa_small_rows_hi(const mhsa_mask_view *mv, size_t tq, size_t n, float *hi,
                   size_t *hmax)
{
    for (size_t r = 0; r < tq; r++) {
        size_t lo, h;
        mhsa_mask_view_range(mv, r, n, &lo, &h);
        if (lo == h)   // sees no key
            continue;
        if (lo != 0)   // a window that cuts the first keys
            return 0;
        hi[r] = (float)h;
        *hmax = h > *hmax ? h : *hmax;
    }
    return 1;
}

// For r < tq: [lo[r], hi[r]) = the keys row r sees by
// mhsa_mask_view_range, as floats (exact for these small counts, for the
// lanes' compares); the rows from tq on are left as they are.
static inline __attribute__((always_inline)) void
mhsa_small_rows_range(const mhsa_mask_view *mv, size_t tq, size_t n,
                      float *lo, float *hi)
{
    for (size_t r = 0; r < tq; r++) {
        size_t l, h;
        mhsa_mask_view_range(mv, r, n, &l, &h);
        lo[r] = (float)l;
        hi[r] = (float)h;
    }
}

#endif
