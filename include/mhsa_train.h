/* mhsa_train — a tiny attention language model on top of the mhsa block,
 * its training loop pieces, and the toy tasks of the mhsa-train demo.
 *
 * The model ("lm"):
 *   x      = tok_emb[token] + pos_emb[position]          (B, T, D)
 *   y      = mhsa block, causal, with biases              (B, T, D)
 *   logits = y @ lm_head.weight^T + lm_head.bias          (B, T, V)
 *   loss   = mean over the counted positions of
 *            -log_softmax(logits)[target]
 * A target of -1 marks a position that is not counted (no loss, no
 * gradient). There is no residual path and no normalisation: the block
 * alone has to carry the information, which is the point of the demo.
 *
 * Parameters live in one flat fp32 buffer owned by the model; the model is
 * the only source of truth and copies the block's part into the block at
 * every forward. All buffers (activations, gradients, optimiser moments,
 * GEMM scratch) are allocated by mhsa_lm_create: forward, backward, step and
 * attention never allocate.
 *
 * Determinism: every reduction runs in a fixed order (the GEMM driver never
 * splits K by thread count; sums over rows run sequentially), so the same
 * calls give the same bits with 1 or 2 OpenMP threads.
 *
 * The kernels (ISA) are those active when the model is created; call
 * mhsa_select_isa first if you want to force one.
 *
 * Errors follow mhsa.h: a failing call returns a status, leaves what the
 * caller passed unchanged, and mhsa_last_error() names the bad argument.
 */
#ifndef MHSA_TRAIN_H
#define MHSA_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "mhsa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Cross-entropy ------------------------------------------------------ */

/* Mean cross-entropy of n rows of logits (n, V) against targets (n) in
 * [-1, V); rows with target -1 are not counted. Uses a stable log-softmax
 * (max subtracted before exp, sums in double).
 * loss:     out, the mean over counted rows (0 when no row counts).
 * row_loss: optional out (n): each row's loss, 0 for uncounted rows.
 * dlogits:  optional out (n, V): d loss / d logits = (softmax - onehot) /
 *           counted, 0 rows for uncounted rows.
 * Errors: NULL logits/targets/loss, n < 1 or V < 1, a target outside
 * [-1, V): MHSA_ERR_INVALID_ARG. */
mhsa_status mhsa_cross_entropy(int n, int V, const float *logits,
                               const int32_t *targets, float *loss,
                               float *row_loss, float *dlogits);

/* ---- Optimisers --------------------------------------------------------- */

typedef enum mhsa_optim_kind {
    MHSA_OPTIM_ADAMW = 0,  /* Loshchilov & Hutter, decoupled weight decay */
    MHSA_OPTIM_SGD         /* p -= lr * (g + weight_decay * p) */
} mhsa_optim_kind;

typedef struct mhsa_optim_config {
    mhsa_optim_kind kind;
    float lr;            /* learning rate, > 0 */
    float beta1, beta2;  /* AdamW moment decays, in [0, 1) */
    float eps;           /* AdamW denominator epsilon, > 0 */
    float weight_decay;  /* >= 0; only applied to matrices (rank 2) */
    float clip_norm;     /* > 0: clip gradients to this global L2 norm;
                            0: no clipping */
} mhsa_optim_config;

/* The defaults for a kind: lr 1e-3 (AdamW) or 1e-1 (SGD), beta1 0.9,
 * beta2 0.999, eps 1e-8, weight_decay 0, clip_norm 0. */
mhsa_optim_config mhsa_optim_defaults(mhsa_optim_kind kind);

/* One update of one tensor of n parameters, the building block of
 * mhsa_lm_step. step is the 1-based number of this update (AdamW bias
 * correction). g is multiplied by grad_scale first (1, or the clipping
 * factor). decay: 1 to apply weight decay to this tensor. m and v (n) are
 * the AdamW moments (zero before the first step); SGD does not use them (may
 * be NULL). AdamW, as in PyTorch's torch.optim.AdamW:
 *   p -= lr * weight_decay * p
 *   m  = beta1 * m + (1 - beta1) * g
 *   v  = beta2 * v + (1 - beta2) * g * g
 *   p -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + eps)
 * Errors: NULL cfg/p/g (or m/v for AdamW), step < 1, a config value out of
 * range: MHSA_ERR_INVALID_ARG. */
mhsa_status mhsa_optim_update(const mhsa_optim_config *cfg, int64_t step,
                              size_t n, float *p, const float *g, float *m,
                              float *v, float grad_scale, int decay);

/* ---- The model ---------------------------------------------------------- */

typedef struct mhsa_lm_config {
    int vocab;        /* V >= 1 */
    int d_model;      /* D >= 1 */
    int n_heads;      /* H >= 1, D % H == 0 */
    int max_seq_len;  /* largest T >= 1 (rows of pos_emb) */
    int max_batch;    /* largest B >= 1 */
    /* The block's attention variant (mhsa_config's fields of the same
     * names; 0 for each: plain multi-head attention, as before). With
     * n_kv_heads = Hkv, attn.in_proj_weight is ((H + 2*Hkv)*D/H, D). */
    int   n_kv_heads;        /* Hkv >= 0, H % Hkv == 0 */
    int   rope_dim;
    float rope_theta;
    int   rope_interleaved;
    int   window;
} mhsa_lm_config;

typedef struct mhsa_lm mhsa_lm;

/* Creates a model with all parameters zero (call mhsa_lm_init_random) and
 * every buffer it will ever need. Errors: cfg/out NULL or a size < 1,
 * n_kv_heads < 0: MHSA_ERR_INVALID_ARG; D % H != 0 or H % n_kv_heads != 0:
 * MHSA_ERR_SHAPE; the other attention fields as mhsa_block_create checks
 * them; out of memory: MHSA_ERR_NO_MEMORY. */
