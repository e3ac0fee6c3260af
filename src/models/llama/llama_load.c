// llama_load.c — a Llama-family model from its GGUF file (llama.h): the
// family's row of the table of architectures (arches[] below), the
// hyper-parameters from its <arch>.* metadata, every tensor checked for its
// shape, then either dequantized to fp32 (the attention weights into one
// mhsa_block per layer) or, in file mode, kept in the file's mapping
// (llama_file.c); the buffers of the forward sized once for the capacity.
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fpenv.h"
#include "io/file_read.h"
#include "models/gguf/gguf.h"
#include "api/cached_qkv.h"
#include "api/rope_factors.h"
#include "models/gguf/gguf_dequant.h"
#include "models/llama/llama_internal.h"

void mhsa__llama_free(mhsa_llama *m)
{
    if (!m)
        return;
    for (size_t l = 0; m->layer && l < m->L; l++)
        mhsa_block_destroy(m->layer[l].blk);
    mhsa__free(m->layer);
    mhsa_workspace_destroy(m->ws);
    mhsa_workspace_destroy(m->ws_local);
    mhsa__unmap_file(&m->map);
    MHSA_FREE_ALL(m->weights, m->mats, m->acts, m->gemm_buf, m->qkv,
                  m->xq[MHSA_QACT_32], m->xq[MHSA_QACT_256], m->head_rows, m);
}

void mhsa__llama_destroy(mhsa_llama *m) { mhsa__llama_free(m); }

// ---- the architectures -----------------------------------------------------

// What sets a family apart from the llama row, one row each; the keys are
// "<name>.block_count", ... (llama.cpp c392e50: llama_model::load_hparams,
// load_tensors and llama_model_rope_type).
typedef struct llama_arch {
    const char *name;       // general.architecture and the keys' prefix
    int qkv_bias;           // blk.N.attn_{q,k,v}.bias, required
    int rope_interleaved;   // ggml's "normal" rope (1) or NEOX (0)
    int rope_freqs;         // rope_freqs.weight allowed (optional)
    int qk_norm;            // blk.N.attn_{q,k}_norm.weight, required
    int post_norms;         // blk.N.post_{attention,ffw}_norm.weight
    int geglu;              // GELU (tanh) gate instead of SiLU
    int embed_sqrt;         // embedding rows times sqrtf(d_model)
    int swa_period;         // 0, or P: layers l % P != P - 1 local, with
                            // the window <name>.attention.sliding_window
                            // (required) and RoPE base rope_theta_local
    float rope_theta_local;
} llama_arch;

// gemma3: transformers' Gemma3TextConfig (sliding_window_pattern 6,
// rope_local_base_freq 10000, hidden_activation gelu_pytorch_tanh,
// embed scale hidden_size ** 0.5, no softcapping) and llama.cpp's gemma3
// graph (swa pattern 6, rope_freq_base_train_swa 10000); neither base
// nor pattern is in the file.
static const llama_arch arches[] = {
    { "llama", 0, 1, 1, 0, 0, 0, 0, 0, 0.0f },
    { "qwen2", 1, 0, 0, 0, 0, 0, 0, 0, 0.0f },
    { "gemma3", 0, 0, 0, 1, 1, 1, 1, 6, 10000.0f },
};
enum { N_ARCHES = sizeof arches / sizeof arches[0] };

// The keys' prefix of c ("llama" for a config made without one).
static const char *arch_of(const mhsa_llama_config *c)
{
    return c->arch ? c->arch : "llama";
}

// "<arch>.<what>" into buf (keys are short; a longer one is cut, and then
// found nowhere).
static const char *arch_key(char *buf, size_t n, const mhsa_llama_config *c,
                            const char *what)
{
    snprintf(buf, n, "%s.%s", arch_of(c), what);
    return buf;
}

// ---- metadata --------------------------------------------------------------

// An integer value of `key` (any integer type) in [lo, INT_MAX]; absent:
// dflt, or an error when dflt < 0 (required).
// The value of `key` into *num, *found = 1; absent: *found = 0, or an
// error when `required`.
static mhsa_status meta_num(const mhsa_gguf_file *f, const char *path,
                            const char *key, int required, mhsa_gguf_num *num,
                            int *found)
{
    const mhsa_gguf_val *v = mhsa__gguf_find(f, key);
    *found = v != NULL;
    if (v)
        return mhsa__gguf_val_num(v, num);
    if (required)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: no metadata key %s (the "
                          "model needs it)", path, key);
    return MHSA_OK;
}

static mhsa_status meta_int(const mhsa_gguf_file *f, const char *path,
                            const char *key, int dflt, int lo, int *out)
{
    mhsa_gguf_num num;
    int found;
    mhsa_status st = meta_num(f, path, key, dflt < 0, &num, &found);
    if (st != MHSA_OK || !found) {
        if (st == MHSA_OK)
            *out = dflt;
        return st;
    }
    long long x;
    if (num.type == MHSA_GGUF_FLOAT32 || num.type == MHSA_GGUF_FLOAT64 ||
        num.type == MHSA_GGUF_BOOL)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s is a %s, not an integer",
                          path, key, mhsa__gguf_type_name(num.type));
    if (num.type == MHSA_GGUF_INT8 || num.type == MHSA_GGUF_INT16 ||
        num.type == MHSA_GGUF_INT32 || num.type == MHSA_GGUF_INT64)
        x = num.as.i;
    else
        x = num.as.u > (uint64_t)INT_MAX ? (long long)INT_MAX + 1
                                         : (long long)num.as.u;
    if (x < lo || x > INT_MAX)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = %lld is outside [%d, "
                          "%d]", path, key, x, lo, INT_MAX);
    *out = (int)x;
    return MHSA_OK;
}

// A float value of `key` (f32 or f64), a normal float: finite and at
// least FLT_MIN (a subnormal epsilon would be flushed to 0 by the
// library's float mode, core/fpenv.h); absent: dflt, or an error when
// dflt <= 0 (required). The message shows the value read, to the digits
// that tell it apart.
static mhsa_status meta_float(const mhsa_gguf_file *f, const char *path,
                              const char *key, float dflt, float *out)
{
    mhsa_gguf_num num;
    int found;
    mhsa_status st = meta_num(f, path, key, !(dflt > 0.0f), &num, &found);
    if (st != MHSA_OK || !found) {
        if (st == MHSA_OK)
            *out = dflt;
        return st;
    }
    if (num.type != MHSA_GGUF_FLOAT32 && num.type != MHSA_GGUF_FLOAT64)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s is a %s, not a float",
                          path, key, mhsa__gguf_type_name(num.type));
    if (!(num.as.f >= FLT_MIN && num.as.f <= FLT_MAX))
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = %.*g must be a normal "
                          "float: finite and at least %.9g", path, key,
                          num.type == MHSA_GGUF_FLOAT32 ? 9 : 17, num.as.f,
                          (double)FLT_MIN);
    *out = (float)num.as.f;
    return MHSA_OK;
}

// ---- the tensors the config implies --------------------------------------

