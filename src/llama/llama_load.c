// llama_load.c — a Llama model from its GGUF file (llama.h): the
// hyper-parameters from the llama.* metadata, every tensor checked for its
// shape and dequantized to fp32, the attention weights into one mhsa_block
// per layer, the buffers of the forward sized once for the capacity.
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/fpenv.h"
#include "io/gguf.h"
#include "llama/llama_internal.h"

void mhsa__llama_free(mhsa_llama *m)
{
    if (!m)
        return;
    for (size_t l = 0; m->layer && l < m->L; l++)
        mhsa_block_destroy(m->layer[l].blk);
    mhsa__free(m->layer);
    mhsa_workspace_destroy(m->ws);
    mhsa__free(m->weights);
    mhsa__free(m->mats);
    mhsa__free(m->acts);
    mhsa__free(m->gemm_buf);
    mhsa__free(m);
}

// ---- metadata --------------------------------------------------------------

// An integer value of `key` (any integer type) in [lo, INT_MAX]; absent:
// dflt, or an error when dflt < 0 (required).
static mhsa_status meta_int(const mhsa_gguf_file *f, const char *path,
                            const char *key, int dflt, int lo, int *out)
{
    const mhsa_gguf_val *v = mhsa__gguf_find(f, key);
    if (!v) {
        if (dflt >= 0) {
            *out = dflt;
            return MHSA_OK;
        }
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: no metadata key %s (a "
                          "llama model needs it)", path, key);
    }
    mhsa_gguf_num num;
    mhsa_status st = mhsa__gguf_val_num(v, &num);
    if (st != MHSA_OK)
        return st;
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

// A float value of `key` (f32 or f64), finite and > 0; absent: dflt, or an
// error when dflt <= 0 (required).
static mhsa_status meta_float(const mhsa_gguf_file *f, const char *path,
                              const char *key, float dflt, float *out)
{
    const mhsa_gguf_val *v = mhsa__gguf_find(f, key);
    if (!v) {
        if (dflt > 0.0f) {
            *out = dflt;
            return MHSA_OK;
        }
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: no metadata key %s (a "
                          "llama model needs it)", path, key);
    }
    mhsa_gguf_num num;
    mhsa_status st = mhsa__gguf_val_num(v, &num);
    if (st != MHSA_OK)
        return st;
    if (num.type != MHSA_GGUF_FLOAT32 && num.type != MHSA_GGUF_FLOAT64)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s is a %s, not a float",
                          path, key, mhsa__gguf_type_name(num.type));
    if (!(num.as.f > 0.0 && num.as.f < 3.4e38))
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = %g must be finite and "
                          "> 0", path, key, num.as.f);
    *out = (float)num.as.f;
    return MHSA_OK;
}

// The config from the metadata, checked for what the model can run.
static mhsa_status read_config(const mhsa_gguf_file *f, const char *path,
                               mhsa_llama_config *c)
{
    const char *arch;
    mhsa_status st = mhsa__gguf_get_str(f, "general.architecture", &arch,
                                        NULL);
    if (st != MHSA_OK)
        return st;
    if (strcmp(arch, "llama") != 0)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: general.architecture is "
                          "\"%.40s\"; only \"llama\" is supported", path,
                          arch);
    memset(c, 0, sizeof *c);
    if ((st = meta_int(f, path, "llama.block_count", -1, 1, &c->n_layer)) ||
        (st = meta_int(f, path, "llama.embedding_length", -1, 1,
                       &c->d_model)) ||
        (st = meta_int(f, path, "llama.feed_forward_length", -1, 1,
                       &c->d_ff)) ||
        (st = meta_int(f, path, "llama.attention.head_count", -1, 1,
                       &c->n_head)) ||
        (st = meta_int(f, path, "llama.context_length", -1, 1,
                       &c->context)) ||
        (st = meta_int(f, path, "llama.attention.head_count_kv", c->n_head,
                       1, &c->n_kv_head)) ||
        (st = meta_float(f, path, "llama.rope.freq_base", 10000.0f,
                         &c->rope_theta)) ||
        (st = meta_float(f, path, "llama.attention.layer_norm_rms_epsilon",
                         0.0f, &c->rms_eps)))
        return st;
    if (c->d_model % c->n_head != 0 || c->n_head % c->n_kv_head != 0)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: embedding_length %d, "
                          "head_count %d, head_count_kv %d: heads must "
                          "divide the width and the kv heads the heads",
                          path, c->d_model, c->n_head, c->n_kv_head);
    int dh = c->d_model / c->n_head;
    if ((st = meta_int(f, path, "llama.rope.dimension_count", dh, 2,
                       &c->rope_dim)))
        return st;
    if (c->rope_dim % 2 != 0 || c->rope_dim > dh)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: llama.rope.dimension_count "
                          "= %d must be even and at most the head size %d",
                          path, c->rope_dim, dh);
    // What this model does not implement, refused rather than ignored.
    const mhsa_gguf_val *sc = mhsa__gguf_find(f, "llama.rope.scaling.type");
    const char *scaling = NULL;
    if (sc && mhsa__gguf_val_str(sc, &scaling, NULL) == MHSA_OK &&
        strcmp(scaling, "none") != 0)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: llama.rope.scaling.type = "
                          "\"%.40s\" is not supported", path, scaling);
    static const char *const unsupported[] = {
        "rope_freqs.weight", "blk.0.attn_q.bias", "blk.0.attn_output.bias",
        "blk.0.ffn_gate_inp.weight",
    };
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (mhsa__gguf_tensor(f, unsupported[i]))
            return mhsa__fail(MHSA_ERR_FORMAT, "%s: tensor %s (a variant of "
                              "the llama architecture that is not "
                              "supported)", path, unsupported[i]);
    const mhsa_gguf_tensor *emb = mhsa__gguf_tensor(f, "token_embd.weight");
    if (!emb || emb->n_dims != 2 || emb->dims[1] != (size_t)c->d_model ||
        emb->dims[0] > (size_t)INT_MAX)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: token_embd.weight %s (want "
                          "(vocab, %d))", path, emb ? "has another shape" :
                          "is missing", c->d_model);
    c->vocab = (int)emb->dims[0];
    c->tied = mhsa__gguf_tensor(f, "output.weight") == NULL;
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

