// dp_gpt.h — the GPT (mhsa_gpt) as a dp_model: its flat buffers and
// tensors, and the forward+backward of one group of the batch. The
// counterpart of dp_lm.h for `mhsa-train --task text`.
#ifndef MHSA_DP_GPT_H
#define MHSA_DP_GPT_H

#include "dp.h"

typedef struct dp_gpt {
    mhsa_gpt *g;
    dp_tensor *tensors;   // (mhsa_gpt_n_tensors) malloc'd by dp_gpt_bind
    dp_batch batch;   // the step's whole batch
} dp_gpt;

// Fills *a and *m for g (a must stay where it is: m->ctx points to it).
// The GPT's max_batch must hold a group's rows. Release with dp_gpt_unbind.
// Errors: NULL arguments: MHSA_ERR_INVALID_ARG; MHSA_ERR_NO_MEMORY.
mhsa_status dp_gpt_bind(dp_gpt *a, mhsa_gpt *g, dp_model *m);
void dp_gpt_unbind(dp_gpt *a);   // a zeroed or unbound a is a no-op

// The batch of the next dp_step; its counted targets are the normaliser of
// every group. The arrays are read by the step, not copied.
void dp_gpt_set_batch(dp_gpt *a, const int32_t *tokens,
                      const int32_t *targets, int B, int T);

#endif
