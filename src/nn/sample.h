// sample.h — the next token from a row of logits: greedy, or drawn from a
// temperature softmax over the top k, cut to the top-p nucleus and by
// min-p, with one draw of a seeded splitmix64 stream (core/rng.h). The
// public sampler (mhsa_model.h, models/sampler.c) stands on it; with top_p
// 1 and min_p 0 it is mhsa-generate's sampler of before, token for token
// and draw for draw.
#ifndef MHSA_NN_SAMPLE_H
#define MHSA_NN_SAMPLE_H

#include <stdint.h>

// Picks the next token from logits (V):
//  - temperature <= 0: greedy, the first largest (no draw);
//  - else the candidates are the top_k largest (all when top_k is 0 or
//    >= V), best first (higher logit, then lower index), with weights
//    w_i = exp(logit_i / temperature - logit_0 / temperature). top_p in
//    (0, 1) keeps the shortest prefix whose weights reach top_p of their
//    sum (at least one); min_p in (0, 1] then keeps those with w_i >=
//    min_p (w_0 = 1); the token is drawn from what is kept by one
//    splitmix64 draw from *rng, u = (bits >> 11) 2^-53 * sum of the kept
//    weights, the first candidate whose running sum exceeds u.
// order is scratch of V ints (order[0..k) holds the candidates, best
// first, after a draw). Every sum runs in the candidates' order in
// double, so the token depends only on the logits and the state: the same
// on every thread count and platform. O(V log k) comparisons, O(k) exp;
// NaN logits give an unspecified (but deterministic) token.
int mhsa__sample_token(const float *logits, int V, float temperature,
                       int top_k, float top_p, float min_p, uint64_t *rng,
                       int *order);

#endif
