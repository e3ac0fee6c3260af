// llama_load.c — a Llama model from its GGUF file (llama.h): the
// hyper-parameters from the llama.* metadata, every tensor checked for its
// shape and dequantized to fp32, the attention weights into one mhsa_block
// per layer, the buffers of the forward sized once for the capacity.
#include <float.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fpenv.h"
#include "io/file_read.h"
#include "models/gguf/gguf.h"
#include "models/llama/llama_internal.h"

void mhsa__llama_free(mhsa_llama *m)
{
    if (!m)
        return;
    for (size_t l = 0; m->layer && l < m->L; l++)
        mhsa_block_destroy(m->layer[l].blk);
    mhsa__free(m->layer);
    mhsa_workspace_destroy(m->ws);
    MHSA_FREE_ALL(m->weights, m->mats, m->acts, m->gemm_buf, m);
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
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: no metadata key %s (a "
                          "llama model needs it)", path, key);
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

// A layer's tensors: "blk.<l>.<what>.weight".
static const char *const layer_what[] = {
    "attn_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down",
    "attn_q", "attn_k", "attn_v", "attn_output",
};
enum { N_LAYER_TENSORS = sizeof layer_what / sizeof layer_what[0] };

// "blk.<l>.<what>.weight"
static const char *layer_name(char *buf, size_t n, size_t l, const char *what)
{
    snprintf(buf, n, "blk.%zu.%s.weight", l, what);
    return buf;
}

// The shape (outermost first) of layer tensor layer_what[i].
static int layer_shape(const mhsa_llama_config *c, int i, size_t dims[2])
{
    size_t D = (size_t)c->d_model, F = (size_t)c->d_ff;
    size_t kvd = (size_t)c->n_kv_head * (D / (size_t)c->n_head);
    static const int rows_cols[N_LAYER_TENSORS][2] = {
        // 'D' = d_model, 'F' = d_ff, 'K' = kv width, 0 = none
        {'D', 0}, {'D', 0}, {'F', 'D'}, {'F', 'D'}, {'D', 'F'},
        {'D', 'D'}, {'K', 'D'}, {'K', 'D'}, {'D', 'D'},
    };
    for (int k = 0; k < 2; k++) {
        int x = rows_cols[i][k];
        dims[k] = x == 'D' ? D : x == 'F' ? F : kvd;
    }
    return rows_cols[i][1] ? 2 : 1;
}

// Whether tensor `name` is one the model of c reads.
static int used_tensor(const mhsa_llama_config *c, const char *name)
{
    if (!strcmp(name, "token_embd.weight") ||
        !strcmp(name, "output_norm.weight") ||
        (!c->tied && !strcmp(name, "output.weight")))
        return 1;
    if (strncmp(name, "blk.", 4) || name[4] < '0' || name[4] > '9')
        return 0;
    unsigned long long l = strtoull(name + 4, NULL, 10);
    if (l >= (unsigned long long)c->n_layer)
        return 0;
    char buf[64];
    for (int i = 0; i < N_LAYER_TENSORS; i++)   // exact: no "blk.01."
        if (!strcmp(name, layer_name(buf, sizeof buf, (size_t)l,
                                     layer_what[i])))
            return 1;
    return 0;
}

// The error of a tensor check again, with what the metadata says.
static mhsa_status with_sizes(mhsa_status st, const char *path,
                              const mhsa_llama_config *c)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%s", mhsa_last_error());
    return mhsa__fail(st, "%s: %s (the metadata says llama.block_count = "
                      "%d, llama.embedding_length = %d, "
                      "llama.feed_forward_length = %d)", path, msg,
                      c->n_layer, c->d_model, c->d_ff);
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
    char name[64];
    for (size_t l = 0; st == MHSA_OK && l < (size_t)c->n_layer; l++)
        for (int i = 0; st == MHSA_OK && i < N_LAYER_TENSORS; i++) {
            int nd = layer_shape(c, i, dims);
            st = mhsa__gguf_check_f32(f, layer_name(name, sizeof name, l,
                                                    layer_what[i]),
                                      nd, dims);
        }
    if (st != MHSA_OK)
        return with_sizes(st, path, c);
    // All present, names unique: any more in the file are unused.
    size_t used = 2 + !c->tied + (size_t)c->n_layer * N_LAYER_TENSORS;
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
                      "llama model of llama.block_count = %d", path, used, n,
                      mhsa__esc(q, sizeof q, extra, strlen(extra)),
                      c->n_layer);
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
    if (strcmp(arch, "llama") != 0 || arch_len != 5) {
        char q[48];
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: general.architecture is "
                          "\"%s\"; only \"llama\" is supported", path,
                          mhsa__esc(q, sizeof q, arch, arch_len));
    }
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
    // (Of another type it is malformed, not a value to pass over.)
    const mhsa_gguf_val *sc = mhsa__gguf_find(f, "llama.rope.scaling.type");
    const char *scaling = NULL;
    size_t sc_len = 0;
    if (sc && mhsa__gguf_val_type(sc) != MHSA_GGUF_STRING)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: llama.rope.scaling.type is "
                          "a %s, not a string", path,
                          mhsa__gguf_type_name(mhsa__gguf_val_type(sc)));
    if (sc && mhsa__gguf_val_str(sc, &scaling, &sc_len) == MHSA_OK &&
        (strcmp(scaling, "none") != 0 || sc_len != 4)) {
        char q[48];
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: llama.rope.scaling.type = "
                          "\"%s\" is not supported", path,
                          mhsa__esc(q, sizeof q, scaling, sc_len));
    }
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
    return check_tensors(f, path, c);
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

