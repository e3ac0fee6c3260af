// dp_lm.h — the synthetic-task model (mhsa_lm) as a dp_model: its flat
// buffers and tensors, and the forward+backward of one group of the batch.
#ifndef MHSA_DP_LM_H
#define MHSA_DP_LM_H

#include "dp.h"

enum { DP_LM_MAX_TENSORS = 16 };

typedef struct dp_lm {
    mhsa_lm *lm;
    dp_tensor tensors[DP_LM_MAX_TENSORS];
    dp_batch batch;   // the step's whole batch
} dp_lm;

// Fills *a and *m for lm (a must stay where it is: m->ctx points to it).
mhsa_status dp_lm_bind(dp_lm *a, mhsa_lm *lm, dp_model *m);

// The batch of the next dp_step; its counted targets are the normaliser of
// every group. The arrays are read by the step, not copied.
void dp_lm_set_batch(dp_lm *a, const int32_t *tokens, const int32_t *targets,
                     int B, int T);

#endif
