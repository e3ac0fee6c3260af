// train_internal.h — what the files of src/train share.
#ifndef MHSA_TRAIN_INTERNAL_H
#define MHSA_TRAIN_INTERNAL_H

#include "mhsa_train.h"

// Validates an optimiser config; fn names the public caller in the error.
mhsa_status mhsa__optim_check(const mhsa_optim_config *c, const char *fn);

// splitmix64: the next 64 random bits of the stream *s (rng.c).
uint64_t mhsa__splitmix64(uint64_t *s);
// x (n) uniform in [-a, a), the same bits on every platform.
void     mhsa__fill_uniform(uint64_t *s, float *x, size_t n, float a);

#endif
