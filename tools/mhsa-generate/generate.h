// generate.h — the mhsa-generate command as a function, so that tests run
// it in-process (no exec; also under qemu-user).
#ifndef MHSA_GENERATE_H
#define MHSA_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "mhsa.h"

// mhsa-generate's options (defaults: prompt "\n", n 200, top_k 40,
// temperature 0.8, seed 1, threads 0 = OpenMP's choice, isa auto).
typedef struct gen_args {
    const char *model, *prompt;   // model non-NULL and non-empty once parsed
    int n, top_k, threads;        // n in [0, 2^30], top_k in [0, 2^24],
                                  // threads 0 or in [1, 1024]
    float temperature;            // finite, >= 0
    uint64_t seed;
    mhsa_isa isa;                 // auto, scalar, avx2, avx512 or neon
    int help;                     // --help or -h: nothing else is checked
} gen_args;

// Parses argv into *a (defaults first). Returns CLI_OK, or CLI_USAGE after
// writing one line naming the bad flag or value to err; "--help" sets
// a->help and returns CLI_OK.
int parse_gen_args(int argc, char **argv, gen_args *a, FILE *err);

// Picks the next token from logits (V): greedy (the first largest) when
// temperature is 0, else a draw from softmax(logits / temperature) over the
// top_k largest (all when top_k is 0 or >= V; ties broken by index), with
// one splitmix64 draw from *rng. Deterministic: the same logits and state
// give the same token on every thread count and platform.
int sample_token(const float *logits, int V, float temperature, int top_k,
                 uint64_t *rng, int *order);

int mhsa_generate_cli(int argc, char **argv);

#endif
