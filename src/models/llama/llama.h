// llama.h — a pretrained Llama-architecture language model read from its
// GGUF file (llama.cpp's format), run for generation with a KV cache.
//
// The model (general.architecture = "llama", "qwen2", or "gemma3" below): x =
// token_embd[token]; per layer l
//   x = x + attention(rmsnorm(x) * attn_norm)      (mhsa_block: GQA, RoPE)
//   h = rmsnorm(x) * ffn_norm
//   x = x + (silu(h W_gate^T) * (h W_up^T)) W_down^T        (SwiGLU MLP)
// then logits = (rmsnorm(x) * output_norm) W_out^T, with W_out =
// token_embd when the file has no output.weight (tied embeddings). Every
// size comes from the file's <arch>.* metadata; nothing is hard-coded.
//
// The families differ only where a row of the loader's table of
// architectures says so (llama_load.c, as llama.cpp c392e50's
// llama-model.cpp builds them):
//  - llama: no biases; "normal" rope; rope_freqs.weight when the file has
//    it (Llama 3: pair i's angle p * theta^(-2i/R) divided by
//    rope_freqs[i] on every layer, as ggml_rope_ext's freq_factors).
//  - qwen2: biases on Q, K and V (blk.N.attn_q.bias, ...: required, added
//    before RoPE); NEOX rope.
//  - gemma3 (transformers' Gemma3ForCausalLM; llama.cpp's later gemma3
//    graph): x = token_embd[token] * sqrtf(d_model); per layer
//      x = x + rmsnorm(attention(rmsnorm(x) * attn_norm)) * post_attention_norm
//      x = x + rmsnorm(mlp(rmsnorm(x) * ffn_norm)) * post_ffw_norm
//    with each Q and K head RMSNormed (attn_q_norm, attn_k_norm, head_dim
//    wide) before NEOX RoPE, head_dim from attention.key_length (Q is
//    n_head * head_dim wide, not d_model), a GeGLU MLP (gelu_tanh(h
//    W_gate^T) * (h W_up^T)), and a sliding window of
//    attention.sliding_window keys with RoPE base 10000 on five layers of
//    every six (the sixth: full attention, the file's rope.freq_base). The
//    GGUF's norm weights already hold Gemma's 1 + w (llama.cpp's
//    converter adds the 1), so every norm is the plain rmsnorm(x) * w.
//
// RoPE pairing. For llama, llama.cpp's converter stores the rows of
// attn_q and attn_k permuted so that ggml's "normal" rope rotates adjacent
// pairs (2i, 2i+1) of each head; the blocks use the file's rows as they
// are with mhsa_config.rope_interleaved = 1, which is that same rotation.
// For qwen2 the rows are Hugging Face's, and ggml's NEOX rope rotates the
// pairs (i, i + R/2): rope_interleaved = 0.
//
// Weights are either kept as the file stores them (MHSA__WEIGHTS_FILE,
// below: the products computed on the file's quantized blocks), or
// dequantized to fp32 at load (gguf.h: every type it reads, bit for bit as
// ggml) and held as F32, F16 or BF16; in those modes the attention
// weights live in the layers' blocks, the rest in one allocation. The
// layers share one workspace (mhsa__workspace_rebind) and the model's
// activation buffers, so memory is the weights, one workspace, and each
// cache's K and V.
#ifndef MHSA_LLAMA_H
#define MHSA_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include "mhsa.h"