// "blk.<l>.<what>.weight"
static const char *layer_name(char *buf, size_t n, size_t l, const char *what)
{
    snprintf(buf, n, "blk.%zu.%s.weight", l, what);
    return buf;
}

// Layer l's tensors: norms and MLP into the model's weights at *off, the
// attention into its block (qkv: scratch of (nqkv + D) * D floats).
static mhsa_status load_layer(mhsa_llama *m, const mhsa_gguf_file *f,
                              size_t l, size_t *off, float *qkv)
{
    size_t D = m->D, F = m->F, dh = D / (size_t)m->cfg.n_head;
    size_t kvd = (size_t)m->cfg.n_kv_head * dh;
    llama_layer *ly = &m->layer[l];
    float *w = m->weights + *off;
    char name[64];
    mhsa_status st;
    if ((st = read1(f, layer_name(name, sizeof name, l, "attn_norm"), D, w)) ||
        (st = read1(f, layer_name(name, sizeof name, l, "ffn_norm"), D,
                    w + D)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "ffn_gate"), F, D,
                    w + 2 * D)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "ffn_up"), F, D,
                    w + 2 * D + F * D)) ||
        (st = read2(f, layer_name(name, sizeof name, l, "ffn_down"), D, F,
                    w + 2 * D + 2 * F * D)))
        return st;
    ly->attn_norm = w;
    ly->ffn_norm = w + D;
    ly->gate = w + 2 * D;
    ly->up = w + 2 * D + F * D;
    ly->down = w + 2 * D + 2 * F * D;
    *off += 2 * D + 3 * F * D;

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
    mhsa_config bc = { 0 };
    bc.d_model = (int)D;
    bc.n_heads = m->cfg.n_head;
    bc.max_seq_len = (int)m->cap;
    bc.causal = 1;
    bc.bias = 0;
    bc.n_kv_heads = m->cfg.n_kv_head;
    bc.rope_dim = m->cfg.rope_dim;
    bc.rope_theta = m->cfg.rope_theta;
    bc.rope_interleaved = 1;   // the converter's row order (llama.h)
    bc.weight_dtype = (int)m->wdt;
    if ((st = mhsa_block_create(&bc, &ly->blk)) ||
        (st = mhsa_block_set_weights(ly->blk, qkv, NULL, wo, NULL)))
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
    int untied = m->head != m->tok_emb;
    size_t n_mats = VD * (untied ? 2 : 1) + m->L * 3 * F * D;
    size_t n_norms = D + m->L * 2 * D;
    char *mats = mhsa__alloc(n_mats * es);
    float *norms = mhsa__alloc(n_norms * sizeof(float));
    if (!mats || !norms) {
        mhsa__free(mats);
        mhsa__free(norms);
        return 0;
    }
    char *mp = mats;
    float *np = norms;
#define MOVE_MAT(field, count)                                             \
    do {                                                                   \
        m->k->cvt_from_f32((count), (const float *)(field), mp, m->wdt);   \
        (field) = mp;                                                      \
        mp += (count) * es;                                                \
    } while (0)