// A layer's tensors, "blk.<l>.<what>.<suffix>", each with the config flag
// that makes a layer have it and its shape (outermost first): 'D' =
// d_model, 'F' = d_ff, 'A' = n_head * head_dim (Q's width), 'K' =
// n_kv_head * head_dim, 'h' = head_dim, 0 = none.
enum { NEED_ALL, NEED_QKV_BIAS, NEED_QK_NORM, NEED_POST_NORMS };
typedef struct layer_tensor {
    const char *what, *suffix;
    int need;
    char rows, cols;
} layer_tensor;

static const layer_tensor layer_ts[] = {
    { "attn_norm", "weight", NEED_ALL, 'D', 0 },
    { "ffn_norm", "weight", NEED_ALL, 'D', 0 },
    { "ffn_gate", "weight", NEED_ALL, 'F', 'D' },
    { "ffn_up", "weight", NEED_ALL, 'F', 'D' },
    { "ffn_down", "weight", NEED_ALL, 'D', 'F' },
    { "attn_q", "weight", NEED_ALL, 'A', 'D' },
    { "attn_k", "weight", NEED_ALL, 'K', 'D' },
    { "attn_v", "weight", NEED_ALL, 'K', 'D' },
    { "attn_output", "weight", NEED_ALL, 'D', 'A' },
    { "attn_q", "bias", NEED_QKV_BIAS, 'A', 0 },       // LT_BIAS + 0..2
    { "attn_k", "bias", NEED_QKV_BIAS, 'K', 0 },
    { "attn_v", "bias", NEED_QKV_BIAS, 'K', 0 },
    { "attn_q_norm", "weight", NEED_QK_NORM, 'h', 0 },  // LT_QK_NORM + 0..1
    { "attn_k_norm", "weight", NEED_QK_NORM, 'h', 0 },
    { "post_attention_norm", "weight", NEED_POST_NORMS, 'D', 0 },  // LT_POST
    { "post_ffw_norm", "weight", NEED_POST_NORMS, 'D', 0 },
};
enum { N_LAYER_TS = sizeof layer_ts / sizeof layer_ts[0],
       LT_BIAS = 9, LT_QK_NORM = 12, LT_POST = 14 };

// Whether a layer of c has layer_ts[i].
static int layer_has(const mhsa_llama_config *c, int i)
{
    switch (layer_ts[i].need) {
    case NEED_QKV_BIAS: return c->qkv_bias;
    case NEED_QK_NORM: return c->qk_norm;
    case NEED_POST_NORMS: return c->post_norms;
    default: return 1;
    }
}

// How many of layer_ts a layer of c has.
static int layer_tensors(const mhsa_llama_config *c)
{
    int n = 0;
    for (int i = 0; i < N_LAYER_TS; i++)
        n += layer_has(c, i);
    return n;
}

// "blk.<l>.<what>.weight"
static const char *layer_name(char *buf, size_t n, size_t l, const char *what)
{
    snprintf(buf, n, "blk.%zu.%s.weight", l, what);
    return buf;
}

// The name of layer tensor layer_ts[i] of layer l.
static const char *layer_tensor_name(char *buf, size_t n, size_t l, int i)
{
    snprintf(buf, n, "blk.%zu.%s.%s", l, layer_ts[i].what,
             layer_ts[i].suffix);
    return buf;
}

// The head size (a config made without one: d_model / n_head), Q's width
// n_head * head_dim and K's (and V's) n_kv_head * head_dim.
static size_t head_size(const mhsa_llama_config *c)
{
    return c->head_dim ? (size_t)c->head_dim
                       : (size_t)(c->d_model / c->n_head);
}
static size_t q_width(const mhsa_llama_config *c)
{
    return (size_t)c->n_head * head_size(c);
}
static size_t kv_width(const mhsa_llama_config *c)
{
    return (size_t)c->n_kv_head * head_size(c);
}

// The shape (outermost first) of layer tensor layer_ts[i]; its rank.
static int layer_shape(const mhsa_llama_config *c, int i, size_t dims[2])
{
    const char rc[2] = { layer_ts[i].rows, layer_ts[i].cols };
    for (int k = 0; k < 2; k++)
        dims[k] = rc[k] == 'D' ? (size_t)c->d_model
                : rc[k] == 'F' ? (size_t)c->d_ff
                : rc[k] == 'A' ? q_width(c)
                : rc[k] == 'K' ? kv_width(c)
                : head_size(c);
    return rc[1] ? 2 : 1;
}

// Whether tensor `name` is one the model of c reads.
static int used_tensor(const mhsa_llama_config *c, const char *name)
{
    if (!strcmp(name, "token_embd.weight") ||
        !strcmp(name, "output_norm.weight") ||
        (!c->tied && !strcmp(name, "output.weight")) ||
        (c->rope_freqs && !strcmp(name, "rope_freqs.weight")))
        return 1;
    if (strncmp(name, "blk.", 4) || name[4] < '0' || name[4] > '9')
        return 0;
    unsigned long long l = strtoull(name + 4, NULL, 10);
    if (l >= (unsigned long long)c->n_layer)
        return 0;
    char buf[96];
    for (int i = 0; i < N_LAYER_TS; i++)   // exact: no "blk.01."
        if (layer_has(c, i) &&
            !strcmp(name, layer_tensor_name(buf, sizeof buf, (size_t)l, i)))
            return 1;
    return 0;
}

// The error of a tensor check again, with what the metadata says.
static mhsa_status with_sizes(mhsa_status st, const char *path,
                              const mhsa_llama_config *c)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%s", mhsa_last_error());
    return mhsa__fail(st, "%s: %s (the metadata says %s.block_count = "
                      "%d, %s.embedding_length = %d, "
                      "%s.feed_forward_length = %d)", path, msg, c->arch,
                      c->n_layer, c->arch, c->d_model, c->arch, c->d_ff);
}

// Every tensor the model reads present, of its shape and of a type that
// converts, and no other tensor in the file (llama.cpp refuses those too:
// a block_count below the file's layers would leave layers unread). Only
// the tensor infos are looked at: this runs before anything is allocated
// for the model, so metadata that imply a model far bigger than the file
// fail here, on the first tensor missing or misshapen.
static mhsa_status check_tensors(const mhsa_gguf_file *f, const char *path,
                                 const mhsa_llama_config *c)
{
    size_t D = (size_t)c->d_model, V = (size_t)c->vocab;
    size_t vd[2] = { V, D }, dims[2];
    mhsa_status st = mhsa__gguf_check_f32(f, "token_embd.weight", 2, vd);
    if (st == MHSA_OK && !c->tied)
        st = mhsa__gguf_check_f32(f, "output.weight", 2, vd);
    if (st == MHSA_OK)
        st = mhsa__gguf_check_f32(f, "output_norm.weight", 1, &D);
    size_t half = (size_t)c->rope_dim / 2;   // one factor per rotated pair
    if (st == MHSA_OK && c->rope_freqs)
        st = mhsa__gguf_check_f32(f, "rope_freqs.weight", 1, &half);
    char name[96];
    for (size_t l = 0; st == MHSA_OK && l < (size_t)c->n_layer; l++)
        for (int i = 0; st == MHSA_OK && i < N_LAYER_TS; i++) {
            if (!layer_has(c, i))
                continue;
            int nd = layer_shape(c, i, dims);
            st = mhsa__gguf_check_f32(f, layer_tensor_name(name, sizeof name,
                                                           l, i),
                                      nd, dims);
        }
    if (st != MHSA_OK)
        return with_sizes(st, path, c);
    // All present, names unique: any more in the file are unused.
    size_t used = 2 + !c->tied + (size_t)c->rope_freqs +
                  (size_t)c->n_layer * (size_t)layer_tensors(c);
    size_t n = mhsa__gguf_tensor_count(f);
    if (n == used)
        return MHSA_OK;
    const char *extra = "?";
    for (size_t i = 0; i < n; i++) {
        const mhsa_gguf_tensor *t = mhsa__gguf_tensor_at(f, i);
        if (!used_tensor(c, t->name)) {
            extra = t->name;
            break;
        }
    }
    char q[96];
    return mhsa__fail(MHSA_ERR_FORMAT, "%s: wrong number of tensors: "
                      "expected %zu, got %zu; tensor '%s' is not used by a "
                      "%s model of %s.block_count = %d", path, used, n,
                      mhsa__esc(q, sizeof q, extra, strlen(extra)), c->arch,
                      c->arch, c->n_layer);
}

