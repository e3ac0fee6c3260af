// gpt_internal.h — the GPT model's struct, shared by its files: gpt.c
// (create, forward, backward, step), gpt_io.c (checkpoints) and
// gpt_cached.c (generation with the KV cache).
#ifndef MHSA_GPT_INTERNAL_H
#define MHSA_GPT_INTERNAL_H

#include "nn/layers.h"
#include "xent.h"
#include "core/alloc.h"
#include "core/status.h"
#include "mhsa_train.h"

// Offsets into the flat buffers of one layer's parameters. c_q, c_k, c_v
// weights lie back to back, and so do their biases, so that they are the
// block's fused w_qkv (3D, D) and b_qkv (3D) without a copy.
typedef struct gpt_layer_off {
    size_t ln1_w, ln1_b;
    size_t w_qkv, b_qkv;        // c_q.weight (then c_k, c_v); c_q.bias ...
    size_t w_proj, b_proj;      // attn.c_proj; unused with no_proj
    size_t ln2_w, ln2_b;
    size_t fc_w, fc_b;          // mlp.c_fc (4D, D), (4D)
    size_t mp_w, mp_b;          // mlp.c_proj (D, 4D), (D)
    size_t fc_s, mp_s;          // c_fc and c_proj weights in the store
} gpt_layer_off;

// Saved activations of one layer, each (N, width) for N = B*T rows.
typedef struct gpt_layer_acts {
    float *x;                   // (N, D) the residual stream entering
    float *ln1;                 // (N, D) ln_1(x), the block's input
    float *ln1_mean, *ln1_rstd; // (N)
    float *att;                 // (N, D) the block's output
    float *xmid;                // (N, D) x + att
    float *ln2;                 // (N, D)
    float *ln2_mean, *ln2_rstd; // (N)
    float *fch;                 // (N, 4D) c_fc output, before GELU; in
                                // training then gelu' at it (backward)
    float *fch_gelu;            // (N, 4D)
} gpt_layer_acts;

typedef struct gpt_tensor_info {
    const char *name;           // into names
    int rank;
    size_t rows, cols;          // cols 1 for rank 1
    size_t off;
} gpt_tensor_info;

struct mhsa_gpt {
    mhsa_gpt_config cfg;
    mhsa_dtype cdt;           // cfg.compute_dtype, for the model's own GEMMs
    mhsa_dtype wdt;           // cfg.weight_dtype, of the store below
    const mhsa_kernels *k;      // the ISA active at creation
    size_t V, L, D, Tm, Bm;

    // Attention: one block, workspace and gradient set per layer.
    mhsa_block **blk;
    mhsa_workspace **ws;
    mhsa_grads **bg;
    float *identity, *zeros;    // (D, D), (D): the fixed c_proj of no_proj

    // Parameters, gradients and AdamW moments: n_params floats each (a
    // 16-bit model: the parameters only, grad, m and v NULL).
    size_t n_params;
    float *param, *grad, *m, *v;
    int64_t step;
    int n_tensors;
    gpt_tensor_info *tensors;
    char *names;
    size_t wte, wpe, lnf_w, lnf_b, head;   // offsets; wpe unused with RoPE
    gpt_layer_off *lo;          // (L)

    // The store: the matrices the forward reads outside the blocks (wte,
    // wpe, c_fc, mlp.c_proj, lm_head), as wdt. With MHSA_F32 it is param
    // itself (the *_s offsets are the parameter offsets); with F16 / BF16
    // it is w16, rounded from param by mhsa__gpt_sync_weights.
    const void *store;
    void *w16;
    size_t wte_s, wpe_s, head_s;   // element offsets into the store
    size_t n16;                    // elements of w16 (0 with MHSA_F32)

    // Activations (sized for max_batch * block_size rows).
    gpt_layer_acts *la;         // (L)
    float *x_out;               // (N, D) residual after the last layer
    float *lnf, *lnf_mean, *lnf_rstd;   // (N, D), (N), (N)
    float *logits, *probs;      // (N, V); probs becomes dlogits
    float *row_loss;            // (N)
    float *dres, *dln;          // (N, D) backward
    float *dfch;                // (N, 4D) backward
    float *acts;                // the one allocation behind all of these
    int32_t *tokens, *targets;  // (N) copies of the last forward's
    mhsa_gemm_scratch gs;
    float *gemm_buf;

    int B, T;
    int have_forward;           // a forward with targets to differentiate
    float loss_scale;           // 1 / norm of that forward
};

// Pointer to the parameter (or gradient) at flat offset off.
static inline float *gpt_p(const mhsa_gpt *g, size_t off)
{
    return g->param + off;
}
static inline float *gpt_g(const mhsa_gpt *g, size_t off)
{
    return g->grad + off;
}

// The stored matrix at element offset s_off of the store.
static inline const void *gpt_s(const mhsa_gpt *g, size_t s_off)
{
    return (const char *)g->store + s_off * mhsa_dtype_size(g->wdt);
}

// With a 16-bit wdt: the store rounded from the parameters (a no-op with
// MHSA_F32, whose store is the parameters).
void mhsa__gpt_sync_weights(mhsa_gpt *g);

// The layer's attention weights into its block (the flat parameters are the
// source of truth; a copy and repack of 4 D^2 floats, small next to a step).
mhsa_status mhsa__gpt_sync_block(mhsa_gpt *g, size_t l);

// A layer's steps before and after its attention, and the model's end,
// shared by the training forward and the cached (generation) forward, on
// rows 0..N-1 of the layer's activations:
//   pre:  ln1 = ln_1(x)
//   post: xmid = x + att, ln2 = ln_2(xmid), fch = c_fc(ln2),
//         fch_gelu = gelu(fch), x_next = xmid + c_proj(fch_gelu); with
//         train, fch is then overwritten by gelu'(fch) for the backward
//   head: lnf = ln_f(x), logits = lnf lm_head^T   (x (N, D))
void mhsa__gpt_layer_pre(mhsa_gpt *g, size_t l, size_t N);
void mhsa__gpt_layer_post(mhsa_gpt *g, size_t l, size_t N, float *x_next,
                          int train);
void mhsa__gpt_head(mhsa_gpt *g, const float *x, size_t N);

#endif
