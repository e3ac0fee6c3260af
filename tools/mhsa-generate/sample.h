// sample.h — mhsa-generate's sampler: the next token from a row of logits,
// greedy or drawn from a temperature softmax over the top k, with a seeded
// splitmix64 stream. Shared by both model paths (generate.c, for GPT
// checkpoints, and gguf_generate.c).
#ifndef MHSA_GENERATE_SAMPLE_H
#define MHSA_GENERATE_SAMPLE_H

#include <stdint.h>

// Picks the next token from logits (V): greedy (the first largest) when
// temperature is 0, else a draw from softmax(logits / temperature) over the
// top_k largest (all when top_k is 0 or >= V; ties broken by index), with
// one splitmix64 draw from *rng. order is scratch of V ints. Deterministic:
// the same logits and state give the same token on every thread count and
// platform. O(V log k) comparisons to find and order the k largest (k = V
// included), then O(k) exp; NaN logits give an unspecified (but
// deterministic) token.
int sample_token(const float *logits, int V, float temperature, int top_k,
                 uint64_t *rng, int *order);

#endif