// The config from the metadata, checked for what the model can run, and
// the tensors against it (check_tensors).
static mhsa_status read_config(const mhsa_gguf_file *f, const char *path,
                               mhsa_llama_config *c)
{
    const char *arch;
    size_t arch_len = 0;
    mhsa_status st = mhsa__gguf_get_str(f, "general.architecture", &arch,
                                        &arch_len);
    if (st != MHSA_OK)
        return st;
    const llama_arch *a = NULL;
    for (size_t i = 0; i < N_ARCHES; i++)
        if (!strcmp(arch, arches[i].name) && arch_len == strlen(arch))
            a = &arches[i];
    if (!a) {
        char q[48];
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: general.architecture is "
                          "\"%s\"; only \"llama\", \"qwen2\" and "
                          "\"gemma3\" are supported", path,
                          mhsa__esc(q, sizeof q, arch, arch_len));
    }
    memset(c, 0, sizeof *c);
    c->arch = a->name;
    c->qkv_bias = a->qkv_bias;
    c->rope_interleaved = a->rope_interleaved;
    c->qk_norm = a->qk_norm;
    c->post_norms = a->post_norms;
    c->geglu = a->geglu;
    c->swa_period = a->swa_period;
    c->rope_theta_local = a->rope_theta_local;
    char k[8][64];
    if ((st = meta_int(f, path, arch_key(k[0], 64, c, "block_count"), -1, 1,
                       &c->n_layer)) ||
        (st = meta_int(f, path, arch_key(k[1], 64, c, "embedding_length"),
                       -1, 1, &c->d_model)) ||
        (st = meta_int(f, path, arch_key(k[2], 64, c,
                                         "feed_forward_length"), -1, 1,
                       &c->d_ff)) ||
        (st = meta_int(f, path, arch_key(k[3], 64, c,
                                         "attention.head_count"), -1, 1,
                       &c->n_head)) ||
        (st = meta_int(f, path, arch_key(k[4], 64, c, "context_length"), -1,
                       1, &c->context)) ||
        (st = meta_int(f, path, arch_key(k[5], 64, c,
                                         "attention.head_count_kv"),
                       c->n_head, 1, &c->n_kv_head)) ||
        (st = meta_float(f, path, arch_key(k[6], 64, c, "rope.freq_base"),
                         10000.0f, &c->rope_theta)) ||
        (st = meta_float(f, path, arch_key(k[7], 64, c,
                                           "attention.layer_norm_rms_epsilon"),
                         0.0f, &c->rms_eps)))
        return st;
    if (c->n_head % c->n_kv_head != 0)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: head_count %d, "
                          "head_count_kv %d: the kv heads must divide the "
                          "heads", path, c->n_head, c->n_kv_head);
    // The head size: attention.key_length, else d_model / n_head (as
    // llama.cpp's n_embd_head_k); V's the same (the one size the block
    // has), and Q's width n_head * head_dim an int.
    char key[64];
    int dflt_dh = c->d_model % c->n_head == 0 ? c->d_model / c->n_head : -1;
    if ((st = meta_int(f, path, arch_key(key, sizeof key, c,
                                         "attention.key_length"), dflt_dh,
                       1, &c->head_dim)))
        return st;
    if (c->head_dim > INT_MAX / c->n_head)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = %d times head_count %d "
                          "is more than %d", path, key, c->head_dim,
                          c->n_head, INT_MAX);
    int dv;
    if ((st = meta_int(f, path, arch_key(key, sizeof key, c,
                                         "attention.value_length"),
                       c->head_dim, 1, &dv)))
        return st;
    if (dv != c->head_dim)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = %d differs from the "
                          "key_length %d (not supported)", path, key, dv,
                          c->head_dim);
    int dh = c->head_dim;
    if ((st = meta_int(f, path, arch_key(key, sizeof key, c,
                                         "rope.dimension_count"), dh, 2,
                       &c->rope_dim)))
        return st;
    if (c->rope_dim % 2 != 0 || c->rope_dim > dh)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = %d must be even and at "
                          "most the head size %d", path, key, c->rope_dim,
                          dh);
    // The sliding window of the local layers, 1 .. the context.
    if (c->swa_period) {
        arch_key(key, sizeof key, c, "attention.sliding_window");
        if ((st = meta_int(f, path, key, -1, 1, &c->window)))
            return st;
        if (c->window > c->context)
            return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = %d is more than "
                              "the context_length %d", path, key,
                              c->window, c->context);
    }
    c->embed_scale = a->embed_sqrt ? sqrtf((float)c->d_model) : 1.0f;
    // Gemma 3 27B scales the scores by 1/sqrt(d_model / n_head), which no
    // key says (llama.cpp tells it by its 62 layers); every other size
    // by 1/sqrt(head_dim), which is the block's.
    if (!strcmp(c->arch, "gemma3") && c->n_layer == 62)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: gemma3.block_count = 62 "
                          "(Gemma 3 27B: its query_pre_attn_scalar is in "
                          "no key; not supported)", path);
    // What this model does not implement, refused rather than ignored.
    // Softcapping (Gemma 2's, in llama.cpp's keys; Gemma 3 has none):
    static const char *const softcaps[] = { "attn_logit_softcapping",
                                            "final_logit_softcapping" };
    for (size_t i = 0; i < 2; i++)
        if (mhsa__gguf_find(f, arch_key(key, sizeof key, c, softcaps[i])))
            return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s (logit softcapping "
                              "is not supported)", path, key);
    // (Of another type it is malformed, not a value to pass over.)
    arch_key(key, sizeof key, c, "rope.scaling.type");
    const mhsa_gguf_val *sc = mhsa__gguf_find(f, key);
    const char *scaling = NULL;
    size_t sc_len = 0;
    if (sc && mhsa__gguf_val_type(sc) != MHSA_GGUF_STRING)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s is a %s, not a string",
                          path, key,
                          mhsa__gguf_type_name(mhsa__gguf_val_type(sc)));
    if (sc && mhsa__gguf_val_str(sc, &scaling, &sc_len) == MHSA_OK &&
        (strcmp(scaling, "none") != 0 || sc_len != 4)) {
        char q[48];
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = \"%s\" is not "
                          "supported", path, key,
                          mhsa__esc(q, sizeof q, scaling, sc_len));
    }
    // Tensors of variants this runner does not compute: refused by name
    // (rope_freqs.weight and the biases on Q, K and V only where the
    // family has none).
    c->rope_freqs = a->rope_freqs &&
                    mhsa__gguf_tensor(f, "rope_freqs.weight") != NULL;
    static const char *const unsupported[] = {
        "blk.0.attn_output.bias", "blk.0.ffn_gate_inp.weight",
        "blk.0.attn_q.bias", "rope_freqs.weight",
    };
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (!(i == 2 && c->qkv_bias) && !(i == 3 && a->rope_freqs) &&
            mhsa__gguf_tensor(f, unsupported[i]))
        if (mhsa__gguf_tensor(f, unsupported[i]))
            return mhsa__fail(MHSA_ERR_FORMAT, "%s: tensor %s (a variant of "
                              "the %s architecture that is not "
                              "supported)", path, unsupported[i], c->arch);
    const mhsa_gguf_tensor *emb = mhsa__gguf_tensor(f, "token_embd.weight");
    if (!emb || emb->n_dims != 2 || emb->dims[1] != (size_t)c->d_model ||
        emb->dims[0] > (size_t)INT_MAX)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: token_embd.weight %s (want "
                          "(vocab, %d))", path, emb ? "has another shape" :
                          "is missing", c->d_model);
    c->vocab = (int)emb->dims[0];
    c->tied = mhsa__gguf_tensor(f, "output.weight") == NULL;
    if ((st = check_tensors(f, path, c)))
        return st;
    // The matrices' bytes as file mode holds them.
    for (size_t i = 0, n = mhsa__gguf_tensor_count(f); i < n; i++) {
        const mhsa_gguf_tensor *t = mhsa__gguf_tensor_at(f, i);
        if (t->n_dims == 2 && used_tensor(c, t->name))
            c->file_mat_bytes += mhsa__llama_held_bytes(t);
    }
    return MHSA_OK;
}

