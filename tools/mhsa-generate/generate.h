// generate.h — the mhsa-generate command as a function, so that tests run
// it in-process (no exec; also under qemu-user).
#ifndef MHSA_GENERATE_H
#define MHSA_GENERATE_H

#include <stdint.h>

// Picks the next token from logits (V): greedy (the first largest) when
// temperature is 0, else a draw from softmax(logits / temperature) over the
// top_k largest (all when top_k is 0 or >= V; ties broken by index), with
// one splitmix64 draw from *rng. Deterministic: the same logits and state
// give the same token on every thread count and platform.
int sample_token(const float *logits, int V, float temperature, int top_k,
                 uint64_t *rng, int *order);

int mhsa_generate_cli(int argc, char **argv);

#endif