// The keys below are the "llama" family's; another family's are the same
// under its own prefix ("qwen2.block_count", ...).
typedef struct mhsa_llama_config {
    const char *arch;   // general.architecture: "llama", "qwen2" or
                        // "gemma3"
    int vocab;          // rows of token_embd
    int n_layer;        // llama.block_count
    int d_model;        // llama.embedding_length
    int n_head;         // llama.attention.head_count
    int n_kv_head;      // llama.attention.head_count_kv (default n_head)
    int d_ff;           // llama.feed_forward_length
    int context;        // llama.context_length
    int rope_dim;       // llama.rope.dimension_count (default head size)
    float rope_theta;   // llama.rope.freq_base (default 10000)
    float rms_eps;      // llama.attention.layer_norm_rms_epsilon
    int tied;           // 1: no output.weight, the head is token_embd
    int qkv_bias;       // 1: blk.N.attn_{q,k,v}.bias added to Q, K, V
                        // (qwen2)
    int rope_interleaved;   // 1: RoPE pairs (2i, 2i+1) (llama.cpp's
                        // "normal" rope: llama); 0: pairs (i, i + R/2)
                        // (its NEOX rope: qwen2)
    int rope_freqs;     // 1: rope_freqs.weight (rope_dim / 2 floats, each
                        // finite and > 0) divides each pair's frequency
                        // (Llama 3; llama only)
    int head_dim;       // llama.attention.key_length (default d_model /
                        // n_head; value_length, when given, must equal
                        // it): Q is n_head * head_dim wide, which need not
                        // be d_model (gemma3: 4 * 256 beside 640)
    int qk_norm;        // 1: blk.N.attn_{q,k}_norm.weight (head_dim): each
                        // Q and K head RMSNormed before RoPE (gemma3)
    int post_norms;     // 1: blk.N.post_attention_norm.weight and
                        // post_ffw_norm.weight (D): the attention's and
                        // the MLP's outputs RMSNormed before they are
                        // added to the residual stream (gemma3)
    int geglu;          // 1: the MLP's gate is GELU (tanh form), not SiLU
                        // (gemma3)
    float embed_scale;  // the embedding rows times this: 1, or
                        // sqrtf(d_model) (gemma3)
    int window;         // llama.attention.sliding_window on the local
                        // layers (1 .. context_length); 0: none
    int swa_period;     // 0: every layer global; P: layer l is local (the
                        // window, rope_theta_local) when l % P != P - 1
                        // (gemma3: 6, five local layers then one global)
    float rope_theta_local;   // the RoPE base of the local layers
    // Bytes of the matrices as MHSA__WEIGHTS_FILE holds them: the file's
    // own bytes of each, Q8_0's for the types converted at load (from the
    // tensor infos).
    uint64_t file_mat_bytes;
} mhsa_llama_config;

typedef struct mhsa_llama mhsa_llama;
typedef struct mhsa_llama_cache mhsa_llama_cache;

// Loads `path`. capacity: the most positions a cache of this model holds
// (prompt and generated tokens), 1 .. llama.context_length; 0 means
// min(context_length, 4096). Errors: MHSA_ERR_IO (the file), MHSA_ERR_FORMAT
// naming the key or tensor (not a llama model, a missing or misshapen
// tensor, a tensor type it cannot dequantize), MHSA_ERR_INVALID_ARG
// (capacity), MHSA_ERR_NO_MEMORY.
mhsa_status mhsa__llama_load(const char *path, int capacity,
                             mhsa_llama **out);
// mhsa__llama_load_ex's weight_dtype for weights kept as the file stores
// them (not an mhsa_dtype: the public enum is not extended).
enum { MHSA__WEIGHTS_FILE = -1 };

// The same with the large matrices (attention, MLP, embedding, head)
// stored as weight_dtype (MHSA_F32, MHSA_F16, MHSA_BF16 or
// MHSA__WEIGHTS_FILE; anything else: MHSA_ERR_INVALID_ARG). The norms stay
// fp32. mhsa__llama_load is this with MHSA_F32.
//  - F32, F16, BF16: rounded once from the dequantized fp32 values and read
//    as stored by the same GEMM and one-row kernels as the blocks.
//  - MHSA__WEIGHTS_FILE: every matrix in its GGUF type, read from a
//    read-only mapping of the file that lives as long as the model (so
//    the weights take the file's size, shared with the page cache):
//    Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K computed on their
//    blocks (gemm/qmatmul.h: the input rows quantized to int8 per block,
//    integer dot products; kernels/quant.h gives the bound against the
//    dequantized fp32 product), F32, F16 and BF16 by the fp kernels as
//    stored. Q2_K, Q3_K, IQ4_NL and IQ4_XS are converted once at load to
//    Q8_0 (each row dequantized, then requantized per 32 values as ggml's
//    quantize_row_q8_0: d = amax / 127 stored as f16, q = round(x / d)),
//    which takes more memory than the file's tensor. No fp32 copy of a
//    matrix is ever made. Each row's results depend only on that row (and
//    the cache), never on how many rows run together or on the threads.
mhsa_status mhsa__llama_load_ex(const char *path, int capacity,
                                int weight_dtype, mhsa_llama **out);
