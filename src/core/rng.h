// rng.h — splitmix64 (Steele, Lea & Flood 2014, "Fast splittable
// pseudorandom number generators"): one 64-bit stream that gives the same
// numbers on every platform, for training (train/rng.c) and for sampling
// tokens (nn/sample.c), which must draw the same tokens for the same seed.
#ifndef MHSA_CORE_RNG_H
#define MHSA_CORE_RNG_H

#include <stdint.h>

// The next 64 random bits of the stream *s.
uint64_t mhsa__splitmix64(uint64_t *s);

#endif
