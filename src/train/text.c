// text.c — a byte-level corpus (mhsa_train.h): loading a file or a folder of
// files, the held-out tail, random training windows and the fixed
// validation windows. The sampler is splitmix64 modulo the number of start
// positions, simple enough that the PyTorch peer (tools/gpt_peer.py)
// draws the very same batches.
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"
#include "core/alloc.h"
#include "train_internal.h"

struct mhsa_text {
    uint8_t *bytes;
    size_t n, n_train, n_val;
};

void mhsa_text_destroy(mhsa_text *t)
{
    if (!t)
        return;
    mhsa__free(t->bytes);
    mhsa__free(t);
}

// Appends the file at path to *buf (capacity *cap, length *len).
static mhsa_status append_file(const char *path, uint8_t **buf, size_t *len,
                               size_t *cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return mhsa__fail(MHSA_ERR_IO, "%s: cannot open: %s", path,
                          strerror(errno));
    mhsa_status s = MHSA_OK;
    for (;;) {
        if (*cap - *len < 65536) {
            size_t ncap = *cap ? 2 * *cap : 1 << 20;
            uint8_t *nb = ncap > *cap ? mhsa__alloc(ncap) : NULL;
            if (!nb) {
                s = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
                break;
            }
            if (*len)
                memcpy(nb, *buf, *len);
            mhsa__free(*buf);
            *buf = nb;
            *cap = ncap;
        }
        size_t r = fread(*buf + *len, 1, *cap - *len, f);
        *len += r;
        if (r == 0) {
            if (ferror(f))
                s = mhsa__fail(MHSA_ERR_IO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    return s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// The regular files of dir with no '.' in their names, sorted; *names is
// one allocation holding the pointers and the strings.
static mhsa_status list_dir(const char *dir, char ***names, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d)
        return mhsa__fail(MHSA_ERR_IO, "%s: cannot open: %s", dir,
                          strerror(errno));
    // Two passes over the directory: count and size, then fill.
    size_t n = 0, bytes = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strchr(e->d_name, '.')) {
            n++;
            bytes += strlen(dir) + strlen(e->d_name) + 2;
        }
    char **v = mhsa__alloc(n * sizeof *v + bytes + 1);
    if (!v) {
        closedir(d);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", dir);
    }
    char *s = (char *)(v + n);
    size_t k = 0;
    rewinddir(d);
    while ((e = readdir(d)) && k < n) {
        if (strchr(e->d_name, '.'))
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if ((size_t)(s - (char *)(v + n)) + len > bytes)
            break;   // the directory grew between the passes
        snprintf(s, len, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(s, &st) == 0 && S_ISREG(st.st_mode)) {
            v[k++] = s;
            s += len;
        }
    }
    closedir(d);
    qsort(v, k, sizeof *v, cmp_str);
    *names = v;
    *count = k;
    return MHSA_OK;
}

mhsa_status mhsa_text_load(const char *path, double val_fraction,
                           mhsa_text **out)
{
    if (!path || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_text_load: %s is NULL",
                          !path ? "path" : "out");
    if (!(val_fraction >= 0.0 && val_fraction < 1.0))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_text_load: "
                          "val_fraction = %g (need [0, 1))", val_fraction);
    struct stat st;
    if (stat(path, &st) != 0)
        return mhsa__fail(MHSA_ERR_IO, "%s: cannot open: %s", path,
                          strerror(errno));
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    mhsa_status s = MHSA_OK;
    if (S_ISDIR(st.st_mode)) {
        char **names = NULL;
        size_t count = 0;
        s = list_dir(path, &names, &count);
        for (size_t i = 0; s == MHSA_OK && i < count; i++)
            s = append_file(names[i], &buf, &len, &cap);
        mhsa__free(names);
    } else {
        s = append_file(path, &buf, &len, &cap);
    }
    if (s == MHSA_OK && len == 0)
        s = mhsa__fail(MHSA_ERR_FORMAT, "%s: empty (no bytes to train on)",
                       path);
    mhsa_text *t = s == MHSA_OK ? mhsa__alloc(sizeof *t) : NULL;
    if (s == MHSA_OK && !t)
        s = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
    if (s != MHSA_OK) {
        mhsa__free(buf);
        return s;
    }
    t->bytes = buf;
    t->n = len;
    t->n_val = (size_t)((double)len * val_fraction);
    t->n_train = len - t->n_val;
    *out = t;
    return MHSA_OK;
}

size_t mhsa_text_len(const mhsa_text *t, int split)
{
    return !t ? 0 : split ? t->n_val : t->n_train;
}

const uint8_t *mhsa_text_bytes(const mhsa_text *t)
{
    return t ? t->bytes : NULL;
}

// tokens/targets row of T from the T + 1 bytes at p.
static void window(const uint8_t *p, int T, int32_t *tok, int32_t *tgt)
{
    for (int i = 0; i < T; i++) {
        tok[i] = p[i];
        tgt[i] = p[i + 1];
    }
}

mhsa_status mhsa_text_batch(const mhsa_text *t, uint64_t *rng, int B, int T,
                            int32_t *tokens, int32_t *targets)
{
    if (!t || !rng || !tokens || !targets || B < 1 || T < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_text_batch: NULL "
                          "argument or B = %d, T = %d < 1", B, T);
    if (t->n_train < (size_t)T + 1)
        return mhsa__fail(MHSA_ERR_SHAPE, "mhsa_text_batch: %zu training "
                          "bytes, fewer than one window of T + 1 = %d",
                          t->n_train, T + 1);
    uint64_t starts = (uint64_t)(t->n_train - (size_t)T);
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)(mhsa__splitmix64(rng) % starts);
        window(t->bytes + o, T, tokens + (size_t)b * (size_t)T,
               targets + (size_t)b * (size_t)T);
    }
    return MHSA_OK;
}

size_t mhsa_text_val_windows(const mhsa_text *t, int T)
{
    if (!t || T < 1 || t->n_val < 1)
        return 0;
    return (t->n_val - 1) / (size_t)T;
}

mhsa_status mhsa_text_val_batch(const mhsa_text *t, size_t first, int B,
                                int T, int32_t *tokens, int32_t *targets,
                                int *rows)
{
    size_t nw = mhsa_text_val_windows(t, T);
    if (!t || !tokens || !targets || !rows || B < 1 || T < 1 || first >= nw)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_text_val_batch: NULL "
                          "argument, B = %d or T = %d < 1, or first = %zu "
                          "not below the %zu windows", B, T, first, nw);
    const uint8_t *val = t->bytes + t->n_train;
    int r = 0;
    for (; r < B && first + (size_t)r < nw; r++)
        window(val + (first + (size_t)r) * (size_t)T, T,
               tokens + (size_t)r * (size_t)T,
               targets + (size_t)r * (size_t)T);
    *rows = r;
    return MHSA_OK;
}
