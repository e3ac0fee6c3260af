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

// What a binding runs for a group: forward+backward of `rows` rows of T
// tokens and targets, the loss divided by count (0: the model's own rule,
// loss 0 and no gradient), so that the groups' gradients add up to the
// batch's.
typedef mhsa_status (*mhsa__dp_rows_grad)(void *model, const int32_t *tokens,
                                          const int32_t *targets, int rows,
                                          int T, size_t count, float *loss);

struct mhsa_dp_binding {
    mhsa_dp_tensor *tensors;          // (n_tensors), filled by the bind
    int n_tensors;
    const int32_t *tokens, *targets;  // the step's whole batch (B, T)
    int B, T;
    size_t count;                     // its counted targets
    mhsa__dp_rows_grad rows_grad;
    void *model;
    const char *who;                  // the bind, in messages
};

// *out = a binding of `model` (called `who` in messages) with room for
// n_tensors tensors, for the bind to fill; *m with the given buffers and
// norm_lanes, its tensors the binding's and its group_grad the binding's
// group by rows_grad. MHSA_ERR_NO_MEMORY naming who.
mhsa_status mhsa__dp_bind(const char *who, void *model, int n_tensors,
                          mhsa__dp_rows_grad rows_grad, float *param,
                          float *grad, size_t n_params, int norm_lanes,
                          mhsa_dp_model *m, mhsa_dp_binding **out);

#endif
