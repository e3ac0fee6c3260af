// weight_names.c — the block's weights in a .safetensors file:
// mhsa_block_load_safetensors and mhsa_block_save_safetensors(_ex), over
// the format's reader and writer (safetensors.c).
//
// The block's weights are four buffers, as mhsa_block_set_weights takes
// them: w_qkv ((H + 2*Hkv)*dh, D) = rows [Wq (D); Wk (Hkv*dh); Wv (Hkv*dh)],
// b_qkv ((H + 2*Hkv)*dh), w_out (D, D), b_out (D). A file names them in one
// of three sets (in mhsa_names order, the order they are tried): PyTorch's
// fused in_proj_*, or one tensor per projection as Hugging Face (q_proj, ...)
// and the lesson's GPT (c_q, ...) name them. Every tensor of every set is a
// run of whole rows of one buffer, so loading reads each tensor straight
// into its rows of a temporary and saving points each one at its rows.
//
// Which set is loaded. A tensor of a set is *required* when it is a weight,
// or a bias of a block with bias = 1 (with bias = 0 no bias is required or
// read). A set is *complete* when every required tensor of it is present,
// by name after the prefix, whatever its dtype and shape. The first
// complete set is loaded and every other tensor of the file is ignored
// (those of the other sets too). Only then are dtypes and shapes checked:
// a tensor of the chosen set with another shape or a non-float dtype is
// MHSA_ERR_FORMAT naming it (with expected and found shape), even when a
// later set would have fitted, so that which tensors are read never
// depends on their shapes. When no set is complete, the error names the
// first missing tensor of the PyTorch set (as 0.1 did) and then every
// *partial* set, one with some but not all of its required tensors
// present, with the tensors it lacks: a file holding q_proj and k_proj
// only says that v_proj and o_proj are missing.
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "safetensors.h"

enum { W_QKV, B_QKV, W_OUT, B_OUT, N_BUFS };  // set_weights' argument order
enum { ROWS_ALL, ROWS_Q, ROWS_K, ROWS_V };     // which rows of the buffer
enum { N_SETS = 3, SET_MAX = 8 };

typedef struct set_tensor {
    const char *suffix;   // the name after the prefix
    int buf, rows;
} set_tensor;

static const struct name_set {
    const char *label;
    int n;
    set_tensor t[SET_MAX];   // module order, each weight before its bias
} name_sets[N_SETS] = {
    [MHSA_NAMES_TORCH] = {"PyTorch", 4, {
        {"in_proj_weight", W_QKV, ROWS_ALL},
        {"in_proj_bias", B_QKV, ROWS_ALL},
        {"out_proj.weight", W_OUT, ROWS_ALL},
        {"out_proj.bias", B_OUT, ROWS_ALL},
    }},
    [MHSA_NAMES_HF] = {"Hugging Face", 8, {
        {"q_proj.weight", W_QKV, ROWS_Q}, {"q_proj.bias", B_QKV, ROWS_Q},
        {"k_proj.weight", W_QKV, ROWS_K}, {"k_proj.bias", B_QKV, ROWS_K},
        {"v_proj.weight", W_QKV, ROWS_V}, {"v_proj.bias", B_QKV, ROWS_V},
        {"o_proj.weight", W_OUT, ROWS_ALL}, {"o_proj.bias", B_OUT, ROWS_ALL},
    }},
    [MHSA_NAMES_C] = {"GPT c_*", 8, {
        {"c_q.weight", W_QKV, ROWS_Q}, {"c_q.bias", B_QKV, ROWS_Q},
        {"c_k.weight", W_QKV, ROWS_K}, {"c_k.bias", B_QKV, ROWS_K},
        {"c_v.weight", W_QKV, ROWS_V}, {"c_v.bias", B_QKV, ROWS_V},
        {"c_proj.weight", W_OUT, ROWS_ALL}, {"c_proj.bias", B_OUT, ROWS_ALL},
    }},
};

// What loading and saving a block share: the sizes, a temporary per buffer
// the block has (the biases are NULL when bias == 0) and every set's names
// after the prefix, in one allocation.
typedef struct block_io {
    size_t D, kv_rows;           // D and Hkv*dh
    float *w[N_BUFS];
    char *store;
    const char *name[N_SETS][SET_MAX];
} block_io;

static void block_io_free(block_io *io)
{
    for (int i = 0; i < N_BUFS; i++)
        mhsa__free(io->w[i]);
    mhsa__free(io->store);
}

