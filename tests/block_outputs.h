// block_outputs.h — everything one block computes for a test's inputs
// (forward y and attention weights, backward dx and the four gradients,
// and, for causal blocks, y again through the cache), so that two blocks,
// or one block at two thread counts, can be compared part by part.
#ifndef MHSA_TEST_BLOCK_OUTPUTS_H
#define MHSA_TEST_BLOCK_OUTPUTS_H

#include <stddef.h>

#include "mhsa.h"

typedef struct block_outputs {
    float *y, *attn, *dx, *gw, *gb, *gwo, *gbo, *yc;
    size_t ny, nattn, ngw, ngb, ngwo, ngbo, nyc;   // nyc 0: not causal
} block_outputs;

// Runs blk on x (B, T, D) and dy at `threads` OpenMP threads. The cached
// pass (causal blocks) takes one sequence at a time in a cache of the
// block's max_seq_len: a prefill of 4 positions, then one token per call,
// or with mixed_steps alternately 2 and 1 (the last three one by one).
block_outputs block_outputs_run(const mhsa_block *blk, const float *x,
                                const float *dy, int B, int T,
                                int mixed_steps, int threads);
void block_outputs_free(block_outputs *o);
// Each part within tol (util.h's rel_err), or bitwise when tol is 0;
// what names the case in a failure.
void block_outputs_compare(const block_outputs *a, const block_outputs *b,
                           double tol, const char *what);

#endif
