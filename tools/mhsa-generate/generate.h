// generate.h — the mhsa-generate command as a function, so that tests run
// it in-process (no exec; also under qemu-user).
#ifndef MHSA_GENERATE_H
#define MHSA_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "mhsa.h"

// mhsa-generate's options (defaults: prompt "\n", n 200, top_k 40,
// temperature 0.8, seed 1, threads 0 = OpenMP's choice, isa auto,
// weight_dtype F32; GGUF models only: kv_dtype F32, ids 0, bench 0, ctx 0 =
// prompt + n).
typedef struct gen_args {
    const char *model, *prompt;   // model non-NULL and non-empty once parsed
    int n, top_k, threads;        // n in [0, 2^30], top_k in [0, 2^24],
                                  // threads 0 or in [1, 1024]
    float temperature;            // finite, >= 0
    uint64_t seed;
    mhsa_isa isa;                 // auto, scalar, avx2, avx512 or neon
    mhsa_dtype kv_dtype;          // --kv-dtype f32|f16|bf16
    mhsa_dtype weight_dtype;      // --weight-dtype f32|f16|bf16
    int ids, bench;               // --ids, --bench (flags without a value)
    int no_parse_special;         // --no-parse-special: the prompt's
                                  // special tokens' text is plain text
    int special;                  // --special: control tokens printed
    int ctx;                      // --ctx: cache positions, 0 or >= 1
    int gguf_only;                // --kv-dtype, --ctx or a flag above
                                  // was given
    int help;                     // --help or -h: nothing else is checked
} gen_args;

// Runs a GGUF model (gguf_generate.c): text (or --ids) to stdout, timings
// to stderr, or --bench's pp512/tg64 figures. Returns a CLI_* code.
int mhsa_generate_gguf(const gen_args *a);

// 1 when the file at path starts with GGUF's magic.
int mhsa_is_gguf(const char *path);

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

// Monotonic seconds; "mhsa-generate: <what>: <mhsa_last_error()>" on
// stderr, returning CLI_FAIL.
double gen_now_s(void);
int gen_fail(const char *what);

#endif