void mhsa__llama_destroy(mhsa_llama *m);   // NULL is a no-op
// The config of the model at path, checked as mhsa__llama_load checks it,
// without reading any tensor.
mhsa_status mhsa__llama_read_config(const char *path, mhsa_llama_config *cfg);
const mhsa_llama_config *mhsa__llama_config(const mhsa_llama *m);
// Whether layer l of c is a local (sliding-window) layer, and its window
// (0: none) and RoPE base.
int mhsa__llama_layer_local(const mhsa_llama_config *c, int l);
int mhsa__llama_layer_window(const mhsa_llama_config *c, int l);
float mhsa__llama_layer_rope_theta(const mhsa_llama_config *c, int l);
int mhsa__llama_capacity(const mhsa_llama *m);
// Bytes of the weights the model holds, in their stored type (without the
// F32 blocks' packed copies; with MHSA__WEIGHTS_FILE the file's bytes of
// the tensors it reads, the Q8_0 of converted ones, and the fp32 norms).
size_t mhsa__llama_weight_bytes(const mhsa_llama *m);
// The matrices' types as held, for messages: "f32", "f16", "bf16", or in
// file mode the types by the bytes they take, most first, "q4_K/q6_K"
// ("q8_0 (from q2_K)" for a converted one). Valid as long as m.
const char *mhsa__llama_weight_types(const mhsa_llama *m);

// A KV cache for one sequence, its K and V stored as dtype (MHSA_F32,
// MHSA_F16 or MHSA_BF16), for the model's capacity.
mhsa_status mhsa__llama_cache_create(const mhsa_llama *m, mhsa_dtype dtype,
                                     mhsa_llama_cache **out);
void mhsa__llama_cache_destroy(mhsa_llama_cache *c);   // NULL: no-op
void mhsa__llama_cache_reset(mhsa_llama_cache *c);     // NULL: no-op
int  mhsa__llama_cache_len(const mhsa_llama_cache *c); // 0 for NULL

// Runs tokens[0..n) at positions len .. len + n - 1 of the cache's
// sequence (one mhsa_forward_cached call per layer for all n) and appends
// them to the cache. logits: (V) of the last token, or with all_logits
// (n, V) of every token. Nothing is allocated. Errors: NULL arguments, n <
// 1, a token outside [0, vocab): MHSA_ERR_INVALID_ARG; n more than the
// cache has room for: MHSA_ERR_SHAPE (the cache is unchanged).
mhsa_status mhsa__llama_forward(mhsa_llama *m, mhsa_llama_cache *c,
                                const int32_t *tokens, int n, int all_logits,
                                float *logits);

// One sequence's part of a batched forward: mhsa__llama_forward's
// arguments.
typedef struct mhsa_llama_part {
    mhsa_llama_cache *c;
    const int32_t *tokens;
    int n;
    int all_logits;
    float *logits;
} mhsa_llama_part;

// Runs every part p[0..np) as mhsa__llama_forward runs it alone, with the
// same bits (logits and caches): in one forward where the products allow
// it (every layer matrix quantized, whose products give each row the bits
// it has alone), the rows of all parts through each matrix together and
// each part's attention through its own cache; else part after part.
// Every part is checked before any runs (with the errors of
// mhsa__llama_forward, naming the part; two parts with one cache:
// MHSA_ERR_INVALID_ARG), so on an error no cache changed. Allocates only
// the logits of a shared quantized head (the wanted rows of a step).
mhsa_status mhsa__llama_forward_parts(mhsa_llama *m, const mhsa_llama_part *p,
                                      size_t np);

#endif
