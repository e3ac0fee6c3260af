// block_outputs.h — everything one block computes for a test's inputs
// (forward y and attention weights, backward dx and the four gradients,
// and, for causal blocks, y again through the cache), so that two blocks,
// or one block at two thread counts, can be compared part by part.
#ifndef MHSA_TEST_BLOCK_OUTPUTS_H
#define MHSA_TEST_BLOCK_OUTPUTS_H

#include <stddef.h>

#include "mhsa.h"

struct rng;

// A block's weights as set_weights takes them, random within +-2/sqrt(D)
// (biases +-0.5), for tests that load the same weights into two blocks.
typedef struct block_weights {
    size_t nqkv, D;
    float *w_qkv, *b_qkv, *w_out, *b_out;
} block_weights;

block_weights block_weights_make(const mhsa_config *c, struct rng *r);
void block_weights_free(block_weights *w);
// mhsa_block_create that fails the test with mhsa_last_error().
mhsa_block *block_new(const mhsa_config *c);

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