// Shape of tensor i of set s and where it lives in the temporaries (NULL
// when the tensor is not required: a bias of a block without biases).
static float *io_slot(const block_io *io, int s, int i, int *ndim,
                      size_t dims[2])
{
    const set_tensor *t = &name_sets[s].t[i];
    size_t D = io->D, row0 = 0;
    size_t rows = t->buf == W_OUT || t->buf == B_OUT ? D : D + 2 * io->kv_rows;
    if (t->rows == ROWS_Q) {
        rows = D;
    } else if (t->rows == ROWS_K) {
        row0 = D;
        rows = io->kv_rows;
    } else if (t->rows == ROWS_V) {
        row0 = D + io->kv_rows;
        rows = io->kv_rows;
    }
    int matrix = t->buf == W_QKV || t->buf == W_OUT;
    *ndim = matrix ? 2 : 1;
    dims[0] = rows;
    dims[1] = D;
    return io->w[t->buf] ? io->w[t->buf] + row0 * (matrix ? D : 1) : NULL;
}

static mhsa_status block_io_make(const mhsa_config *cfg, const char *path,
                                 const char *prefix, block_io *io)
{
    memset(io, 0, sizeof *io);
    // The block's config was validated when it was created, so these sizes
    // fit: they are the ones mhsa_block_create allocated.
    size_t D = (size_t)cfg->d_model, H = (size_t)cfg->n_heads;
    size_t Hkv = cfg->n_kv_heads > 0 ? (size_t)cfg->n_kv_heads : H;
    io->D = D;
    io->kv_rows = Hkv * (D / H);
    size_t qkv = D + 2 * io->kv_rows;
    const size_t floats[N_BUFS] = {qkv * D, qkv, D * D, D};
    prefix = prefix ? prefix : "";
    size_t plen = strlen(prefix), cap = 0;
    for (int s = 0; s < N_SETS; s++)
        for (int i = 0; i < name_sets[s].n; i++)
            cap += plen + strlen(name_sets[s].t[i].suffix) + 1;
    mhsa_status st = MHSA_OK;
    char *p = io->store = mhsa__alloc(cap);
    if (!p)
        st = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
    else
        for (int s = 0; s < N_SETS; s++)
            for (int i = 0; i < name_sets[s].n; i++) {
                size_t n = strlen(name_sets[s].t[i].suffix) + 1;
                io->name[s][i] = p;
                memcpy(p, prefix, plen);
                memcpy(p + plen, name_sets[s].t[i].suffix, n);
                p += plen + n;
            }
    for (int b = 0; st == MHSA_OK && b < N_BUFS; b++) {
        if (!cfg->bias && (b == B_QKV || b == B_OUT))
            continue;
        io->w[b] = mhsa__alloc(floats[b] * sizeof(float));
        if (!io->w[b])
            st = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
    }
    if (st != MHSA_OK)
        block_io_free(io);
    return st;
}

static int present(const mhsa_st_file *f, const char *name)
{
    int ndim;
    size_t dims[MHSA_ST_MAX_DIMS];
    return mhsa__st_shape(f, name, &ndim, dims);
}

// The first complete set of the file into *set, or FORMAT naming what is
// missing (see the top of this section).
static mhsa_status pick_set(const mhsa_st_file *f, const char *path,
                            const block_io *io, int *set)
{
    int have[N_SETS], need[N_SETS];
    const char *first_missing = NULL;
    for (int s = 0; s < N_SETS; s++) {
        have[s] = need[s] = 0;
        for (int i = 0; i < name_sets[s].n; i++) {
            int ndim;
            size_t dims[2];
            if (!io_slot(io, s, i, &ndim, dims))
                continue;
            need[s]++;
            if (present(f, io->name[s][i]))
                have[s]++;
            else if (s == MHSA_NAMES_TORCH && !first_missing)
                first_missing = io->name[s][i];
        }
        if (have[s] == need[s]) {
            *set = s;
            return MHSA_OK;
        }
    }
    // The message is built here and handed over whole (mhsa__fail keeps
    // the first 255 bytes, so the PyTorch name comes first).
    char msg[256];
    size_t len = (size_t)snprintf(msg, sizeof msg, "%s: tensor '%s' not "
                                  "found; no set of weight names is "
                                  "complete", path, first_missing);
    for (int s = 0; s < N_SETS && len < sizeof msg; s++) {
        if (have[s] == 0)
            continue;
        int listed = 0;
        for (int i = 0; i < name_sets[s].n && len < sizeof msg; i++) {
            int ndim;
            size_t dims[2];
            if (!io_slot(io, s, i, &ndim, dims) ||
                present(f, io->name[s][i]))
                continue;
            if (listed++)
                len += (size_t)snprintf(msg + len, sizeof msg - len, ", %s",
                                        name_sets[s].t[i].suffix);
            else
                len += (size_t)snprintf(msg + len, sizeof msg - len,
                                        "; the %s set lacks %s",
                                        name_sets[s].label,
                                        name_sets[s].t[i].suffix);
        }
    }
    return mhsa__fail(MHSA_ERR_FORMAT, "%s", msg);
}