// ---- tensors ---------------------------------------------------------------

static mhsa_status read2(const mhsa_gguf_file *f, const char *name,
                         size_t rows, size_t cols, float *dst)
{
    size_t dims[2] = { rows, cols };
    return mhsa__gguf_read_f32(f, name, 2, dims, dst);
}

static mhsa_status read1(const mhsa_gguf_file *f, const char *name,
                         size_t n, float *dst)
{
    size_t dims[1] = { n };
    return mhsa__gguf_read_f32(f, name, 1, dims, dst);
}

// The rope frequency factors (rope_dim / 2 floats at dst), each finite
// and > 0 (a zero or negative one would divide the angles by it), or
// MHSA_ERR_FORMAT naming the tensor.
static mhsa_status read_rope_factors(const mhsa_gguf_file *f,
                                     const char *path,
                                     const mhsa_llama_config *c, float *dst)
{
    size_t half = (size_t)c->rope_dim / 2;
    mhsa_status st = read1(f, "rope_freqs.weight", half, dst);
    for (size_t i = 0; st == MHSA_OK && i < half; i++)
        if (!(dst[i] > 0.0f && dst[i] <= FLT_MAX))
            return mhsa__fail(MHSA_ERR_FORMAT, "%s: rope_freqs.weight[%zu] "
                              "= %g must be finite and > 0", path, i,
                              (double)dst[i]);
    return st;
}

// Every layer's block given the file's rope frequency factors (none
// without rope_freqs.weight); buf: rope_dim / 2 floats of scratch.
static mhsa_status set_rope_factors(mhsa_llama *m, const mhsa_gguf_file *f,
                                    const char *path, float *buf)
{
    if (!m->cfg.rope_freqs)
        return MHSA_OK;
    mhsa_status st = read_rope_factors(f, path, &m->cfg, buf);
    for (size_t l = 0; st == MHSA_OK && l < m->L; l++)
        st = mhsa__block_set_rope_factors(m->layer[l].blk, buf);
    return st;
}

// An fp matrix (rows, cols) of dt at data.
static llama_mat fp_mat(const void *data, size_t rows, size_t cols,
                        mhsa_dtype dt)
{
    llama_mat w;
    memset(&w, 0, sizeof w);
    w.dt = dt;
    w.q.rows = rows;
    w.q.cols = cols;
    w.q.ld = cols * mhsa_dtype_size(dt);
    w.q.data = data;
    return w;
}

// The config of layer l's block: the attention of A = H dh wide rows
// (d_model when the block holds the projections), its window and RoPE
// base.
static mhsa_config block_config(const mhsa_llama *m, size_t l)
{
    mhsa_config bc = { 0 };
    bc.d_model = (int)m->A;
    bc.n_heads = m->cfg.n_head;
    bc.max_seq_len = (int)m->cap;
    bc.causal = 1;
    // Biases on Q, K and V: the block adds them (and a zero output bias);
    // when m->own the model projects and adds them itself (layer_own).
    bc.bias = m->cfg.qkv_bias && !m->own;
    bc.n_kv_heads = m->cfg.n_kv_head;
    bc.rope_dim = m->cfg.rope_dim;
    bc.rope_theta = mhsa__llama_layer_rope_theta(&m->cfg, (int)l);
    bc.window = mhsa__llama_layer_window(&m->cfg, (int)l);
    bc.rope_interleaved = m->cfg.rope_interleaved;   // (llama.h)
    bc.weight_dtype = (int)m->wdt;
    return bc;
}

// Floats of norms a layer holds: attn_norm, ffn_norm (D each), then the
// Q and K norms (head_dim each) and the post norms (D each) where the
// family has them.
static size_t layer_norm_floats(const mhsa_llama_config *c)
{
    size_t D = (size_t)c->d_model;
    return 2 * D + (c->qk_norm ? 2 * head_size(c) : 0) +
           (c->post_norms ? 2 * D : 0);
}

// Layer l's norms (layer_norm_floats) read into w, and ly's pointers set.
static mhsa_status read_norms(const mhsa_llama_config *c,
                              const mhsa_gguf_file *f, size_t l,
                              llama_layer *ly, float *w)
{
    size_t D = (size_t)c->d_model, dh = (size_t)c->head_dim;
    char name[96];
    mhsa_status st;
    if ((st = read1(f, layer_name(name, sizeof name, l, "attn_norm"), D,
                    w)) ||
        (st = read1(f, layer_name(name, sizeof name, l, "ffn_norm"), D,
                    w + D)))
        return st;
    ly->attn_norm = w;
    ly->ffn_norm = w + D;
    w += 2 * D;
    if (c->qk_norm) {
        if ((st = read1(f, layer_tensor_name(name, sizeof name, l,
                                             LT_QK_NORM), dh, w)) ||
            (st = read1(f, layer_tensor_name(name, sizeof name, l,
                                             LT_QK_NORM + 1), dh, w + dh)))
            return st;
        ly->q_norm = w;
        ly->k_norm = w + dh;
        w += 2 * dh;
    }
    if (c->post_norms) {
        if ((st = read1(f, layer_tensor_name(name, sizeof name, l, LT_POST),
                        D, w)) ||
            (st = read1(f, layer_tensor_name(name, sizeof name, l,
                                             LT_POST + 1), D, w + D)))
            return st;
        ly->post_attn_norm = w;
        ly->post_ffn_norm = w + D;
    }
    return MHSA_OK;
}

