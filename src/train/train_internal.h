// train_internal.h — what the files of src/train share.
#ifndef MHSA_TRAIN_INTERNAL_H
#define MHSA_TRAIN_INTERNAL_H

#include "core/rng.h"   // mhsa__splitmix64
#include "mhsa_train.h"

// Validates an optimiser config; fn names the public caller in the error.
mhsa_status mhsa__optim_check(const mhsa_optim_config *c, const char *fn);
// What a model's step fn checks first: its model (called `what` in the
// message) is not NULL, then mhsa__optim_check(cfg, fn).
mhsa_status mhsa__optim_check_step(const char *fn, const void *model,
                                   const char *what,
                                   const mhsa_optim_config *cfg);
// The factor on every gradient of a step whose global gradient norm is
// norm: clip_norm / (norm + 1e-6) when a positive clip_norm is exceeded
// (torch's clip_grad_norm_), else 1.
float mhsa__clip_scale(const mhsa_optim_config *cfg, double norm);

// One tensor's slice [off, off + n) of a model's flat buffers; decay: 1
// when weight decay applies (matrices).
typedef struct mhsa__slice {
    size_t off, n;
    int decay;
} mhsa__slice;

// The step every model takes once its gradients are in: clip by the
// global gradient norm `norm` (which the model sums in its own order),
// count the step (*step + 1), then mhsa_optim_update each tensor
// slice(ctx, k), k in [0, n_tensors), of the flat buffers param, grad and
// the moments m, v. *grad_norm (optional) = norm. cfg must have passed
// mhsa__optim_check.
mhsa_status mhsa__optim_step(const mhsa_optim_config *cfg, double norm,
                             int64_t *step, float *param, const float *grad,
                             float *m, float *v, int n_tensors,
                             mhsa__slice (*slice)(const void *ctx, int k),
                             const void *ctx, float *grad_norm);

// x (n) uniform in [-a, a), the same bits on every platform.
void     mhsa__fill_uniform(uint64_t *s, float *x, size_t n, float a);
// mhsa_cross_entropy with the mean taken over `count` counted rows instead
// of this call's own (0: its own, the same bits as mhsa_cross_entropy): the
// loss and dlogits of rows that are one part of a larger batch, so that the
// parts' losses and gradients add up to the batch's. count below this call's
// counted rows: MHSA_ERR_INVALID_ARG.
mhsa_status mhsa__cross_entropy_over(int n, int V, const float *logits,
                                     const int32_t *targets, size_t count,
                                     float *loss, float *row_loss,
                                     float *dlogits);

// mhsa_lm_forward whose loss (and so the following backward's gradients)
// is normalised by `count` counted positions of a larger batch that these B
// rows are part of; 0 = their own count, exactly mhsa_lm_forward.
mhsa_status mhsa__lm_forward_over(mhsa_lm *lm, const int32_t *tokens,
                                  const int32_t *targets, int B, int T,
                                  size_t count, float *loss, float *pos_loss);

// The model's flat parameter and gradient buffers (mhsa_lm_n_params floats
// each, the tensors back to back in mhsa_lm_get_tensor order): what the
// data-parallel trainer (src/train/dp/) reads, updates and reduces.
void mhsa__lm_flat(mhsa_lm *lm, float **param, float **grad);

// Token ids: ids[0..n) within [lo, V) (targets: lo = -1, ignored rows);
// MHSA_ERR_INVALID_ARG naming fn, what and the first id outside.
mhsa_status mhsa__check_ids(const char *fn, const char *what,
                            const int32_t *ids, size_t n, int lo, int V);
// A batch of B rows of T tokens: both >= 1 (INVALID_ARG), B <= max_batch
// and T <= max_T (SHAPE; max_T_name is the config field that set it).
mhsa_status mhsa__check_batch(const char *fn, int B, int T, int max_batch,
                              int max_T, const char *max_T_name);

#endif