mhsa_status mhsa_block_load_safetensors(mhsa_block *blk, const char *path,
                                        const char *prefix)
{
    if (!blk || !path)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_block_load_safetensors: %s is NULL",
                          !blk ? "blk" : "path");
    block_io io;
    mhsa_st_file *f = NULL;
    int set = 0;
    mhsa_status s = block_io_make(mhsa_block_config(blk), path, prefix, &io);
    if (s != MHSA_OK)
        return s;
    s = mhsa__st_open(path, &f);
    if (s == MHSA_OK)
        s = pick_set(f, path, &io, &set);
    // Read into the temporaries: the block changes only once every tensor
    // of the set has been read and checked.
    for (int i = 0; s == MHSA_OK && i < name_sets[set].n; i++) {
        int ndim;
        size_t dims[2];
        float *dst = io_slot(&io, set, i, &ndim, dims);
        if (!dst)
            continue;
        s = mhsa__st_read_f32(f, io.name[set][i], ndim, dims, dst);
        if (s != MHSA_OK) {
            // Prefix the reader's message with the file name.
            char msg[200];
            snprintf(msg, sizeof msg, "%s", mhsa_last_error());
            mhsa__fail(s, "%s: %s", path, msg);
        }
    }
    if (s == MHSA_OK)
        s = mhsa_block_set_weights(blk, io.w[W_QKV], io.w[B_QKV],
                                   io.w[W_OUT], io.w[B_OUT]);
    mhsa__st_close(f);
    block_io_free(&io);
    return s;
}

mhsa_status mhsa_block_save_safetensors_ex(const mhsa_block *blk,
                                           const char *path,
                                           const char *prefix,
                                           mhsa_names names)
{
    if (!blk || !path)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_block_save_safetensors: %s is NULL",
                          !blk ? "blk" : "path");
    int set = (int)names;
    if (set < 0 || set >= N_SETS)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_block_save_safetensors_ex: names = %d is "
                          "not a mhsa_names value (0..%d)", set, N_SETS - 1);
    block_io io;
    mhsa_status s = block_io_make(mhsa_block_config(blk), path, prefix, &io);
    if (s != MHSA_OK)
        return s;
    mhsa_st_tensor t[SET_MAX];
    size_t n = 0;
    for (int i = 0; i < name_sets[set].n; i++) {
        size_t dims[2];
        const float *src = io_slot(&io, set, i, &t[n].ndim, dims);
        if (!src)
            continue;
        t[n].name = io.name[set][i];
        memset(t[n].dims, 0, sizeof t[n].dims);
        memcpy(t[n].dims, dims, sizeof dims);
        t[n].data = src;
        // The weights in the block's stored type (the values get_weights
        // gives are already of that type, so the rounding is exact).
        int buf = name_sets[set].t[i].buf;
        t[n].dtype = buf == W_QKV || buf == W_OUT
                   ? (mhsa_dtype)mhsa_block_config(blk)->weight_dtype
                   : MHSA_F32;
        n++;
    }
    s = mhsa_block_get_weights(blk, io.w[W_QKV], io.w[B_QKV], io.w[W_OUT],
                               io.w[B_OUT]);
    if (s == MHSA_OK)
        s = mhsa__st_write_f32(path, t, n);
    block_io_free(&io);
    return s;
}

mhsa_status mhsa_block_save_safetensors(const mhsa_block *blk,
                                        const char *path, const char *prefix)
{
    return mhsa_block_save_safetensors_ex(blk, path, prefix,
                                          MHSA_NAMES_TORCH);
}