#define MOVE_NORM(field)                                                   \
    do {                                                                   \
        memcpy(np, (field), D * sizeof(float));                            \
        (field) = np;                                                      \
        np += D;                                                           \
    } while (0)
    MOVE_MAT(m->tok_emb, VD);
    if (untied)
        MOVE_MAT(m->head, VD);
    else
        m->head = m->tok_emb;
    MOVE_NORM(m->out_norm);
    for (size_t l = 0; l < m->L; l++) {
        llama_layer *ly = &m->layer[l];
        MOVE_MAT(ly->gate, F * D);
        MOVE_MAT(ly->up, F * D);
        MOVE_MAT(ly->down, D * F);
        MOVE_NORM(ly->attn_norm);
        MOVE_NORM(ly->ffn_norm);
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
    if (!mhsa__mul(rows, 3 * D + 2 * F, &acts))
        return 0;
    m->acts = mhsa__alloc(acts * sizeof(float));
    if (!m->acts)
        return 0;
    m->x = m->acts;
    m->h = m->x + rows * D;
    m->att = m->h + rows * D;
    m->g = m->att + rows * D;
    m->u = m->g + rows * F;
    int nt = omp_get_max_threads();
    m->gs.max_threads = nt < 1 ? 1 : nt;
    size_t gb = mhsa_gemm_b_floats(m->k, F > D ? F : D), ga = gb;
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

static mhsa_status load(const char *path, int capacity, int weight_dtype,
                        mhsa_llama **out)
{
    static const char fn[] = "mhsa__llama_load";
    if (!path || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !path ? "path" : "out");
    if (weight_dtype != MHSA_F32 && weight_dtype != MHSA_F16 &&
        weight_dtype != MHSA_BF16)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: weight_dtype = %d is "
                          "not MHSA_F32, MHSA_F16 or MHSA_BF16", fn,
                          weight_dtype);
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
    mhsa_llama *m = mhsa__alloc(sizeof *m);
    if (!m) {
        mhsa__gguf_close(f);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", fn);
    }
    memset(m, 0, sizeof *m);
    m->cfg = cfg;
    m->k = mhsa__kernels();
    m->wdt = (mhsa_dtype)weight_dtype;
    m->V = (size_t)cfg.vocab;
    m->L = (size_t)cfg.n_layer;
    m->D = (size_t)cfg.d_model;
    m->F = (size_t)cfg.d_ff;
    m->cap = capacity ? (size_t)capacity
           : (size_t)(cfg.context < 4096 ? cfg.context : 4096);
    size_t D = m->D, F = m->F, V = m->V, dh = D / (size_t)cfg.n_head;
    size_t kvd = (size_t)cfg.n_kv_head * dh;
    // tok_emb, out_norm, head (untied), and per layer 2 norms + 3 MLP
    // matrices; the scratch for one layer's attention weights.
    // (The sizes were checked by the reader: each tensor fits the file.)
    size_t per_layer = 2 * D + 3 * F * D, vd = 0, total = 0;
    size_t qkv_floats = (D + 2 * kvd) * D + D * D;
    int ok = mhsa__mul(V, D, &vd) && mhsa__mul(vd, cfg.tied ? 1 : 2, &total)
             && mhsa__mul_add(&total, m->L, per_layer) && total + D > total;
    total += D;
    m->layer = ok ? mhsa__alloc(m->L * sizeof *m->layer) : NULL;
    m->weights = ok ? mhsa__alloc(total * sizeof(float)) : NULL;
    float *qkv = ok ? mhsa__alloc(qkv_floats * sizeof(float)) : NULL;
    if (!m->layer || !m->weights || !qkv || !alloc_buffers(m)) {
        mhsa__free(qkv);
        mhsa__llama_free(m);
        mhsa__gguf_close(f);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory for %s", fn,
                          path);
    }
    memset(m->layer, 0, m->L * sizeof *m->layer);
    size_t off = 0;
    float *w = m->weights;
    st = read2(f, "token_embd.weight", V, D, w);
    m->tok_emb = w;
    off += V * D;
    if (st == MHSA_OK && !cfg.tied) {
        st = read2(f, "output.weight", V, D, w + off);
        m->head = w + off;
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
    mhsa__free(qkv);
    mhsa__gguf_close(f);
    if (st == MHSA_OK && m->wdt != MHSA_F32 && !narrow_weights(m))
        st = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory for %s", fn,
                        path);
    if (st == MHSA_OK) {
        size_t es = mhsa_dtype_size(m->wdt);
        size_t mats = V * D * (cfg.tied ? 1 : 2) + m->L * 3 * F * D;
        m->weight_bytes = mats * es + (D + m->L * 2 * D) * sizeof(float);
        for (size_t l = 0; l < m->L; l++)
            m->weight_bytes += mhsa_block_weight_bytes(m->layer[l].blk);
        st = mhsa_workspace_create(m->layer[0].blk, 1, &m->ws);
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
