// rng.c — the random numbers of training: uniform floats drawn without libm
// from splitmix64 (core/rng.h), the same stream on every platform, so
// initial weights, batches and samples are the same bits everywhere.
#include "train_internal.h"

// 24 random bits scaled exactly, then one multiply: every platform rounds
// the same.
void mhsa__fill_uniform(uint64_t *s, float *x, size_t n, float a)
{
    for (size_t i = 0; i < n; i++) {
        float u = (float)(mhsa__splitmix64(s) >> 40) *
                  (1.0f / 16777216.0f);
        x[i] = (2.0f * u - 1.0f) * a;
    }
}
