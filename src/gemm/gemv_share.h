// gemv_share.h — one thread's share of a one-row product, for callers that
// run several steps of a token in one parallel region of their own
// (api/cached_step.c, the one-row MLPs of src/nn and src/models/llama).
#ifndef MHSA_GEMV_SHARE_H
#define MHSA_GEMV_SHARE_H

#include "kernels/kernels.h"

// Rows [*lo, *hi) of n for the calling thread of the enclosing team (all
// of them outside a region): equal shares in whole groups of 8 rows (the
// gemv tiles' row groups), so the threads read the same bytes.
void mhsa__gemv_my_rows(size_t n, size_t *lo, size_t *hi);
// The same in whole groups of g rows.
void mhsa__rows_share(size_t n, size_t g, size_t *lo, size_t *hi);

// y[j] = [b[j] +] [y[j] +] sum_i W[j][i] x[i] for this thread's rows j of
// the n x d matrix W stored as wdt (gemv_n, or gemv_n16 for 16-bit rows):
// the bias b (or NULL) is copied in first, then the product added to it;
// with acc (and no b) the product is added to y as it is. Each row sums
// alone (kernels.h), so the bits are mhsa_gemv_rows_dt's whatever the
// team. Returns the rows it wrote in *lo, *hi.
void mhsa__gemv_share(const mhsa_kernels *k, size_t n, size_t d,
                      const void *w, mhsa_dtype wdt, const float *b, int acc,
                      const float *x, float *y, size_t *lo, size_t *hi);

#endif
