// gpt_io.c — GPT checkpoints in safetensors (safetensors.h): the parameters
// under their GPT names, the configuration in __metadata__ ("mhsa.gpt.*"),
// and optionally the AdamW moments ("optim.m", "optim.v", flat) and step,
// so that training resumes bit for bit. A PyTorch state_dict of the same
// model saved with the same metadata loads unchanged.
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"
#include "io/safetensors.h"

#define META_PREFIX "mhsa.gpt."

// The configuration fields a checkpoint records (max_batch is a property
// of the process, not of the model).
typedef struct cfg_field {
    const char *key;
    size_t offset;
} cfg_field;

#define FIELD(f) { META_PREFIX #f, offsetof(mhsa_gpt_config, f) }
static const cfg_field fields[] = {
    FIELD(vocab), FIELD(n_layer), FIELD(n_embd), FIELD(n_head),
    FIELD(block_size), FIELD(rope_dim), FIELD(tie_embeddings), FIELD(no_proj),
};
#undef FIELD
enum { N_FIELDS = sizeof fields / sizeof fields[0] };

static int *field_of(mhsa_gpt_config *c, int i)
{
    return (int *)((char *)c + fields[i].offset);
}

static int field_val(const mhsa_gpt_config *c, int i)
{
    return *(const int *)((const char *)c + fields[i].offset);
}

mhsa_status mhsa_gpt_save(const mhsa_gpt *g, const char *path, int with_optim,
                          const mhsa_meta *meta, size_t n_meta)
{
    if (!g || !path || (n_meta && !meta))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_save: %s is NULL",
                          !g ? "g" : !path ? "path" : "meta");
    for (size_t i = 0; i < n_meta; i++)
        if (meta[i].key && !strncmp(meta[i].key, META_PREFIX,
                                    strlen(META_PREFIX)))
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_save: "
                              "meta[%zu].key '%s' is reserved", i,
                              meta[i].key);
    if (with_optim && !g->m)
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "mhsa_gpt_save: with_optim: "
                          "a model with a 16-bit weight_dtype has no "
                          "optimiser state");
    size_t nt = (size_t)g->n_tensors + 2, nm = N_FIELDS + 1 + n_meta;
    mhsa_st_tensor *t = mhsa__alloc(nt * sizeof *t);
    mhsa_st_meta *m = mhsa__alloc(nm * sizeof *m);
    char (*vals)[32] = mhsa__alloc((N_FIELDS + 1) * sizeof *vals);
    if (!t || !m || !vals) {
        mhsa__free(t);
        mhsa__free(m);
        mhsa__free(vals);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_gpt_save: no memory");
    }
    size_t n = 0;
    for (int i = 0; i < g->n_tensors; i++, n++) {
        const gpt_tensor_info *ti = &g->tensors[i];
        t[n].name = ti->name;
        t[n].ndim = ti->rank;
        t[n].dims[0] = ti->rows;
        t[n].dims[1] = ti->cols;
        t[n].data = g->param + ti->off;
    }
    size_t k = 0;
    for (int i = 0; i < N_FIELDS; i++, k++) {
        snprintf(vals[k], sizeof vals[k], "%d", field_val(&g->cfg, i));
        m[k].key = fields[i].key;
        m[k].value = vals[k];
    }
    if (with_optim) {
        const char *names[2] = { "optim.m", "optim.v" };
        const float *data[2] = { g->m, g->v };
        for (int i = 0; i < 2; i++, n++) {
            t[n].name = names[i];
            t[n].ndim = 1;
            t[n].dims[0] = g->n_params;
            t[n].data = data[i];
        }
        snprintf(vals[k], sizeof vals[k], "%" PRId64, g->step);
        m[k].key = META_PREFIX "step";
        m[k].value = vals[k];
        k++;
    }
    for (size_t i = 0; i < n_meta; i++, k++) {
        m[k].key = meta[i].key;
        m[k].value = meta[i].value;
    }
    mhsa_status s = mhsa__st_write(path, t, n, m, k);
    mhsa__free(t);
    mhsa__free(m);
    mhsa__free(vals);
    return s;
}

// A whole decimal number in [lo, hi], else 0.
static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno == ERANGE || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

static mhsa_status config_of(const mhsa_st_file *f, const char *path,
                             mhsa_gpt_config *cfg)
{
    mhsa_gpt_config c = { 0 };
    for (int i = 0; i < N_FIELDS; i++) {
        const char *v = mhsa__st_meta(f, fields[i].key);
        int64_t x;
        if (!v)
            return mhsa__fail(MHSA_ERR_FORMAT, "%s: no GPT configuration "
                              "(metadata '%s' missing)", path, fields[i].key);
        if (!parse_i64(v, 0, INT32_MAX, &x))
            return mhsa__fail(MHSA_ERR_FORMAT, "%s: metadata '%s' = '%.32s' "
                              "is not a non-negative integer", path,
                              fields[i].key, v);
        *field_of(&c, i) = (int)x;
    }
    c.max_batch = 1;
    *cfg = c;
    return MHSA_OK;
}

