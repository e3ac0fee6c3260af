// dp.h — the data-parallel trainer's helpers inside the library. Its API
// (the transport, the model, the trainer, checkpoints, the mhsa_lm and
// mhsa_gpt adapters) is public: include/mhsa_train.h, "Data-parallel
// training", where the step and its bits are explained. The fixed tree is
// in dp_tree.h, the trainer's state in dp_internal.h.
#ifndef MHSA_DP_H
#define MHSA_DP_H

#include <stddef.h>
#include <stdint.h>

#include "mhsa_train.h"

// Sets *b to the arrays (read by the step, not copied) and counts their
// targets.
void mhsa__dp_batch_set(mhsa_dp_batch *b, const int32_t *tokens,
                        const int32_t *targets, int B, int T);

// A model over a mhsa_dp_batch (the adapters' bind): *m with the given
// buffers, tensors and norm_lanes, group_grad the group of *b (ctx) by
// b->rows_grad; rows_grad, model and who of *b set (its batch is the
// caller's). Every other field of *m 0.
typedef mhsa_status (*mhsa__dp_rows_grad)(void *, const int32_t *,
                                          const int32_t *, int, int, size_t,
                                          float *);
void mhsa__dp_model_set(mhsa_dp_model *m, float *param, float *grad,
                        size_t n_params, const mhsa_dp_tensor *tensors,
                        int n_tensors, int norm_lanes, mhsa_dp_batch *b,
                        void *model, const char *who,
                        mhsa__dp_rows_grad rows_grad);

#endif