// Bytes a load of c for cap positions holds at its peak, roughly: the
// fp32 weights as read, their 16-bit copy while narrowing, the blocks'
// attention weights and the load's scratch for one layer's, the
// activations. A double: metadata may imply more than 2^64.
static double bytes_needed(const mhsa_llama_config *c, size_t cap,
                           mhsa_dtype wdt)
{
    double V = c->vocab, D = c->d_model, F = c->d_ff, L = c->n_layer;
    double kvd = (double)c->n_kv_head * (double)(c->d_model / c->n_head);
    double mats = V * D * (c->tied ? 1 : 2) + L * 3 * F * D;
    double norms = D + L * 2 * D, one_attn = (D + 2 * kvd) * D + D * D;
    double es = (double)mhsa_dtype_size(wdt);
    return 4 * (mats + norms) + (wdt != MHSA_F32 ? es * mats : 0) +
           es * L * one_attn + 4 * one_attn +
           4 * (double)cap * (3 * D + 2 * F);
}

mhsa_status mhsa__llama_check_memory(const mhsa_llama_config *c, size_t cap,
                                     mhsa_dtype wdt, const char *path,
                                     uint64_t avail)
{
    double need = bytes_needed(c, cap, wdt);
    if (need <= (double)avail && need < (double)SIZE_MAX)
        return MHSA_OK;
    return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: the model needs %.1f GB "
                      "(llama.block_count = %d, llama.embedding_length = "
                      "%d, llama.feed_forward_length = %d, %d tokens, %zu "
                      "positions), more than the %.1f GB of memory there "
                      "is", path, need / 1e9, c->n_layer, c->d_model,
                      c->d_ff, c->vocab, cap, (double)avail / 1e9);
}

// MHSA_ERR_NO_MEMORY naming what the metadata asked for.
static mhsa_status no_memory(const char *path, const mhsa_llama_config *c,
                             size_t cap, mhsa_dtype wdt)
{
    return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory for the model's "
                      "%.1f GB (llama.block_count = %d, "
                      "llama.embedding_length = %d, llama.feed_forward_length"
                      " = %d, %d tokens, %zu positions)", path,
                      bytes_needed(c, cap, wdt) / 1e9, c->n_layer,
                      c->d_model, c->d_ff, c->vocab, cap);
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
    size_t cap = capacity ? (size_t)capacity
               : (size_t)(cfg.context < 4096 ? cfg.context : 4096);
    // Every tensor was checked against the metadata (read_config): what
    // is left to refuse before allocating is a model the machine cannot
    // hold.
    if ((st = mhsa__llama_check_memory(&cfg, cap, (mhsa_dtype)weight_dtype,
                                       path, physical_memory()))) {
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
    m->wdt = (mhsa_dtype)weight_dtype;
    m->V = (size_t)cfg.vocab;
    m->L = (size_t)cfg.n_layer;
    m->D = (size_t)cfg.d_model;
    m->F = (size_t)cfg.d_ff;
    m->cap = cap;
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
        return no_memory(path, &cfg, cap, (mhsa_dtype)weight_dtype);
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
        st = no_memory(path, &cfg, cap, m->wdt);
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
