// softmax_row.h — the softmax_row (kernels.h) of a row whose maximum came
// out -inf, shared by the ISAs' kernels: every entry blocked (-inf) gives
// a row of 0; a NaN among them (the maximum skipped it) a row of NaN.
#ifndef MHSA_KERNELS_SOFTMAX_ROW_H
#define MHSA_KERNELS_SOFTMAX_ROW_H

#include <math.h>
#include <stddef.h>

static inline void mhsa_softmax_row_no_max(size_t n, const float *x,
                                           float *y)
{
    int nan_seen = 0;
    for (size_t j = 0; j < n; j++)
        nan_seen |= x[j] != x[j];
    for (size_t j = 0; j < n; j++)
        y[j] = nan_seen ? NAN : 0.0f;
}

#endif