// Layer l's biases [bq; bk; bv] (nqkv floats) into b.
static mhsa_status read_biases(const mhsa_llama_config *c,
                               const mhsa_gguf_file *f, size_t l, float *b)
{
    char name[96];
    mhsa_status st = MHSA_OK;
    for (int i = LT_BIAS; st == MHSA_OK && i < LT_BIAS + 3; i++) {
        size_t dims[2];
        layer_shape(c, i, dims);
        st = read1(f, layer_tensor_name(name, sizeof name, l, i), dims[0],
                   b);
        b += dims[0];
    }
    return st;
}

static int alloc_file_buffers(mhsa_llama *m);

// Layer l's tensors: norms and MLP into the model's weights at *off, the
// attention into its block (qkv: scratch of (nqkv + D) * D + nqkv + D
// floats).
static mhsa_status load_layer(mhsa_llama *m, const mhsa_gguf_file *f,
                              size_t l, size_t *off, float *qkv)
{
    size_t D = m->D, F = m->F, A = m->A, kvd = (m->nqkv - A) / 2;
    llama_layer *ly = &m->layer[l];
    size_t nn = layer_norm_floats(&m->cfg);
    float *w = m->weights + *off, *mw = w + nn;
    char name[96];
    mhsa_status st;
    if ((st = read_norms(&m->cfg, f, l, ly, w)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "ffn_gate"), F, D,
                    mw)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "ffn_up"), F, D,
                    mw + F * D)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "ffn_down"), D, F,
                    mw + 2 * F * D)))
        return st;
    ly->gate = fp_mat(mw, F, D, MHSA_F32);
    ly->up = fp_mat(mw + F * D, F, D, MHSA_F32);
    ly->down = fp_mat(mw + 2 * F * D, D, F, MHSA_F32);
    *off += nn + 3 * F * D;
    mhsa_config bc = block_config(m, l);
    if (m->own) {
        // The projections as the model's fp32 matrices, then the biases;
        // the block holds none.
        float *p = m->weights + *off;
        if ((st = read2(f, layer_name(name, sizeof name, l, "attn_q"), A, D,
                        p)) ||
            (st = read2(f, layer_name(name, sizeof name, l, "attn_k"), kvd,
                        D, p + A * D)) ||
            (st = read2(f, layer_name(name, sizeof name, l, "attn_v"), kvd,
                        D, p + (A + kvd) * D)) ||
            (st = read2(f, layer_name(name, sizeof name, l, "attn_output"),
                        D, A, p + m->nqkv * D)))
            return st;
        ly->wq = fp_mat(p, A, D, MHSA_F32);
        ly->wk = fp_mat(p + A * D, kvd, D, MHSA_F32);
        ly->wv = fp_mat(p + (A + kvd) * D, kvd, D, MHSA_F32);
        ly->wo = fp_mat(p + m->nqkv * D, D, A, MHSA_F32);
        *off += m->nqkv * D + D * A;
        if (m->cfg.qkv_bias) {
            if ((st = read_biases(&m->cfg, f, l, m->weights + *off)))
                return st;
            ly->bqkv = m->weights + *off;
            *off += m->nqkv;
        }
        return mhsa__block_create_shell(&bc, &ly->blk);
    }

    float *wo = qkv + (D + 2 * kvd) * D;
    if ((st = read2(f, layer_name(name, sizeof name, l, "attn_q"), D, D,
                    qkv)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "attn_k"), kvd, D,
                    qkv + D * D)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "attn_v"), kvd, D,
                    qkv + (D + kvd) * D)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "attn_output"), D, D,
                    wo)))
        return st;
    // The biases [bq; bk; bv] and a zero one after the output projection.
    float *bqkv = NULL, *bout = NULL;
    if (m->cfg.qkv_bias) {
        bqkv = wo + D * D;
        bout = bqkv + m->nqkv;
        memset(bout, 0, D * sizeof(float));
        if ((st = read_biases(&m->cfg, f, l, bqkv)))
            return st;
    }
    if ((st = mhsa_block_create(&bc, &ly->blk)) ||
        (st = mhsa_block_set_weights(ly->blk, qkv, bqkv, wo, bout)))
        return st;
    return MHSA_OK;
}

// With 16-bit weights: the matrices (embedding, head, MLP) move from the
// fp32 load into one allocation of m->wdt, rounded by the table's
// conversion, and the norms into a small fp32 one; the fp32 load is freed
// (so it is held only while loading). 0 when out of memory.
static int narrow_weights(mhsa_llama *m)
{
    size_t D = m->D, F = m->F, VD = m->V * D, es = mhsa_dtype_size(m->wdt);
    size_t dh = (size_t)m->cfg.head_dim;
    int untied = m->head.q.data != m->tok_emb.q.data;
    size_t n_mats = VD * (untied ? 2 : 1) + m->L * 3 * F * D +
                    (m->own ? m->L * (m->nqkv + m->A) * D : 0);
    size_t n_norms = D + m->L * (layer_norm_floats(&m->cfg) +
                                 (m->cfg.qkv_bias && m->own ? m->nqkv : 0));
    char *mats = mhsa__alloc(n_mats * es);
    float *norms = mhsa__alloc(n_norms * sizeof(float));
    if (!mats || !norms) {
        mhsa__free(mats);
        mhsa__free(norms);
        return 0;
    }
    char *mp = mats;
    float *np = norms;
#define MOVE_MAT(field)                                                    \
    do {                                                                   \
        size_t count_ = (field).q.rows * (field).q.cols;                   \
        m->k->cvt_from_f32(count_, (const float *)(field).q.data, mp,      \
                           m->wdt);                                        \
        (field) = fp_mat(mp, (field).q.rows, (field).q.cols, m->wdt);      \
        mp += count_ * es;                                                 \
    } while (0)
#define MOVE_NORM(field, n)                                                \
    do {                                                                   \
        if (field) {                                                       \
            memcpy(np, (field), (n) * sizeof(float));                      \
            (field) = np;                                                  \
            np += (n);                                                     \
        }                                                                  \
    } while (0)
    MOVE_MAT(m->tok_emb);
    if (untied)
        MOVE_MAT(m->head);
    else
        m->head = m->tok_emb;
    MOVE_NORM(m->out_norm, D);
    for (size_t l = 0; l < m->L; l++) {
        llama_layer *ly = &m->layer[l];
        MOVE_MAT(ly->gate);
        MOVE_MAT(ly->up);
        MOVE_MAT(ly->down);
        if (m->own) {
            MOVE_MAT(ly->wq);
            MOVE_MAT(ly->wk);
            MOVE_MAT(ly->wv);
            MOVE_MAT(ly->wo);
        }
        MOVE_NORM(ly->attn_norm, D);
        MOVE_NORM(ly->ffn_norm, D);
        MOVE_NORM(ly->q_norm, dh);
        MOVE_NORM(ly->k_norm, dh);
        MOVE_NORM(ly->post_attn_norm, D);
        MOVE_NORM(ly->post_ffn_norm, D);
        MOVE_NORM(ly->bqkv, m->nqkv);
    }
#undef MOVE_MAT
#undef MOVE_NORM
    mhsa__free(m->weights);
    m->weights = norms;
    m->mats = mats;
    return 1;
}

