// bwd_delta.h — the first step of every attention backward: delta =
// rowsum(dO * O), each row's products summed in order from +0 in plain C.
// The tiled path (attn/tiles.c) and the scalar reference of the fused
// small backward (scalar/attn_small_bwd.c) both run it, whose bits must
// agree.
#ifndef MHSA_KERNELS_BWD_DELTA_H
#define MHSA_KERNELS_BWD_DELTA_H

#include <stddef.h>

// delta[r] = sum over d < dh of dout[r*lddo + d] * o[r*ldo + d], r < tq.
static inline void mhsa_bwd_delta(size_t tq, size_t dh, const float *o,
                                  size_t ldo, const float *dout, size_t lddo,
                                  float *delta)
{
    for (size_t r = 0; r < tq; r++) {
        const float *orow = o + r * ldo, *drow = dout + r * lddo;
        float sum = 0.0f;
        for (size_t d = 0; d < dh; d++)
            sum += drow[d] * orow[d];
        delta[r] = sum;
    }
}

#endif
