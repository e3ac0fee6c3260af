// blockutil.h — building random attention problems for the block tests.
#ifndef MHSA_TEST_BLOCKUTIL_H
#define MHSA_TEST_BLOCKUTIL_H

#include "mhsa.h"
#include "ref.h"
#include "util.h"

typedef struct problem {
    mhsa_config cfg;
    int B, T;
    float *w_qkv, *b_qkv, *w_out, *b_out;   // biases NULL when bias == 0
    float *x, *mask, *dy;                   // mask NULL when none
} problem;

enum mask_kind { MASK_NONE, MASK_RANDOM, MASK_DEAD_ROWS };

// Random weights (std ~ 1/sqrt(D)), inputs and dy in [-1, 1]; a mask with
// finite negatives and -INFINITY entries, or rows wholly -INFINITY.
void problem_make(problem *p, rng *r, int B, int T, int D, int H, int causal,
                  int bias, enum mask_kind mk);
void problem_free(problem *p);
mhsa_block *problem_block(const problem *p);   // ck_asserts on failure
ref_mha problem_ref(const problem *p);

#endif