// Buffers of the forward for cap rows, and the GEMM scratch.
static int alloc_buffers(mhsa_llama *m)
{
    size_t rows = m->cap, D = m->D, F = m->F, acts;
    size_t DA = D > m->A ? D : m->A;
    if (!mhsa__mul(rows, 2 * D + DA + 2 * F, &acts))
        return 0;
    m->acts = mhsa__alloc(acts * sizeof(float));
    if (!m->acts)
        return 0;
    m->x = m->acts;
    m->h = m->x + rows * D;
    m->att = m->h + rows * D;
    m->g = m->att + rows * DA;
    m->u = m->g + rows * F;
    int nt = omp_get_max_threads();
    m->gs.max_threads = nt < 1 ? 1 : nt;
    size_t gb = mhsa_gemm_b_floats(m->k, F > DA ? F : DA), ga = gb;
    if (!gb || !mhsa__mul_add(&ga, (size_t)m->gs.max_threads,
                              mhsa_gemm_a_floats(m->k)))
        return 0;
    m->gemm_buf = mhsa__alloc(ga * sizeof(float));
    if (!m->gemm_buf)
        return 0;
    m->gs.b = m->gemm_buf;
    m->gs.b_floats = gb;
    m->gs.a = m->gemm_buf + gb;
    return 1;
}

// Bytes a load of c for cap positions holds at its peak, roughly: the
// fp32 weights as read, their 16-bit copy while narrowing, the blocks'
// attention weights and the load's scratch for one layer's, the
// activations; in file mode the matrices as held (the mapped file's and
// the converted ones), the fp32 norms, the activations with the projected
// rows and the int8 input rows. A double: metadata may imply more than
// 2^64.
static double bytes_needed(const mhsa_llama_config *c, size_t cap, int wdt)
{
    double V = c->vocab, D = c->d_model, F = c->d_ff, L = c->n_layer;
    double kvd = (double)kv_width(c), A = (double)q_width(c);
    double DA = D > A ? D : A;
    double mats = V * D * (c->tied ? 1 : 2) + L * 3 * F * D;
    double norms = D + L * (double)layer_norm_floats(c) +
                   (c->qkv_bias ? L * (A + 2 * kvd) : 0);
    double one_attn = (A + 2 * kvd) * D + D * A;
    double acts = 4 * (double)cap * (2 * D + DA + 2 * F);
    if (wdt == MHSA__WEIGHTS_FILE) {
        double widest = DA > F ? DA : F;
        return (double)c->file_mat_bytes + 4 * norms + acts +
               4 * (double)cap * (A + 2 * kvd) +
               2 * 1.25 * (double)cap * widest + 4 * widest;
    }
    double es = (double)mhsa_dtype_size((mhsa_dtype)wdt);
    return 4 * (mats + norms) + (wdt != MHSA_F32 ? es * mats : 0) +
           es * L * one_attn + 4 * one_attn + acts;
}

mhsa_status mhsa__llama_check_memory(const mhsa_llama_config *c, size_t cap,
                                     int wdt, const char *path,
                                     uint64_t avail)
{
    double need = bytes_needed(c, cap, wdt);
    if (need <= (double)avail && need < (double)SIZE_MAX)
        return MHSA_OK;
    const char *a = arch_of(c);
    return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: the model needs %.1f GB "
                      "(%s.block_count = %d, %s.embedding_length = %d, "
                      "%s.feed_forward_length = %d, %d tokens, %zu "
                      "positions), more than the %.1f GB of memory there "
                      "is", path, need / 1e9, a, c->n_layer, a, c->d_model,
                      a, c->d_ff, c->vocab, cap, (double)avail / 1e9);
}

// MHSA_ERR_NO_MEMORY naming what the metadata asked for.
static mhsa_status no_memory(const char *path, const mhsa_llama_config *c,
                             size_t cap, int wdt)
{
    const char *a = arch_of(c);
    return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory for the model's "
                      "%.1f GB (%s.block_count = %d, %s.embedding_length = "
                      "%d, %s.feed_forward_length = %d, %d tokens, %zu "
                      "positions)", path, bytes_needed(c, cap, wdt) / 1e9,
                      a, c->n_layer, a, c->d_model, a, c->d_ff, c->vocab,
                      cap);
}

// The machine's physical memory in bytes (UINT64_MAX when unknown).
static uint64_t physical_memory(void)
{
#ifdef _SC_PHYS_PAGES
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && size > 0 &&
        (uint64_t)pages <= UINT64_MAX / (uint64_t)size)
        return (uint64_t)pages * (uint64_t)size;
#endif
    return UINT64_MAX;
}

// The fp modes: every tensor dequantized to fp32 as it is read, the MLP,
// embedding and head into one allocation, the attention into the blocks;
// with 16-bit weights narrowed afterwards.
static mhsa_status load_fp(mhsa_llama *m, const mhsa_gguf_file *f,
                           const char *path)
{
    const mhsa_llama_config *c = &m->cfg;
    size_t D = m->D, F = m->F, V = m->V;
    // tok_emb, out_norm, head (untied), and per layer its norms + 3 MLP
    // matrices (+ with m->own its projections and biases); the scratch
    // for one layer's attention weights for its block.
    // (The sizes were checked by the reader: each tensor fits the file.)
    size_t per_layer = layer_norm_floats(c) + 3 * F * D, vd = 0, total = 0;
    if (m->own)
        per_layer += (m->nqkv + m->A) * D + (c->qkv_bias ? m->nqkv : 0);
    size_t qkv_floats = m->nqkv * D + D * m->A + m->nqkv + D;
    int ok = mhsa__mul(V, D, &vd) && mhsa__mul(vd, c->tied ? 1 : 2, &total)
             && mhsa__mul_add(&total, m->L, per_layer) && total + D > total;
    total += D;
    m->weights = ok ? mhsa__alloc(total * sizeof(float)) : NULL;
    float *qkv = ok ? mhsa__alloc(qkv_floats * sizeof(float)) : NULL;
    if (!m->weights || !qkv || !alloc_buffers(m)) {
        mhsa__free(qkv);
        return no_memory(path, c, m->cap, (int)m->wdt);
    }
    size_t off = 0;
    float *w = m->weights;
    mhsa_status st = read2(f, "token_embd.weight", V, D, w);
    m->tok_emb = fp_mat(w, V, D, MHSA_F32);
    off += V * D;
    if (st == MHSA_OK && !c->tied) {
        st = read2(f, "output.weight", V, D, w + off);
        m->head = fp_mat(w + off, V, D, MHSA_F32);
        off += V * D;
    } else {
        m->head = m->tok_emb;
    }
    if (st == MHSA_OK)
        st = read1(f, "output_norm.weight", D, w + off);
    m->out_norm = w + off;
    off += D;
    for (size_t l = 0; st == MHSA_OK && l < m->L; l++)
        st = load_layer(m, f, l, &off, qkv);
    if (st == MHSA_OK)   // (the scratch holds far more than rope_dim / 2)
        st = set_rope_factors(m, f, path, qkv);
    mhsa__free(qkv);
    if (st == MHSA_OK && m->wdt != MHSA_F32 && !narrow_weights(m))
        st = no_memory(path, c, m->cap, (int)m->wdt);
    if (st == MHSA_OK && m->own && !alloc_file_buffers(m))
        st = no_memory(path, c, m->cap, (int)m->wdt);
    if (st != MHSA_OK)
        return st;
    size_t es = mhsa_dtype_size(m->wdt);
    size_t mats = V * D * (c->tied ? 1 : 2) + m->L * 3 * F * D +
                  (m->own ? m->L * (m->nqkv + m->A) * D : 0);
    m->weight_bytes = mats * es + (D + m->L * (layer_norm_floats(c) +
                      (m->own && c->qkv_bias ? m->nqkv : 0))) *
                      sizeof(float);
    for (size_t l = 0; l < m->L; l++)
        m->weight_bytes += mhsa_block_weight_bytes(m->layer[l].blk);
    snprintf(m->types, sizeof m->types, "%s", m->wdt == MHSA_F32 ? "f32"
             : m->wdt == MHSA_F16 ? "f16" : "bf16");
    return MHSA_OK;
}