mhsa_status mhsa_gpt_read_config(const char *path, mhsa_gpt_config *cfg)
{
    if (!path || !cfg)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_read_config: %s "
                          "is NULL", !path ? "path" : "cfg");
    mhsa_st_file *f = NULL;
    mhsa_status s = mhsa__st_open(path, &f);
    if (s == MHSA_OK)
        s = config_of(f, path, cfg);
    mhsa__st_close(f);
    return s;
}

mhsa_status mhsa_gpt_read_meta(const char *path, mhsa_meta_value *want,
                               size_t n_want)
{
    if (!path || (n_want && !want))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_read_meta: %s is "
                          "NULL", !path ? "path" : "want");
    for (size_t i = 0; i < n_want; i++)
        if (!want[i].key)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_read_meta: "
                              "want[%zu].key is NULL", i);
    mhsa_st_file *f = NULL;
    mhsa_status s = mhsa__st_open(path, &f);
    for (size_t i = 0; s == MHSA_OK && i < n_want; i++) {
        const char *v = mhsa__st_meta(f, want[i].key);
        if (v && strlen(v) >= sizeof want[i].value)
            s = mhsa__fail(MHSA_ERR_FORMAT, "%s: metadata '%s' is longer "
                           "than %zu bytes", path, want[i].key,
                           sizeof want[i].value - 1);
    }
    // All or nothing: the values are written only once every one fits.
    for (size_t i = 0; s == MHSA_OK && i < n_want; i++) {
        const char *v = mhsa__st_meta(f, want[i].key);
        want[i].present = v != NULL;
        strcpy(want[i].value, v ? v : "");
    }
    mhsa__st_close(f);
    return s;
}

// Reads one tensor, prefixing the reader's message with the file name.
static mhsa_status read_one(const mhsa_st_file *f, const char *path,
                            const char *name, int ndim, const size_t *dims,
                            float *dst)
{
    mhsa_status s = mhsa__st_read_f32(f, name, ndim, dims, dst);
    if (s != MHSA_OK) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", mhsa_last_error());
        mhsa__fail(s, "%s: %s", path, msg);
    }
    return s;
}

mhsa_status mhsa_gpt_load(mhsa_gpt *g, const char *path, int with_optim)
{
    if (!g || !path)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_gpt_load: %s is NULL",
                          !g ? "g" : "path");
    if (with_optim && !g->m)
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "mhsa_gpt_load: with_optim: "
                          "a model with a 16-bit weight_dtype has no "
                          "optimiser state");
    mhsa_st_file *f = NULL;
    mhsa_status s = mhsa__st_open(path, &f);
    mhsa_gpt_config c;
    if (s == MHSA_OK)
        s = config_of(f, path, &c);
    for (int i = 0; s == MHSA_OK && i < N_FIELDS; i++)
        if (field_val(&c, i) != field_val(&g->cfg, i))
            s = mhsa__fail(MHSA_ERR_FORMAT, "%s: %s = %d, but the model has "
                           "%d", path, fields[i].key + strlen(META_PREFIX),
                           field_val(&c, i), field_val(&g->cfg, i));
    int64_t step = 0;
    if (s == MHSA_OK && with_optim &&
        !parse_i64(mhsa__st_meta(f, META_PREFIX "step"), 0, INT64_MAX,
                   &step))
        s = mhsa__fail(MHSA_ERR_FORMAT, "%s: no optimiser state (metadata "
                       "'" META_PREFIX "step' missing or invalid)", path);
    // Everything is read into a copy first: on failure g is unchanged.
    size_t np = g->n_params, copies = with_optim ? 3 : 1;
    float *tmp = NULL;
    if (s == MHSA_OK) {
        tmp = mhsa__alloc(copies * np * sizeof(float));
        if (!tmp)
            s = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
    }
    for (int i = 0; s == MHSA_OK && i < g->n_tensors; i++) {
        const gpt_tensor_info *ti = &g->tensors[i];
        size_t dims[2] = { ti->rows, ti->cols };
        s = read_one(f, path, ti->name, ti->rank, dims, tmp + ti->off);
    }
    if (s == MHSA_OK && with_optim) {
        size_t dims[1] = { np };
        s = read_one(f, path, "optim.m", 1, dims, tmp + np);
        if (s == MHSA_OK)
            s = read_one(f, path, "optim.v", 1, dims, tmp + 2 * np);
    }
    if (s == MHSA_OK) {
        memcpy(g->param, tmp, np * sizeof(float));
        if (with_optim) {
            memcpy(g->m, tmp + np, 2 * np * sizeof(float));
            g->step = step;
        }
        g->have_forward = 0;
    }
    mhsa__free(tmp);
    mhsa__st_close(f);
    return s;
}
