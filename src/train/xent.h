// xent.h — the loss of training: softmax cross-entropy over V classes
// (xent.c). It stands above the shared layers (nn/layers.h): only training
// needs it.
#ifndef MHSA_TRAIN_XENT_H
#define MHSA_TRAIN_XENT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

// probs (N, V) = softmax(logits) (N, V), then per row loss (N) =
// -log probs[target] (0 for target -1). Returns the sum of the row losses in
// row order, in double.
double mhsa__xent_forward(const mhsa_kernels *k, float *probs, float *loss,
                          const float *logits, const int32_t *targets,
                          size_t N, size_t V);
// In place: probs (N, V) becomes dlogits = (probs - onehot(target)) * scale
// (rows with target -1 become 0): the gradient of scale * sum of losses.
void mhsa__xent_backward(float *probs, const int32_t *targets, size_t N,
                         size_t V, float scale);

#endif