// File mode's matrices of layer l: name and field.
enum { FILE_LAYER_MATS = 7 };
static void layer_mats(llama_layer *ly, const char *names[FILE_LAYER_MATS],
                       llama_mat *mats[FILE_LAYER_MATS])
{
    static const char *const what[FILE_LAYER_MATS] = {
        "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
        "ffn_down",
    };
    llama_mat *const field[FILE_LAYER_MATS] = {
        &ly->wq, &ly->wk, &ly->wv, &ly->wo, &ly->gate, &ly->up, &ly->down,
    };
    for (int i = 0; i < FILE_LAYER_MATS; i++) {
        names[i] = what[i];
        mats[i] = field[i];
    }
}

// m->types in file mode: the matrices' file types by the bytes they take,
// most first.
static void file_types(mhsa_llama *m, const mhsa_gguf_file *f)
{
    enum { MAX_TYPES = 16 };
    uint32_t type[MAX_TYPES];
    uint64_t bytes[MAX_TYPES];
    size_t n = 0;
    for (size_t i = 0, nt = mhsa__gguf_tensor_count(f); i < nt; i++) {
        const mhsa_gguf_tensor *t = mhsa__gguf_tensor_at(f, i);
        if (t->n_dims != 2 || !used_tensor(&m->cfg, t->name))
            continue;
        size_t j = 0;
        while (j < n && type[j] != t->type)
            j++;
        if (j == n && n == MAX_TYPES)
            continue;
        if (j == n) {
            type[n] = t->type;
            bytes[n++] = 0;
        }
        bytes[j] += mhsa__llama_held_bytes(t);
    }
    size_t len = 0;
    m->types[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        size_t best = k;   // a selection sort of a few entries
        for (size_t j = k + 1; j < n; j++)
            if (bytes[j] > bytes[best])
                best = j;
        uint32_t tt = type[best];
        uint64_t tb = bytes[best];
        type[best] = type[k];
        bytes[best] = bytes[k];
        type[k] = tt;
        bytes[k] = tb;
        const char *name = mhsa__ggml_type(tt)->name;
        char one[48];
        if (mhsa__llama_converts(tt))
            snprintf(one, sizeof one, "q8_0 (from %s)", name);
        else
            snprintf(one, sizeof one, "%s", name);
        if (len < sizeof m->types)
            len += (size_t)snprintf(m->types + len, sizeof m->types - len,
                                    "%s%s", k ? "/" : "", one);
    }
}

// File mode's buffers beside alloc_buffers': the projected rows, and the
// input rows in each int8 form some matrix meets, for cap rows as wide as
// the widest such matrix. 0 when out of memory.
static int alloc_file_buffers(mhsa_llama *m)
{
    size_t act_bytes[MHSA_QACT_COUNT] = { 0 };
    for (size_t l = 0; l <= m->L; l++) {
        const char *what[FILE_LAYER_MATS];
        llama_mat *mats[FILE_LAYER_MATS];
        size_t n = FILE_LAYER_MATS;
        if (l < m->L) {
            layer_mats(&m->layer[l], what, mats);
        } else {   // the head (the embedding is only dequantized by rows)
            mats[0] = &m->head;
            n = 1;
        }
        for (size_t i = 0; i < n; i++) {
            const llama_mat *w = mats[i];
            if (!w->quant)
                continue;
            mhsa_qact a = mhsa_qtype_act(w->q.type);
            size_t rb = mhsa__qact_row_bytes(w->q.type, w->q.cols);
            act_bytes[a] = rb > act_bytes[a] ? rb : act_bytes[a];
        }
    }
    size_t qkv;
    if (!mhsa__mul(m->cap, m->nqkv, &qkv) ||
        !(m->qkv = mhsa__alloc(qkv * sizeof(float))))
        return 0;
    for (int a = 0; a < MHSA_QACT_COUNT; a++) {
        size_t b;
        if (act_bytes[a] && (!mhsa__mul(m->cap, act_bytes[a], &b) ||
                             !(m->xq[a] = mhsa__alloc(b))))
            return 0;
    }
    return 1;
}

// The table that computes tensor name packed (kernels/quant.h: P16), or
// NULL to keep it in the file's layout: an untied embedding (read by rows
// only) and everything when MHSA_QPACK is 0.
static const mhsa_qkernels *pack_for(const mhsa_llama *m, const char *name)
{
    const char *e = getenv("MHSA_QPACK");
    if ((e && !strcmp(e, "0")) ||
        (!m->cfg.tied && !strcmp(name, "token_embd.weight")))
        return NULL;
    return m->k->q;
}