mhsa_status mhsa_lm_create(const mhsa_lm_config *cfg, mhsa_lm **out);
void        mhsa_lm_destroy(mhsa_lm *lm);   /* NULL is a no-op */

/* Initialises every parameter deterministically from seed (the same bits on
 * every platform) and resets the optimiser state: embeddings uniform in
 * [-1, 1), the block Xavier-uniform with zero biases
 * (mhsa_block_init_random), lm_head.weight uniform in [-1/sqrt(D),
 * 1/sqrt(D)) as PyTorch's nn.Linear, lm_head.bias zero. */
mhsa_status mhsa_lm_init_random(mhsa_lm *lm, uint64_t seed);

/* Forward and loss. tokens (B, T) in [0, V); targets (B, T) in [-1, V)
 * (-1: not counted). loss: out, mean over counted positions. pos_loss:
 * optional out (B, T), each position's loss (0 where not counted). The
 * tokens and targets are copied, so the caller may reuse its buffers before
 * mhsa_lm_backward. Errors: NULL tokens/targets/loss, B outside
 * [1, max_batch], T outside [1, max_seq_len], a token or target out of
 * range: MHSA_ERR_INVALID_ARG or MHSA_ERR_SHAPE; errors of mhsa_forward
 * pass through. */
mhsa_status mhsa_lm_forward(mhsa_lm *lm, const int32_t *tokens,
                            const int32_t *targets, int B, int T,
                            float *loss, float *pos_loss);

/* Backward of the last mhsa_lm_forward: OVERWRITES every gradient with
 * d loss / d parameter (no accumulation across calls). MHSA_ERR_STATE if
 * there is no forward to differentiate (none yet, or mhsa_lm_attention ran
 * since). */
mhsa_status mhsa_lm_backward(mhsa_lm *lm);

/* One optimiser step over all parameters with the current gradients:
 * optional clipping by global norm (factor clip_norm / (norm + 1e-6) when
 * norm > clip_norm, as torch.nn.utils.clip_grad_norm_), then
 * mhsa_optim_update on each tensor in a fixed order, weight decay on the
 * rank-2 tensors (embeddings and weight matrices) only. grad_norm: optional
 * out, the global L2 norm before clipping. Errors: NULL lm/cfg or a bad
 * config: MHSA_ERR_INVALID_ARG (nothing updated). */
mhsa_status mhsa_lm_step(mhsa_lm *lm, const mhsa_optim_config *cfg,
                         float *grad_norm);

/* Per-head attention weights of one sequence: tokens (T) -> attn (H, T, T),
 * attn[(h*T + i)*T + j] = weight of key j for query i in head h (0 above
 * the diagonal: the model is causal). It reuses the forward buffers, so a
 * following mhsa_lm_backward returns MHSA_ERR_STATE. */
mhsa_status mhsa_lm_attention(mhsa_lm *lm, const int32_t *tokens, int T,
                              float *attn);

/* The configuration the model was created with; NULL for NULL. */
const mhsa_lm_config *mhsa_lm_get_config(const mhsa_lm *lm);

/* ---- Parameter tensors (for saving, loading, inspection, tests) --------- */

typedef struct mhsa_lm_tensor {
    const char *name;  /* PyTorch-style: "tok_emb.weight", "pos_emb.weight",
                          "attn.in_proj_weight", "attn.in_proj_bias",
                          "attn.out_proj.weight", "attn.out_proj.bias",
                          "lm_head.weight", "lm_head.bias" */
    int rank;          /* 1 or 2 */
    int64_t shape[2];  /* shape[1] is 1 for rank 1 */
    size_t numel;
    float *data;       /* the model's parameter (writable; the next forward
                          uses what is there) */
    float *grad;       /* its gradient after mhsa_lm_backward */
} mhsa_lm_tensor;

/* Number of parameter tensors (8), and the i-th of them in the fixed order
 * above. MHSA_ERR_INVALID_ARG for NULL or i outside [0, n). */
int         mhsa_lm_n_tensors(const mhsa_lm *lm);
mhsa_status mhsa_lm_get_tensor(const mhsa_lm *lm, int i,
                               mhsa_lm_tensor *out);
/* Total number of parameters. 0 for NULL. */
size_t      mhsa_lm_n_params(const mhsa_lm *lm);

/* ---- Toy tasks ---------------------------------------------------------- */

typedef enum mhsa_task {
    /* each row is one random token repeated T + 1 times; every position
     * counts: "the next token equals this one" */
    MHSA_TASK_REPEAT = 0,
    /* each row is a random sequence of h = T / 2 tokens repeated with period
     * h; only positions t >= h - 1, whose next token already appeared h
     * positions back, count (the others are unpredictable by construction);
     * needs T >= 2 */
    MHSA_TASK_INDUCTION
} mhsa_task;

/* Fills tokens (B, T) and targets (B, T) with a batch of the task. Tokens
 * are drawn uniformly from [0, V) with splitmix64, advancing *rng_state, so
 * a run is reproducible from its seed on every platform. targets[b, t] is
 * the token that follows tokens[b, t] (or -1 where not counted). Errors:
 * NULL pointers, B/T/V < 1, T < 2 for induction, an unknown task:
 * MHSA_ERR_INVALID_ARG. */
mhsa_status mhsa_task_batch(mhsa_task task, uint64_t *rng_state, int B, int T,
                            int V, int32_t *tokens, int32_t *targets);

/* "repeat", "induction"; "unknown" for other values. */
const char *mhsa_task_name(mhsa_task task);

#ifdef __cplusplus
}
#endif

#endif /* MHSA_TRAIN_H */
