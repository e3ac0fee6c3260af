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
MHSA_API mhsa_status mhsa_cross_entropy(int n, int V, const float *logits,
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
MHSA_API mhsa_optim_config mhsa_optim_defaults(mhsa_optim_kind kind);

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
MHSA_API mhsa_status mhsa_optim_update(const mhsa_optim_config *cfg, int64_t step,
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
    int   compute_dtype;     /* MHSA_F32 (0) or MHSA_BF16: the block's and
                                the head's products in bf16, fp32
                                accumulation (mhsa_config.compute_dtype);
                                parameters and optimiser state fp32 */
} mhsa_lm_config;

typedef struct mhsa_lm mhsa_lm;

/* Creates a model with all parameters zero (call mhsa_lm_init_random) and
 * every buffer it will ever need. Errors: cfg/out NULL or a size < 1,
 * n_kv_heads < 0: MHSA_ERR_INVALID_ARG; D % H != 0 or H % n_kv_heads != 0:
 * MHSA_ERR_SHAPE; the other attention fields as mhsa_block_create checks
 * them; out of memory: MHSA_ERR_NO_MEMORY. */
MHSA_API mhsa_status mhsa_lm_create(const mhsa_lm_config *cfg, mhsa_lm **out);
MHSA_API void        mhsa_lm_destroy(mhsa_lm *lm);   /* NULL is a no-op */

/* Initialises every parameter deterministically from seed (the same bits on
 * every platform) and resets the optimiser state: embeddings uniform in
 * [-1, 1), the block Xavier-uniform with zero biases
 * (mhsa_block_init_random), lm_head.weight uniform in [-1/sqrt(D),
 * 1/sqrt(D)) as PyTorch's nn.Linear, lm_head.bias zero. */
MHSA_API mhsa_status mhsa_lm_init_random(mhsa_lm *lm, uint64_t seed);

/* Forward and loss. tokens (B, T) in [0, V); targets (B, T) in [-1, V)
 * (-1: not counted). loss: out, mean over counted positions. pos_loss:
 * optional out (B, T), each position's loss (0 where not counted). The
 * tokens and targets are copied, so the caller may reuse its buffers before
 * mhsa_lm_backward. Errors: NULL tokens/targets/loss, B outside
 * [1, max_batch], T outside [1, max_seq_len], a token or target out of
 * range: MHSA_ERR_INVALID_ARG or MHSA_ERR_SHAPE; errors of mhsa_forward
 * pass through. */
MHSA_API mhsa_status mhsa_lm_forward(mhsa_lm *lm, const int32_t *tokens,
                                     const int32_t *targets, int B, int T,
                                     float *loss, float *pos_loss);

/* Backward of the last mhsa_lm_forward: OVERWRITES every gradient with
 * d loss / d parameter (no accumulation across calls). MHSA_ERR_STATE if
 * there is no forward to differentiate (none yet, or mhsa_lm_attention ran
 * since). */
MHSA_API mhsa_status mhsa_lm_backward(mhsa_lm *lm);

/* One optimiser step over all parameters with the current gradients:
 * optional clipping by global norm (factor clip_norm / (norm + 1e-6) when
 * norm > clip_norm, as torch.nn.utils.clip_grad_norm_), then
 * mhsa_optim_update on each tensor in a fixed order, weight decay on the
 * rank-2 tensors (embeddings and weight matrices) only. grad_norm: optional
 * out, the global L2 norm before clipping. Errors: NULL lm/cfg or a bad
 * config: MHSA_ERR_INVALID_ARG (nothing updated). */
MHSA_API mhsa_status mhsa_lm_step(mhsa_lm *lm, const mhsa_optim_config *cfg,
                                  float *grad_norm);

/* Per-head attention weights of one sequence: tokens (T) -> attn (H, T, T),
 * attn[(h*T + i)*T + j] = weight of key j for query i in head h (0 above
 * the diagonal: the model is causal). It reuses the forward buffers, so a
 * following mhsa_lm_backward returns MHSA_ERR_STATE. */
MHSA_API mhsa_status mhsa_lm_attention(mhsa_lm *lm, const int32_t *tokens, int T,
                                       float *attn);

/* The configuration the model was created with; NULL for NULL. */
MHSA_API const mhsa_lm_config *mhsa_lm_get_config(const mhsa_lm *lm);

/* Saves the parameters to a safetensors file, each tensor as F32 under its
 * name (mhsa_lm_get_tensor), with no metadata: the state_dict of the
 * PyTorch model of the same shape. The file is written beside path,
 * fsync'd and renamed over it. Errors: NULL arguments:
 * MHSA_ERR_INVALID_ARG; MHSA_ERR_IO; MHSA_ERR_UNSUPPORTED (built without
 * safetensors). */
MHSA_API mhsa_status mhsa_lm_save(const mhsa_lm *lm, const char *path);

/* Loads every parameter tensor of lm from such a file (F32, F16 or BF16,
 * each of lm's shape). A missing tensor or one of another shape:
 * MHSA_ERR_FORMAT naming it; MHSA_ERR_IO (cannot open). On any failure lm
 * is unchanged. */
MHSA_API mhsa_status mhsa_lm_load(mhsa_lm *lm, const char *path);

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
MHSA_API int         mhsa_lm_n_tensors(const mhsa_lm *lm);
MHSA_API mhsa_status mhsa_lm_get_tensor(const mhsa_lm *lm, int i,
                                        mhsa_lm_tensor *out);
/* Total number of parameters. 0 for NULL. */
MHSA_API size_t      mhsa_lm_n_params(const mhsa_lm *lm);

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
MHSA_API mhsa_status mhsa_task_batch(mhsa_task task, uint64_t *rng_state, int B, int T,
                                     int V, int32_t *tokens, int32_t *targets);

/* "repeat", "induction"; "unknown" for other values. */
MHSA_API const char *mhsa_task_name(mhsa_task task);

/* ---- GPT: transformer blocks on the attention block -------------------- */

/* A GPT-2 style decoder ("the lesson's tiny GPT"), with N = B*T rows:
 *   x      = wte[token] + wpe[t]              (N, D) (no wpe with RoPE)
 *   for each of the n_layer blocks, pre-norm:
 *     x    = x + attn(ln_1(x))                 one causal mhsa_block
 *     x    = x + c_proj(gelu(c_fc(ln_2(x))))   MLP, hidden 4D, GELU (tanh)
 *   logits = ln_f(x) @ lm_head.weight^T        (N, V), no bias
 *   loss   = sum over counted positions of -log_softmax(logits)[target],
 *            divided by a normaliser (the count, unless the caller gives one)
 * LayerNorms have weight and bias (eps 1e-5); every linear layer has a bias
 * except lm_head. Parameters, gradients and AdamW moments live in flat
 * buffers owned by the model, tensors back to back in mhsa_gpt_get_tensor
 * order; attention runs in mhsa_block (one per layer, causal, biases), the
 * other matrix products in the library's packed SGEMM. Every buffer is
 * allocated by mhsa_gpt_create: forward, backward and step never allocate.
 * Results are the same bits for any number of OpenMP threads. */

typedef struct mhsa_gpt_config {
    int vocab;           /* V >= 1 (256 for bytes) */
    int n_layer;         /* L >= 1 */
    int n_embd;          /* D >= 1 */
    int n_head;          /* H >= 1, D % H == 0 */
    int block_size;      /* largest T >= 1 (rows of wpe) */
    int max_batch;       /* largest B >= 1 of a forward */
    int rope_dim;        /* 0: learned positions (wpe.weight); R > 0: no wpe,
                            rotary embedding of R features of every query
                            and key head (mhsa_config.rope_dim: even, <= D/H) */
    int tie_embeddings;  /* 1: no lm_head.weight, the head is wte.weight */
    int no_proj;         /* 1: the attention has no output projection
                            (c_proj): its heads' outputs, concatenated, are
                            the block's output */
    int compute_dtype;   /* MHSA_F32 (0) or MHSA_BF16: every matrix product
                            (the blocks' and the model's own: MLP, head and
                            their backward) in bf16 with fp32 accumulation
                            (mhsa_config.compute_dtype); parameters,
                            gradients and AdamW moments stay fp32, and the
                            checkpoint format does not change (it is not
                            stored: a run chooses it) */
    int weight_dtype;    /* MHSA_F32 (0), MHSA_F16 or MHSA_BF16: how the
                            forward stores the matrices (every rank-2
                            tensor: wte, wpe, the attention's (in its
                            blocks, mhsa_config.weight_dtype), the MLP's and
                            lm_head), rounded to nearest even (F16 beyond
                            +-65504: +-inf) from the fp32 parameters at
                            every mhsa_gpt_forward and at a cache's first
                            mhsa_gpt_forward_cached; LayerNorms and biases
                            stay fp32. The products then read the 16-bit
                            values (half the bytes per decoded token) in
                            fp32 arithmetic: the logits equal, within 1e-4,
                            an MHSA_F32 model whose matrices hold the
                            rounded values. A 16-bit model is for inference:
                            mhsa_gpt_backward and mhsa_gpt_step refuse it
                            (MHSA_ERR_UNSUPPORTED), training keeps fp32
                            weights, and it holds no gradients or moments
                            (mhsa_gpt_grads, _moment1, _moment2 and the
                            tensors' grad are NULL; with_optim in
                            mhsa_gpt_save / mhsa_gpt_load:
                            MHSA_ERR_UNSUPPORTED). mhsa_gpt_params stay the
                            fp32 values
                            they were set to (a checkpoint saves them), and
                            the checkpoint format does not change */
} mhsa_gpt_config;

typedef struct mhsa_gpt mhsa_gpt;

/* Creates a model with every parameter zero (call mhsa_gpt_init_random or
 * mhsa_gpt_load) and every buffer it will need. Errors: cfg/out NULL or a
 * size < 1, rope_dim negative, odd or > D/H, tie_embeddings/no_proj not 0
 * or 1, compute_dtype or weight_dtype not one of their values:
 * MHSA_ERR_INVALID_ARG naming the field; D % H != 0: MHSA_ERR_SHAPE;
 * out of memory or sizes overflowing: MHSA_ERR_NO_MEMORY. */
MHSA_API mhsa_status mhsa_gpt_create(const mhsa_gpt_config *cfg, mhsa_gpt **out);
MHSA_API void        mhsa_gpt_destroy(mhsa_gpt *g);   /* NULL is a no-op */
MHSA_API const mhsa_gpt_config *mhsa_gpt_get_config(const mhsa_gpt *g); /* NULL: NULL */
/* Bytes of the weights a forward reads: the blocks' (mhsa_block_weight_bytes)
 * and the model's other matrices in weight_dtype, its LayerNorms and biases
 * in fp32; about half of MHSA_F32's with F16 or BF16. (The fp32 parameters
 * are held besides, and an MHSA_F32 model's gradients and moments; a 16-bit
 * model has none.) 0 for NULL. */
MHSA_API size_t mhsa_gpt_weight_bytes(const mhsa_gpt *g);

/* GPT-2's initialisation, deterministic from seed and the same bits on
 * every platform (uniform draws with GPT-2's standard deviations, so no
 * libm is involved): matrices and embeddings std 0.02, the residual
 * projections (attn.c_proj, mlp.c_proj) 0.02 / sqrt(2 n_layer), biases 0,
 * LayerNorm weights 1. Resets the optimiser (moments 0, step 0). */
MHSA_API mhsa_status mhsa_gpt_init_random(mhsa_gpt *g, uint64_t seed);

/* Forward and loss. tokens (B, T) in [0, V). targets (B, T) in [-1, V)
 * (-1: not counted) or NULL for logits only (then loss may be NULL and
 * mhsa_gpt_backward has nothing to differentiate). loss = (sum of the
 * counted positions' losses) / norm, where norm = the number of counted
 * positions when norm <= 0 (the mean); a caller splitting a batch over
 * several forwards passes the whole batch's count, so that the gradients
 * of the parts add up to the gradient of the whole. The tokens and targets
 * are copied. Errors: NULL g/tokens, B outside [1, max_batch], T outside
 * [1, block_size], a token or target out of range: MHSA_ERR_INVALID_ARG or
 * MHSA_ERR_SHAPE; errors of mhsa_forward pass through. */
MHSA_API mhsa_status mhsa_gpt_forward(mhsa_gpt *g, const int32_t *tokens,
                                      const int32_t *targets, int B, int T,
                                      double norm, float *loss);
/* The logits (B, T, V) of the last forward, row-major; valid until the next
 * forward or backward (the backward overwrites them). NULL for NULL. */
MHSA_API const float *mhsa_gpt_logits(const mhsa_gpt *g);

/* Backward of the last mhsa_gpt_forward with targets: OVERWRITES every
 * gradient with d loss / d parameter. MHSA_ERR_STATE when there is no such
 * forward (none yet, targets NULL, or another call used the buffers since);
 * MHSA_ERR_UNSUPPORTED for a model with a 16-bit weight_dtype. */
MHSA_API mhsa_status mhsa_gpt_backward(mhsa_gpt *g);

/* One optimiser step over the flat parameters with the flat gradients, as
 * mhsa_lm_step: optional clipping by the global L2 norm (summed in double
 * in parameter order), then mhsa_optim_update on each tensor in order, weight
 * decay on the rank-2 tensors (embeddings and weight matrices) only; the
 * step count advances by one. grad_norm: optional out, the norm before
 * clipping. Errors: NULL g, a bad cfg: MHSA_ERR_INVALID_ARG; a 16-bit
 * weight_dtype: MHSA_ERR_UNSUPPORTED (nothing updated). */
MHSA_API mhsa_status mhsa_gpt_step(mhsa_gpt *g, const mhsa_optim_config *cfg,
                                   float *grad_norm);

/* Learning rate of a warm-up then cosine schedule at 0-based step s:
 * lr_max * (s + 1) / warmup for s < warmup, then a cosine from lr_max down
 * to lr_min reached at step total - 1 (and kept after it). */
MHSA_API float mhsa_lr_cosine(int64_t s, int64_t warmup, int64_t total, float lr_max,
                              float lr_min);

/* ---- flat state (for data parallelism, checkpoints, tests) ---- */

/* Number of parameters, and the flat buffers of n_params floats each:
 * parameters, gradients, AdamW first and second moments (writable; a
 * caller combining gradients of several models writes the sum into
 * mhsa_gpt_grads before mhsa_gpt_step). NULL/0 for NULL; the last three
 * NULL for a model with a 16-bit weight_dtype. */
MHSA_API size_t mhsa_gpt_n_params(const mhsa_gpt *g);
MHSA_API float *mhsa_gpt_params(mhsa_gpt *g);
MHSA_API float *mhsa_gpt_grads(mhsa_gpt *g);
MHSA_API float *mhsa_gpt_moment1(mhsa_gpt *g);
MHSA_API float *mhsa_gpt_moment2(mhsa_gpt *g);
/* Optimiser steps taken so far (the AdamW bias correction); set by a
 * checkpoint loader. -1 for NULL; set: MHSA_ERR_INVALID_ARG for step < 0. */
MHSA_API int64_t     mhsa_gpt_get_step(const mhsa_gpt *g);
MHSA_API mhsa_status mhsa_gpt_set_step(mhsa_gpt *g, int64_t step);

typedef struct mhsa_gpt_tensor {
    const char *name;   /* "wte.weight", "wpe.weight", "h.0.ln_1.weight",
                           "h.0.ln_1.bias", "h.0.attn.c_q.weight",
                           "h.0.attn.c_k.weight", "h.0.attn.c_v.weight",
                           "h.0.attn.c_q.bias", ".c_k.bias", ".c_v.bias",
                           "h.0.attn.c_proj.weight", "h.0.attn.c_proj.bias",
                           "h.0.ln_2.weight", "h.0.ln_2.bias",
                           "h.0.mlp.c_fc.weight", "h.0.mlp.c_fc.bias",
                           "h.0.mlp.c_proj.weight", "h.0.mlp.c_proj.bias",
                           ... "ln_f.weight", "ln_f.bias", "lm_head.weight";
                           without wpe (RoPE), attn.c_proj (no_proj) or
                           lm_head (tied) when the config says so */
    int rank;           /* 1 or 2 */
    int64_t shape[2];   /* shape[1] is 1 for rank 1 */
    size_t numel;
    size_t offset;      /* of its first element in the flat buffers */
    float *data;        /* = mhsa_gpt_params(g) + offset */
    float *grad;        /* = mhsa_gpt_grads(g) + offset */
    int decay;          /* 1: weight decay applies (rank 2) */
} mhsa_gpt_tensor;

/* Number of parameter tensors and the i-th of them, in flat order.
 * MHSA_ERR_INVALID_ARG for NULL or i outside [0, n). */
MHSA_API int         mhsa_gpt_n_tensors(const mhsa_gpt *g);
MHSA_API mhsa_status mhsa_gpt_get_tensor(const mhsa_gpt *g, int i,
                                         mhsa_gpt_tensor *out);

/* Per-head attention weights of layer `layer` on one sequence: tokens (T)
 * -> attn (H, T, T) as in mhsa_lm_attention. It reuses the forward buffers
 * (a following mhsa_gpt_backward returns MHSA_ERR_STATE). */
MHSA_API mhsa_status mhsa_gpt_attention(mhsa_gpt *g, int layer, const int32_t *tokens,
                                        int T, float *attn);

/* ---- checkpoints (safetensors) ---- */

/* One __metadata__ entry of a checkpoint: UTF-8 key and value. */
typedef struct mhsa_meta {
    const char *key, *value;
} mhsa_meta;

/* Writes the parameters under their names (F32) with the configuration in
 * __metadata__ ("mhsa.gpt.n_layer", ...), plus, with with_optim, the AdamW
 * moments as tensors "optim.m" and "optim.v" (n_params each) and the step
 * ("mhsa.gpt.step"), plus the caller's n_meta entries (keys must not start
 * with "mhsa.gpt." or be "format"). The file is written beside path,
 * fsync'd and renamed over it: path holds the old file or the complete new
 * one, never a part. Errors: MHSA_ERR_INVALID_ARG, MHSA_ERR_IO,
 * MHSA_ERR_UNSUPPORTED (built without safetensors). */
MHSA_API mhsa_status mhsa_gpt_save(const mhsa_gpt *g, const char *path, int with_optim,
                                   const mhsa_meta *meta, size_t n_meta);

/* Reads a checkpoint's configuration (vocab, n_layer, n_embd, n_head,
 * block_size, rope_dim, tie_embeddings, no_proj; max_batch is set to 1).
 * Errors: MHSA_ERR_IO (cannot open), MHSA_ERR_FORMAT (not a valid file, or
 * no GPT configuration in it, naming the missing key). */
MHSA_API mhsa_status mhsa_gpt_read_config(const char *path, mhsa_gpt_config *cfg);

/* A metadata value asked of mhsa_gpt_read_meta: key in; value out,
 * NUL-terminated, and present 1 when the file has the key ("" and 0 when
 * it has not). */
typedef struct mhsa_meta_value {
    const char *key;
    char value[128];
    int present;
} mhsa_meta_value;

/* Reads the __metadata__ values of want[0..n_want) from a checkpoint (those
 * mhsa_gpt_save wrote from its meta entries, or any other key of the
 * file). Errors: NULL path, want or a key: MHSA_ERR_INVALID_ARG;
 * MHSA_ERR_IO (cannot open); MHSA_ERR_FORMAT (not a valid file, or a value
 * of 128 bytes or more, naming its key). On any error want is unchanged. */
MHSA_API mhsa_status mhsa_gpt_read_meta(const char *path, mhsa_meta_value *want,
                                        size_t n_want);

/* Loads a checkpoint into g: every parameter tensor (F32, F16 or BF16) and,
 * with with_optim, the moments and step (a file without them: FORMAT).
 * The file's configuration must equal g's (max_batch aside): else
 * MHSA_ERR_FORMAT naming the first field that differs; a missing tensor or
 * one of another shape: MHSA_ERR_FORMAT naming it. On any failure g is
 * unchanged. */
MHSA_API mhsa_status mhsa_gpt_load(mhsa_gpt *g, const char *path, int with_optim);

/* ---- generation with the KV cache ---- */

typedef struct mhsa_gpt_cache mhsa_gpt_cache;

/* A KV cache per layer for one sequence of up to capacity positions
 * (1 <= capacity <= block_size, else MHSA_ERR_INVALID_ARG / SHAPE). It
 * belongs to g. */
MHSA_API mhsa_status mhsa_gpt_cache_create(const mhsa_gpt *g, int capacity,
                                           mhsa_gpt_cache **out);
MHSA_API void        mhsa_gpt_cache_destroy(mhsa_gpt_cache *c);  /* NULL: no-op */
MHSA_API void        mhsa_gpt_cache_reset(mhsa_gpt_cache *c);    /* NULL: no-op */
MHSA_API int         mhsa_gpt_cache_len(const mhsa_gpt_cache *c); /* 0 for NULL */

/* Appends tokens (n) at positions len .. len+n-1 and writes the logits (V)
 * of the last one: a prefill (n > 1, matrix products in the packed SGEMM)
 * or one decoding step (n = 1, matrix-vector products), attention through
 * mhsa_forward_cached in every layer. The logits equal, to fp32 rounding,
 * the last row of one mhsa_gpt_forward over the whole sequence.
 * The attention weights (and a 16-bit model's other matrices) are taken
 * from the parameters at the first call after creation or a reset (the
 * cached keys and values belong to them): change parameters between a
 * reset and the next call, not in between.
 * len + n > capacity: MHSA_ERR_SHAPE and nothing changes. It reuses g's
 * forward buffers (a following mhsa_gpt_backward returns MHSA_ERR_STATE). */
MHSA_API mhsa_status mhsa_gpt_forward_cached(mhsa_gpt *g, mhsa_gpt_cache *c,
                                             const int32_t *tokens, int n,
                                             float *logits);

/* ---- byte-level text -------------------------------------------------- */

/* A corpus of bytes (tokens 0..255) split into a training part and a
 * held-out tail for validation. */
typedef struct mhsa_text mhsa_text;

/* Loads path: a regular file, or a directory whose regular files (symbolic
 * links followed) with no '.' in their name are concatenated in strcmp
 * order of their names (so a fortune directory's .dat indexes and .u8
 * links are skipped). The last floor(n * val_fraction) bytes are the
 * validation split. Errors: NULL arguments or val_fraction outside [0, 1):
 * MHSA_ERR_INVALID_ARG; a path that cannot be opened or read:
 * MHSA_ERR_IO naming it; no bytes at all: MHSA_ERR_FORMAT ("empty"). */
MHSA_API mhsa_status mhsa_text_load(const char *path, double val_fraction,
                                    mhsa_text **out);
MHSA_API void        mhsa_text_destroy(mhsa_text *t);   /* NULL is a no-op */
/* Bytes of the training (split 0) or validation (split 1) part; the
 * pointer to all bytes (training part first). 0 / NULL for NULL. */
MHSA_API size_t         mhsa_text_len(const mhsa_text *t, int split);
MHSA_API const uint8_t *mhsa_text_bytes(const mhsa_text *t);

/* A random training batch: for each of the B rows, in order, an offset
 * o = splitmix64(rng) % (n_train - T) (splitmix64 as in mhsa_task_batch,
 * advancing *rng once per row); tokens[b] = bytes[o .. o+T), targets[b] =
 * bytes[o+1 .. o+T]. Errors: NULL arguments, B or T < 1: INVALID_ARG; a
 * training part shorter than T + 1 bytes: MHSA_ERR_SHAPE. */
MHSA_API mhsa_status mhsa_text_batch(const mhsa_text *t, uint64_t *rng, int B, int T,
                                     int32_t *tokens, int32_t *targets);

/* The validation windows of length T: window i holds validation bytes
 * [i*T, i*T + T] (tokens the first T, targets the last T), for i <
 * (n_val - 1) / T; every window is used once, no randomness. */
MHSA_API size_t      mhsa_text_val_windows(const mhsa_text *t, int T);
/* Windows first .. first+B-1 (fewer at the end) into tokens/targets (B, T);
 * *rows gets how many. Errors: NULL arguments, B or T < 1, first past the
 * last window: MHSA_ERR_INVALID_ARG. */
MHSA_API mhsa_status mhsa_text_val_batch(const mhsa_text *t, size_t first, int B,
                                         int T, int32_t *tokens, int32_t *targets,
                                         int *rows);

/* ---- Data-parallel training ---------------------------------------------
 *
 * Training that gives the same bits on any number of ranks (processes), and
 * checkpoints that do not depend on it either.
 *
 * The global batch of every step is cut into G equal groups (G fixed for
 * the run, mhsa-train's --grad-groups). Rank r of P (P divides G) computes
 * the gradients of groups [r G/P, (r+1) G/P), each normalised by the
 * counted positions of the whole batch, so that the groups' gradients add
 * up to the batch's. Their sum is then taken by one fixed tree whose
 * bracketing depends on G only (a node [lo, hi) splits at lo + the largest
 * power of two below hi - lo). One step:
 *
 *   1. every rank sums the whole tree nodes inside its groups
 *   2. reduce-scatter, as bytes: rank q receives from every rank the slice
 *      [off[q], off[q+1]) of its node sums (alltoallv), and finishes the
 *      tree over [0, G) on that slice: rank q now has the batch gradient of
 *      its shard of the parameters
 *   3. the gradient norm (for clipping) is the model's own double sum
 *      (mhsa_dp_model.norm_lanes), in parameter order: the running sums go
 *      from rank to rank (64 bytes each way) instead of being split into
 *      partial sums
 *   4. each rank updates its shard with mhsa_optim_update; the AdamW
 *      moments exist only for that shard (ZeRO stage 1)
 *   5. allgatherv of the updated shards: every rank has all parameters
 *   The groups' losses are gathered and summed by the same tree.
 *
 * Nothing in 1-5 depends on P but the shards' boundaries, and every
 * operation that sees those boundaries is elementwise. So the parameters
 * after any step are the same bits for every P that divides G, and with
 * G = 1 the same bits as mhsa_lm_forward/backward/step (one group with its
 * own count, the same norm, the same updates).
 *
 * The model is anything with a flat parameter buffer, a flat gradient
 * buffer and a forward+backward of one group (mhsa_dp_model): the
 * synthetic-task model (mhsa_lm, mhsa_dp_lm_bind) and the GPT (mhsa_gpt,
 * mhsa_dp_gpt_bind).
 *
 * Threads: one thread per rank calls the trainer (MPI_THREAD_FUNNELED);
 * the model and the tree sums use OpenMP inside. Steps allocate nothing. */

/* -- the transport: how the ranks exchange bytes --
 *
 * The trainer needs a handful of collective operations. They only ever
 * move bytes: every floating-point sum is done by the trainer itself, in
 * its fixed tree, never by the transport. That is the whole point:
 * MPI_Allreduce and MPI_Reduce leave the order of their sums to the MPI
 * library (and to the number of ranks), so their results change with both;
 * a byte copy cannot.
 *
 * Transports:
 *   mhsa_dp_comm_self()  one process, rank 0 of 1: copies or nothing
 *   mhsa-train's MPI transport (tools/mhsa-train/mpi_comm.c, only in its
 *                        mpi build): Open MPI, one rank per process
 *   the tests' P ranks as threads of one process (tests/train/dp_threads.c)
 *
 * Every operation is collective unless said otherwise: all ranks call it in
 * the same order with matching sizes. Sizes and offsets are in bytes.
 * Operations return 0, or -1 after setting mhsa_last_error (a transport
 * written outside the library sets it with mhsa_dp_comm_error; the MPI
 * transport's errors are fatal to the job instead: MPI's default
 * handler). */
typedef struct mhsa_dp_comm mhsa_dp_comm;

typedef struct mhsa_dp_comm_ops {
    /* Rank q receives scount[q] bytes from send + sdispl[q] of every rank;
     * this rank stores what rank q sent it at recv + rdispl[q] (rcount[q]
     * bytes, equal to q's scount[this rank]). */
    int (*alltoallv)(mhsa_dp_comm *c, const void *send, const size_t *scount,
                     const size_t *sdispl, void *recv, const size_t *rcount,
                     const size_t *rdispl);
    /* In place: every rank's own part is already at buf + displ[rank];
     * afterwards every rank q's part (count[q] bytes) is at buf + displ[q]
     * on every rank. */
    int (*allgatherv)(mhsa_dp_comm *c, void *buf, const size_t *count,
                      const size_t *displ);
    /* root's n bytes at buf to every rank's buf. */
    int (*bcast)(mhsa_dp_comm *c, void *buf, size_t n, int root);
    /* root receives rank q's count[q] bytes from its send at
     * buf + displ[q]; root's own part is already in place (its send is
     * ignored); buf is only used on root. */
    int (*gatherv)(mhsa_dp_comm *c, const void *send, void *buf,
                   const size_t *count, const size_t *displ, int root);
    /* Point to point (not collective): n bytes to / from one rank. */
    int (*send)(mhsa_dp_comm *c, const void *buf, size_t n, int to);
    int (*recv)(mhsa_dp_comm *c, void *buf, size_t n, int from);
    /* Ends every rank of the job with exit status `code` (does not
     * return); NULL when the transport has nothing to end but this
     * process. */
    void (*abort_job)(mhsa_dp_comm *c, int code);
    /* What to call the transport in messages ("mpi", "self", ...). */
    const char *name;
} mhsa_dp_comm_ops;

struct mhsa_dp_comm {
    const mhsa_dp_comm_ops *ops;
    int rank, size;   /* 0 <= rank < size */
    void *impl;       /* the transport's own state */
};

/* The single-process transport (a static object: never freed). */
MHSA_API mhsa_dp_comm *mhsa_dp_comm_self(void);

/* For a transport's operations: sets this thread's mhsa_last_error() to
 * msg and returns -1, the operations' failure (return
 * mhsa_dp_comm_error("...");). */
MHSA_API int mhsa_dp_comm_error(const char *msg);

/* -- the model: flat buffers and one group's forward+backward -- */

/* One parameter tensor, a slice of the flat buffer. */
typedef struct mhsa_dp_tensor {
    const char *name;   /* unique, as saved in checkpoints */
    int ndim;           /* 1 or 2 */
    size_t dims[2];
    size_t offset, numel;
    int decay;          /* 1: weight decay applies (matrices) */
} mhsa_dp_tensor;

typedef struct mhsa_dp_model {
    float *param;       /* (n_params) read by group_grad, written by steps */
    float *grad;        /* (n_params) overwritten by each group_grad */
    size_t n_params;
    const mhsa_dp_tensor *tensors;   /* tile [0, n_params) in order */
    int n_tensors;
    /* Forward and backward of group `group` of n_groups of the batch the
     * caller prepared for this step, with the loss normalised by the
     * counted positions of the whole batch. Overwrites grad; *loss is the
     * group's share of the batch's mean loss. */
    mhsa_status (*group_grad)(void *ctx, int group, int n_groups,
                              float *loss);
    void *ctx;
    /* How the model's own step sums the squared gradient norm, which the
     * trainer repeats so that G = 1 clips to the same bits: 0 or 1, one
     * running double sum in parameter order (mhsa_lm_step); 8, eight
     * interleaved double lanes (element i into lane i % 8) closed by
     * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) (mhsa_gpt_step). */
    int norm_lanes;
} mhsa_dp_model;

/* mhsa_lm and mhsa_gpt as mhsa_dp_models: a binding holds the model's
 * tensors as the trainer names them and the step's whole batch (B, T),
 * which every rank sets to the same tokens before each mhsa_dp_step; group
 * k of G is rows [k B/G, (k+1) B/G), its loss normalised by the counted
 * targets of the whole batch (with G = 1, the model's own forward). */
typedef struct mhsa_dp_binding mhsa_dp_binding;

/* *out = a binding of lm, and *m filled for mhsa_dp_create (m->ctx is the
 * binding; norm_lanes 1, mhsa_lm_step's one running sum). Release with
 * mhsa_dp_unbind once the trainer is destroyed. Errors: NULL arguments:
 * MHSA_ERR_INVALID_ARG; MHSA_ERR_NO_MEMORY. */
MHSA_API mhsa_status mhsa_dp_lm_bind(mhsa_lm *lm, mhsa_dp_model *m,
                                     mhsa_dp_binding **out);
/* The same for g (norm_lanes 8, mhsa_gpt_step's lanes). The GPT's
 * max_batch must hold a group's rows. Errors as mhsa_dp_lm_bind, and a
 * 16-bit weight_dtype: MHSA_ERR_UNSUPPORTED. */
MHSA_API mhsa_status mhsa_dp_gpt_bind(mhsa_gpt *g, mhsa_dp_model *m,
                                      mhsa_dp_binding **out);
/* The batch of the next mhsa_dp_step: B rows of T tokens and targets
 * (targets < 0 are not counted). The arrays are read by the step, not
 * copied. */
MHSA_API void mhsa_dp_set_batch(mhsa_dp_binding *b, const int32_t *tokens,
                                const int32_t *targets, int B, int T);
/* NULL is a no-op. */
MHSA_API void mhsa_dp_unbind(mhsa_dp_binding *b);

/* -- the trainer -- */

/* Seconds spent in each part of the steps so far (this rank). */
typedef struct mhsa_dp_stats {
    double compute;   /* group forward+backward */
    double wait;      /* for the slowest rank to finish its groups (a tiny
                         allgather before the reduce-scatter measures it) */
    double reduce;    /* node sums, reduce-scatter, tree, loss, norm */
    double update;    /* the optimiser on this rank's shard */
    double gather;    /* allgather of the updated parameters */
    int64_t steps;
} mhsa_dp_stats;

typedef struct mhsa_dp_trainer mhsa_dp_trainer;

/* A trainer for model m over comm with `groups` groups per batch and
 * optimiser `kind` (AdamW keeps moments for this rank's shard). comm and
 * the model must outlive the trainer. Errors: groups < 1, groups not a
 * multiple of the number of ranks, an inconsistent model:
 * MHSA_ERR_INVALID_ARG; no memory: MHSA_ERR_NO_MEMORY. */
MHSA_API mhsa_status mhsa_dp_create(const mhsa_dp_model *m, mhsa_dp_comm *comm,
                                    int groups, mhsa_optim_kind kind,
                                    mhsa_dp_trainer **out);
MHSA_API void mhsa_dp_destroy(mhsa_dp_trainer *dp);   /* NULL is a no-op */

/* Rank 0's parameters to every rank (collective). */
MHSA_API mhsa_status mhsa_dp_broadcast_params(mhsa_dp_trainer *dp);

/* One training step on the batch the model's group_grad sees
 * (collective). loss: out, the batch's mean loss; grad_norm: optional out,
 * the global L2 norm before clipping (computed only when asked or when
 * clipping). Errors: a bad cfg or another kind than at creation:
 * MHSA_ERR_INVALID_ARG; a failing group_grad: its status (the ranks then
 * disagree: end the job). */
MHSA_API mhsa_status mhsa_dp_step(mhsa_dp_trainer *dp,
                                  const mhsa_optim_config *cfg, float *loss,
                                  float *grad_norm);

/* Optimiser steps made (and restored by mhsa_dp_load); groups per batch;
 * the time per part; the transport. 0 / NULL for NULL. */
MHSA_API int64_t mhsa_dp_steps(const mhsa_dp_trainer *dp);
MHSA_API int     mhsa_dp_groups(const mhsa_dp_trainer *dp);
MHSA_API const mhsa_dp_stats *mhsa_dp_get_stats(const mhsa_dp_trainer *dp);
MHSA_API mhsa_dp_comm *mhsa_dp_get_comm(const mhsa_dp_trainer *dp);

/* Compares a hash of every rank's parameters (collective). MHSA_ERR_STATE
 * on every rank, naming the first rank that differs from rank 0, when they
 * are not all the same bits. */
MHSA_API mhsa_status mhsa_dp_verify(mhsa_dp_trainer *dp);

/* The optimiser state as one process would hold it, for a model whose own
 * checkpoints carry it (the GPT's mhsa_gpt_save / mhsa_gpt_load):
 * mhsa_dp_export_state gathers the AdamW moments (n_params each, parameter
 * order) into rank 0's m and v and gives it the step count (the others'
 * arguments are ignored); mhsa_dp_import_state makes rank 0's parameters
 * (the model's buffer), moments and step every rank's state (the others'
 * m and v are ignored). Both collective; with SGD the moments are zeros. */
MHSA_API mhsa_status mhsa_dp_export_state(mhsa_dp_trainer *dp, float *m,
                                          float *v, int64_t *step);
MHSA_API mhsa_status mhsa_dp_import_state(mhsa_dp_trainer *dp, const float *m,
                                          const float *v, int64_t step);

/* -- the trainer's checkpoints -- */

/* Checkpoint (collective): the parameters (their names), the AdamW moments
 * (flat "optim.m" and "optim.v", the layout of the GPT's own checkpoints)
 * gathered to rank 0, and in __metadata__ "mhsa.step", "mhsa.optim",
 * "mhsa.grad_groups" followed by meta[0..n_meta). Rank 0 writes a
 * temporary file, fsyncs it and renames it over path: a run killed at any
 * moment leaves the previous complete checkpoint. The file does not depend
 * on the number of ranks. Every rank returns rank 0's status. */
MHSA_API mhsa_status mhsa_dp_save(mhsa_dp_trainer *dp, const char *path,
                                  const mhsa_meta *meta, size_t n_meta);

/* Resumes from a mhsa_dp_save checkpoint (collective): rank 0 reads the
 * file and sends parameters, moments, step and the values of
 * want[0..n_want) (as mhsa_gpt_read_meta: "" and present 0 when the file
 * has no such key) to every rank. On any error (missing file, other
 * shapes, another optimiser) nothing changes and every rank returns the
 * status, rank 0's message naming the problem. */
MHSA_API mhsa_status mhsa_dp_load(mhsa_dp_trainer *dp, const char *path,
                                  mhsa_meta_value *want, size_t n_want);

#ifdef __cplusplus
}
#endif

#endif /* MHSA_TRAIN_H */