// File mode: the file mapped, every matrix pointing into it (or converted
// once into m->mats), the norms read as fp32, a block without weights per
// layer.
static mhsa_status load_file(mhsa_llama *m, const mhsa_gguf_file *f,
                             const char *path)
{
    const mhsa_llama_config *c = &m->cfg;
    size_t D = m->D, F = m->F;
    size_t per_layer = layer_norm_floats(c) + (c->qkv_bias ? m->nqkv : 0);
    size_t n_norms = D + m->L * per_layer;
    // The bytes of the converted (and realigned) matrices.
    size_t copy = 0;
    for (size_t i = 0, nt = mhsa__gguf_tensor_count(f); i < nt; i++) {
        const mhsa_gguf_tensor *t = mhsa__gguf_tensor_at(f, i);
        if (t->n_dims == 2 && used_tensor(c, t->name))
            copy += mhsa__llama_copy_bytes(f, t, pack_for(m, t->name));
    }
    size_t widest = D > F ? D : F;
    widest = widest > m->A ? widest : m->A;
    float *row = mhsa__alloc(widest * sizeof(float));
    m->weights = row ? mhsa__alloc(n_norms * sizeof(float)) : NULL;
    m->mats = m->weights && copy ? mhsa__alloc(copy) : NULL;
    if (!m->weights || (copy && !m->mats) || !alloc_buffers(m)) {
        mhsa__free(row);
        return no_memory(path, c, m->cap, MHSA__WEIGHTS_FILE);
    }
    mhsa_status st = mhsa__gguf_map(f, path, &m->map);
    // The norms, fp32 whatever their type.
    float *w = m->weights;
    if (st == MHSA_OK)
        st = read1(f, "output_norm.weight", D, w);
    m->out_norm = w;
    w += D;
    char name[64];
    for (size_t l = 0; st == MHSA_OK && l < m->L; l++, w += per_layer) {
        llama_layer *ly = &m->layer[l];
        if ((st = read_norms(c, f, l, ly, w)))
            break;
        // The biases [bq; bk; bv] (nqkv), fp32 whatever their type.
        float *b = w + layer_norm_floats(c);
        if (c->qkv_bias && (st = read_biases(c, f, l, b)))
            break;
        ly->bqkv = c->qkv_bias ? b : NULL;
    }
    // The matrices (every one present and of its shape: read_config).
    char *dst = m->mats;
    if (st == MHSA_OK) {
        mhsa__llama_file_mat(f, &m->map,
                             mhsa__gguf_tensor(f, "token_embd.weight"),
                             pack_for(m, "token_embd.weight"), &dst, row,
                             &m->tok_emb);
        if (c->tied)
            m->head = m->tok_emb;
        else
            mhsa__llama_file_mat(f, &m->map,
                                 mhsa__gguf_tensor(f, "output.weight"),
                                 pack_for(m, "output.weight"), &dst, row,
                                 &m->head);
    }
    for (size_t l = 0; st == MHSA_OK && l < m->L; l++) {
        mhsa_config bc = block_config(m, l);
        const char *what[FILE_LAYER_MATS];
        llama_mat *mats[FILE_LAYER_MATS];
        layer_mats(&m->layer[l], what, mats);
        for (int i = 0; i < FILE_LAYER_MATS; i++) {
            layer_name(name, sizeof name, l, what[i]);
            mhsa__llama_file_mat(f, &m->map, mhsa__gguf_tensor(f, name),
                                 pack_for(m, name), &dst, row, mats[i]);
        }
        st = mhsa__block_create_shell(&bc, &m->layer[l].blk);
    }
    if (st == MHSA_OK)   // (row: max(D, F) floats, more than rope_dim / 2)
        st = set_rope_factors(m, f, path, row);
    mhsa__free(row);
    if (st == MHSA_OK && !alloc_file_buffers(m))
        st = no_memory(path, c, m->cap, MHSA__WEIGHTS_FILE);
    if (st != MHSA_OK)
        return st;
    m->weight_bytes = (size_t)c->file_mat_bytes + n_norms * sizeof(float);
    file_types(m, f);
    return MHSA_OK;
}

static mhsa_status load(const char *path, int capacity, int weight_dtype,
                        mhsa_llama **out)
{
    static const char fn[] = "mhsa__llama_load";
    if (!path || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !path ? "path" : "out");
    if (weight_dtype != MHSA_F32 && weight_dtype != MHSA_F16 &&
        weight_dtype != MHSA_BF16 && weight_dtype != MHSA__WEIGHTS_FILE)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: weight_dtype = %d is "
                          "not MHSA_F32, MHSA_F16, MHSA_BF16 or "
                          "MHSA__WEIGHTS_FILE", fn, weight_dtype);
    mhsa_gguf_file *f = NULL;
    mhsa_status st = mhsa__gguf_open(path, &f);
    if (st != MHSA_OK)
        return st;
    mhsa_llama_config cfg;
    if ((st = read_config(f, path, &cfg)) != MHSA_OK) {
        mhsa__gguf_close(f);
        return st;
    }
    if (capacity < 0 || capacity > cfg.context) {
        mhsa__gguf_close(f);
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: capacity = %d must be "
                          "in 0..%d (the model's context length)", fn,
                          capacity, cfg.context);
    }
    size_t cap = capacity ? (size_t)capacity
               : (size_t)(cfg.context < 4096 ? cfg.context : 4096);
    // Every tensor was checked against the metadata (read_config): what
    // is left to refuse before allocating is a model the machine cannot
    // hold.
    if ((st = mhsa__llama_check_memory(&cfg, cap, weight_dtype, path,
                                       physical_memory()))) {
        mhsa__gguf_close(f);
        return st;
    }
    mhsa_llama *m = mhsa__alloc(sizeof *m);
    if (!m) {
        mhsa__gguf_close(f);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", fn);
    }
    memset(m, 0, sizeof *m);
    m->cfg = cfg;
    m->k = mhsa__kernels();
    m->V = (size_t)cfg.vocab;
    m->L = (size_t)cfg.n_layer;
    m->D = (size_t)cfg.d_model;
    m->F = (size_t)cfg.d_ff;
    m->cap = cap;
    m->file = weight_dtype == MHSA__WEIGHTS_FILE;
    m->wdt = m->file ? MHSA_F32 : (mhsa_dtype)weight_dtype;
    m->A = q_width(&cfg);
    m->nqkv = m->A + 2 * kv_width(&cfg);
    // The model computes the projections when the block cannot hold them
    // (a quantized file's, Q/K norms between projection and RoPE, a head
    // width other than d_model / n_head), and with post norms (the
    // output projection's result is normed before the residual add).
    m->own = m->file || cfg.qk_norm || cfg.post_norms || m->A != m->D;
    m->layer = mhsa__alloc(m->L * sizeof *m->layer);
    if (!m->layer) {
        mhsa__llama_free(m);
        mhsa__gguf_close(f);
        return no_memory(path, &cfg, cap, weight_dtype);
    }
    memset(m->layer, 0, m->L * sizeof *m->layer);
    st = m->file ? load_file(m, f, path) : load_fp(m, f, path);
    mhsa__gguf_close(f);
    // One workspace for the global layers' blocks and one for the local
    // ones' (a workspace serves blocks of exactly one config).
    for (size_t l = 0; st == MHSA_OK && l < m->L; l++) {
        mhsa_workspace **ws = mhsa__llama_layer_local(&cfg, (int)l)
                            ? &m->ws_local : &m->ws;
        if (!*ws)
            st = mhsa_workspace_create(m->layer[l].blk, 1, ws);
    }
    if (st != MHSA_OK) {
        mhsa__llama_free(m);
        return st;
    }
    *out = m;
    return MHSA_OK;
}

mhsa_status mhsa__llama_read_config(const char *path,
                                    mhsa_llama_config *cfg)
{
    if (!path || !cfg)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__llama_read_config: "
                          "%s is NULL", !path ? "path" : "cfg");
    mhsa_gguf_file *f = NULL;
    mhsa_status st = mhsa__gguf_open(path, &f);
    if (st == MHSA_OK)
        st = read_config(f, path, cfg);
    mhsa__gguf_close(f);
    return st;
}

mhsa_status mhsa__llama_load(const char *path, int capacity,
                             mhsa_llama **out)
{
    return mhsa__llama_load_ex(path, capacity, MHSA_F32, out);
}

mhsa_status mhsa__llama_load_ex(const char *path, int capacity,
                                int weight_dtype, mhsa_llama **out)
{
    mhsa_fpstate fp = mhsa__fp_enter();   // the dequantization computes
    mhsa_status st = load(path, capacity, weight_dtype, out);
    mhsa__fp_leave(fp);
    return st;
}
