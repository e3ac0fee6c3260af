// rng.c — the random numbers of training: splitmix64 (Steele, Lea & Flood
// 2014, "Fast splittable pseudorandom number generators"), the same stream
// on every platform, and uniform floats drawn from it without libm, so
// initial weights, batches and samples are the same bits everywhere.
#include "train_internal.h"

uint64_t mhsa__splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

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
