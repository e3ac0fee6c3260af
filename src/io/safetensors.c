// safetensors.c — the validating .safetensors reader and the F32 writer
// (see safetensors.h for the format and the guarantees). The block's
// weight names on top of them are weight_names.c; the trainer's
// checkpoints use them directly.
//
// The JSON header is parsed by jansson, not by hand: it checks UTF-8, and
// with JSON_REJECT_DUPLICATES it refuses a repeated name (by default it
// would silently keep the last one, letting two tensors claim one name).
// Everything jansson returns is then checked again as untrusted: types,
// signs, the shape/offset arithmetic (overflow-checked) and that the
// tensors tile the data region with no gap and no overlap, before a single
// tensor byte is read.
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "file_read.h"
#include "core/status.h"
#include "core/alloc.h"
#include "kernels/half.h"
#include "safetensors.h"

// safetensors' own reader refuses headers above 100 MB; so do we, so that
// a file that is mostly header cannot make us parse gigabytes of JSON.
#define ST_MAX_HEADER ((uint64_t)100000000)
// Chunk for converting tensor bytes: reading through a small buffer keeps
// memory at O(chunk), whatever the tensor size the file claims.
#define ST_CHUNK ((size_t)1 << 16)

// Every dtype the format defines and its size in bytes. A file may hold any
// of them; only F32/F16/BF16 tensors can be read as fp32.
typedef enum st_dtype {
    ST_F32, ST_F16, ST_BF16, ST_OTHER
} st_dtype;

static const struct { const char *name; size_t size; st_dtype kind; }
st_dtypes[] = {
    {"F32", 4, ST_F32},   {"F16", 2, ST_F16},   {"BF16", 2, ST_BF16},
    {"BOOL", 1, ST_OTHER}, {"U8", 1, ST_OTHER}, {"I8", 1, ST_OTHER},
    {"F8_E5M2", 1, ST_OTHER}, {"F8_E4M3", 1, ST_OTHER},
    {"I16", 2, ST_OTHER}, {"U16", 2, ST_OTHER}, {"I32", 4, ST_OTHER},
    {"U32", 4, ST_OTHER}, {"F64", 8, ST_OTHER}, {"I64", 8, ST_OTHER},
    {"U64", 8, ST_OTHER},
};
enum { ST_N_DTYPES = sizeof st_dtypes / sizeof st_dtypes[0] };

typedef struct st_entry {
    const char *name;     // points into the handle's JSON (kept alive)
    int dtype;            // index into st_dtypes
    int ndim;
    size_t dims[MHSA_ST_MAX_DIMS];
    size_t begin, end;    // byte offsets into the data region
} st_entry;

struct mhsa_st_file {
    int fd;
    json_t *root;         // owns the names
    uint64_t data_start;  // 8 + header length
    size_t n;
    st_entry *e;          // sorted by offset
};

// ---- small helpers --------------------------------------------------------

static int write_full(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = write(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

// A JSON integer in [0, SIZE_MAX], else 0. jansson keeps integers as
// json_int_t (long long); reals, negatives and out-of-range values fail.
static int json_size(const json_t *v, size_t *out)
{
    if (!json_is_integer(v))
        return 0;
    json_int_t i = json_integer_value(v);
    if (i < 0 || (unsigned long long)i > SIZE_MAX)
        return 0;
    *out = (size_t)i;
    return 1;
}

static int cmp_entry(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

// ---- reading --------------------------------------------------------------

// Fills *e from one header entry; FORMAT naming the tensor on any problem.
static mhsa_status parse_entry(const char *path, const char *name,
                               json_t *v, st_entry *e)
{
    if (!json_is_object(v))
        return mhsa__fail(MHSA_ERR_FORMAT,
                          "%s: tensor '%s': header entry is not an object",
                          path, name);
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") &&
            strcmp(key, "data_offsets"))
            return mhsa__fail(MHSA_ERR_FORMAT,
                              "%s: tensor '%s': unknown field '%s'",
                              path, name, key);
    }
    json_t *dt = json_object_get(v, "dtype");
    json_t *shape = json_object_get(v, "shape");
    json_t *offs = json_object_get(v, "data_offsets");
    if (!json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs))
        return mhsa__fail(MHSA_ERR_FORMAT,
                          "%s: tensor '%s': needs string dtype, array shape "
                          "and array data_offsets", path, name);
    e->name = name;
    e->dtype = -1;
    for (int i = 0; i < ST_N_DTYPES; i++)
        if (!strcmp(json_string_value(dt), st_dtypes[i].name))
            e->dtype = i;
    if (e->dtype < 0)
        return mhsa__fail(MHSA_ERR_FORMAT,
                          "%s: tensor '%s': unknown dtype '%.32s'",
                          path, name, json_string_value(dt));
    size_t nd = json_array_size(shape);
    if (nd > MHSA_ST_MAX_DIMS)
        return mhsa__fail(MHSA_ERR_FORMAT,
                          "%s: tensor '%s': %zu dimensions (at most %d)",
                          path, name, nd, MHSA_ST_MAX_DIMS);
    e->ndim = (int)nd;
    size_t bytes = st_dtypes[e->dtype].size;
    for (size_t i = 0; i < nd; i++) {
        if (!json_size(json_array_get(shape, i), &e->dims[i]))
            return mhsa__fail(MHSA_ERR_FORMAT,
                              "%s: tensor '%s': shape[%zu] is not a "
                              "non-negative integer", path, name, i);
        if (!mhsa__mul(bytes, e->dims[i], &bytes))
            return mhsa__fail(MHSA_ERR_FORMAT,
                              "%s: tensor '%s': shape overflows size_t",
                              path, name);
    }
    if (json_array_size(offs) != 2 ||
        !json_size(json_array_get(offs, 0), &e->begin) ||
        !json_size(json_array_get(offs, 1), &e->end) || e->begin > e->end)
        return mhsa__fail(MHSA_ERR_FORMAT,
                          "%s: tensor '%s': data_offsets must be [begin, "
                          "end] with 0 <= begin <= end", path, name);
    if (e->end - e->begin != bytes) {
        char s[96];
        return mhsa__fail(MHSA_ERR_FORMAT,
                          "%s: tensor '%s': %s %s needs %zu bytes, "
                          "data_offsets give %zu", path, name,
                          st_dtypes[e->dtype].name,
                          mhsa__fmt_shape(s, sizeof s, e->ndim, e->dims), bytes,
                          e->end - e->begin);
    }
    return MHSA_OK;
}

// Parses and checks the header in buf[0..len), data region of data_size
// bytes; on success f->root and f->e/n are set.
static mhsa_status parse_header(const char *path, const char *buf,
                                size_t len, uint64_t data_size,
                                mhsa_st_file *f)
{
    if (buf[0] != '{')
        return mhsa__fail(MHSA_ERR_FORMAT,
                          "%s: header does not start with '{'", path);
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: bad JSON header at byte "
                          "%d: %s", path, jerr.position, jerr.text);
    f->root = root;
    if (!json_is_object(root))
        return mhsa__fail(MHSA_ERR_FORMAT,
                          "%s: header is not a JSON object", path);

    size_t n = json_object_size(root);
    if (json_object_get(root, "__metadata__"))
        n--;
    // n <= len / 2: each entry needs a few header bytes, so this allocation
    // is bounded by the header the file really holds.
    f->e = mhsa__alloc(n ? n * sizeof *f->e : 1);
    if (!f->e)
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: no memory for %zu header entries", path, n);
    const char *key;
    json_t *val;
    size_t i = 0;
    json_object_foreach(root, key, val) {
        if (!strcmp(key, "__metadata__")) {
            const char *mk;
            json_t *mv;
            if (!json_is_object(val))
                return mhsa__fail(MHSA_ERR_FORMAT,
                                  "%s: __metadata__ is not an object", path);
            json_object_foreach(val, mk, mv) {
                if (!json_is_string(mv))
                    return mhsa__fail(MHSA_ERR_FORMAT, "%s: __metadata__ "
                                      "value '%s' is not a string", path, mk);
            }
            continue;
        }
        mhsa_status s = parse_entry(path, key, val, &f->e[i]);
        if (s != MHSA_OK)
            return s;
        i++;
    }
    f->n = n;

    // The tensors must tile [0, data_size) exactly: sorted by offset, each
    // starts where the previous ended. This rejects overlaps (two tensors
    // sharing bytes), gaps (bytes no tensor owns), offsets past the end and
    // a truncated data region, whatever the order of the header.
    qsort(f->e, n, sizeof *f->e, cmp_entry);
    size_t pos = 0;
    for (i = 0; i < n; i++) {
        if (f->e[i].begin != pos)
            return mhsa__fail(MHSA_ERR_FORMAT, "%s: tensor '%s' starts at "
                              "byte %zu of the data, expected %zu (%s)",
                              path, f->e[i].name, f->e[i].begin, pos,
                              f->e[i].begin > pos ? "gap" : "overlap");
        pos = f->e[i].end;
    }
    if ((uint64_t)pos != data_size)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: tensors cover %zu bytes "
                          "but the data region holds %llu (%s)", path, pos,
                          (unsigned long long)data_size,
                          (uint64_t)pos > data_size ? "truncated file"
                                                    : "trailing bytes");
    return MHSA_OK;
}

void mhsa__st_close(mhsa_st_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    json_decref(f->root);
    mhsa__free(f->e);
    mhsa__free(f);
}

mhsa_status mhsa__st_open(const char *path, mhsa_st_file **out)
{
    if (!path || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__st_open: %s is NULL",
                          !path ? "path" : "out");
    mhsa_st_file *f = mhsa__alloc(sizeof *f);
    if (!f)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
    f->fd = -1;
    uint64_t size = 0, hlen = 0;
    mhsa_status s = mhsa__open_regular(path, &f->fd, &size);
    char *hdr = NULL;
    unsigned char len8[8];
    int r;
    if (s != MHSA_OK)
        goto done;
    if (size < 8) {
        s = mhsa__fail(MHSA_ERR_FORMAT, "%s: %llu bytes, too short for the "
                       "8-byte header length", path, (unsigned long long)size);
        goto done;
    }
    r = mhsa__pread_full(f->fd, len8, 8, 0);
    if (r != 0) {
        s = r < 0 ? mhsa__fail(MHSA_ERR_IO, "%s: read error: %s", path,
                               strerror(errno))
                  : mhsa__fail(MHSA_ERR_FORMAT, "%s: truncated", path);
        goto done;
    }
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | len8[i];
    // Bounded by the file before allocating: a corrupt length of 2^63 must
    // not become a 2^63-byte malloc.
    if (hlen == 0 || hlen > size - 8 || hlen > ST_MAX_HEADER) {
        s = mhsa__fail(MHSA_ERR_FORMAT, "%s: header length %llu is not in "
                       "[1, %llu] (file is %llu bytes)", path,
                       (unsigned long long)hlen,
                       (unsigned long long)(size - 8 < ST_MAX_HEADER
                                            ? size - 8 : ST_MAX_HEADER),
                       (unsigned long long)size);
        goto done;
    }
    hdr = mhsa__alloc((size_t)hlen);
    if (!hdr) {
        s = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory for a %llu-byte "
                       "header", path, (unsigned long long)hlen);
        goto done;
    }
    r = mhsa__pread_full(f->fd, hdr, (size_t)hlen, 8);
    if (r != 0) {
        s = r < 0 ? mhsa__fail(MHSA_ERR_IO, "%s: read error: %s", path,
                               strerror(errno))
                  : mhsa__fail(MHSA_ERR_FORMAT, "%s: truncated header", path);
        goto done;
    }
    f->data_start = 8 + hlen;
    s = parse_header(path, hdr, (size_t)hlen, size - 8 - hlen, f);
done:
    mhsa__free(hdr);
    if (s != MHSA_OK) {
        mhsa__st_close(f);
        return s;
    }
    *out = f;
    return MHSA_OK;
}

size_t mhsa__st_count(const mhsa_st_file *f) { return f ? f->n : 0; }

const char *mhsa__st_name(const mhsa_st_file *f, size_t i)
{
    return f && i < f->n ? f->e[i].name : NULL;
}

const char *mhsa__st_meta(const mhsa_st_file *f, const char *key)
{
    if (!f || !key)
        return NULL;
    // Checked at open: __metadata__, when present, maps strings to strings.
    json_t *v = json_object_get(json_object_get(f->root, "__metadata__"),
                                key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const st_entry *find(const mhsa_st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->e[i].name, name))
            return &f->e[i];
    return NULL;
}

int mhsa__st_shape(const mhsa_st_file *f, const char *name, int *ndim,
                   size_t dims[MHSA_ST_MAX_DIMS])
{
    const st_entry *e = f && name ? find(f, name) : NULL;
    if (!e)
        return 0;
    *ndim = e->ndim;
    memcpy(dims, e->dims, (size_t)e->ndim * sizeof *dims);
    return 1;
}

mhsa_status mhsa__st_read_f32(const mhsa_st_file *f, const char *name,
                              int ndim, const size_t *dims, float *dst)
{
    if (!f || !name || ndim < 0 || ndim > MHSA_ST_MAX_DIMS ||
        (ndim && !dims) || !dst)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa__st_read_f32: bad argument");
    const st_entry *e = find(f, name);
    if (!e)
        return mhsa__fail(MHSA_ERR_FORMAT, "tensor '%s' not found", name);
    mhsa_status s = mhsa__check_shape(name, ndim, dims, e->ndim, e->dims);
    if (s != MHSA_OK)
        return s;
    st_dtype kind = st_dtypes[e->dtype].kind;
    if (kind == ST_OTHER)
        return mhsa__fail(MHSA_ERR_FORMAT, "tensor '%s': dtype %s cannot be "
                          "read as fp32 (F32, F16 or BF16 only)", name,
                          st_dtypes[e->dtype].name);

    size_t esize = st_dtypes[e->dtype].size;
    size_t count = (e->end - e->begin) / esize;
    unsigned char *buf = mhsa__alloc(ST_CHUNK);
    if (!buf)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tensor '%s': no memory", name);
    size_t per = ST_CHUNK / esize;
    for (size_t done = 0; done < count;) {
        size_t k = count - done < per ? count - done : per;
        s = mhsa__pread_tensor(f->fd, buf, k * esize,
                               f->data_start + e->begin + done * esize, name);
        if (s != MHSA_OK)
            break;
        // Bytes are little-endian in the file whatever the host's order.
        for (size_t j = 0; j < k; j++) {
            const unsigned char *b = buf + j * esize;
            float v;
            if (kind == ST_F32) {
                uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 |
                             (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
                memcpy(&v, &u, sizeof v);
            } else {
                uint16_t h = (uint16_t)(b[0] | b[1] << 8);
                v = kind == ST_F16 ? mhsa__f16_to_f32(h)
                                   : mhsa__bf16_to_f32(h);
            }
            dst[done + j] = v;
        }
        done += k;
    }
    mhsa__free(buf);
    return s;
}

// ---- writing --------------------------------------------------------------

// Bytes of one element and the format's name of the dtypes we write.
static size_t st_elem_size(mhsa_dtype dt) { return dt == MHSA_F32 ? 4 : 2; }

static const char *st_dtype_name(mhsa_dtype dt)
{
    return dt == MHSA_F16 ? "F16" : dt == MHSA_BF16 ? "BF16" : "F32";
}

// safetensors' order: larger elements first (so every tensor's data stays
// aligned to its element size), then by name.
static int cmp_name(const void *a, const void *b)
{
    const mhsa_st_tensor *x = *(const mhsa_st_tensor *const *)a;
    const mhsa_st_tensor *y = *(const mhsa_st_tensor *const *)b;
    size_t ex = st_elem_size(x->dtype), ey = st_elem_size(y->dtype);
    if (ex != ey)
        return ex > ey ? -1 : 1;
    return strcmp(x->name, y->name);
}

// Header JSON for the tensors in `order`, padded with spaces to a multiple
// of 8 bytes so the data starts 8-byte aligned (as safetensors writes it).
static mhsa_status build_header(const mhsa_st_tensor *const *order, size_t n,
                                const mhsa_st_meta *extra, size_t n_extra,
                                char **out, size_t *out_len)
{
    mhsa_status s = MHSA_OK;
    json_t *root = json_object();
    json_t *meta = json_object();
    if (!root || !meta || json_object_set_new(root, "__metadata__", meta) ||
        json_object_set_new(meta, "format", json_string("pt"))) {
        json_decref(root);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "safetensors: no memory");
    }
    for (size_t i = 0; i < n_extra; i++) {
        // json_string refuses invalid UTF-8 (NULL); keys were checked for
        // duplicates by the caller.
        json_t *v = json_string(extra[i].value);
        if (!v || json_object_set_new(meta, extra[i].key, v)) {
            json_decref(root);
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "safetensors: cannot "
                              "add metadata '%s' (invalid UTF-8 or no "
                              "memory)", extra[i].key);
        }
    }
    size_t off = 0;
    for (size_t i = 0; i < n && s == MHSA_OK; i++) {
        const mhsa_st_tensor *t = order[i];
        size_t bytes = st_elem_size(t->dtype);
        json_t *e = json_object(), *shape = json_array(), *offs = NULL;
        int ok = e && shape;
        // Written as JSON integers: sizes must fit json_int_t too.
        for (int d = 0; ok && d < t->ndim; d++)
            ok = mhsa__mul(bytes, t->dims[d], &bytes) &&
                 t->dims[d] <= (size_t)INT64_MAX &&
                 !json_array_append_new(shape,
                                        json_integer((json_int_t)t->dims[d]));
        ok = ok && bytes <= (size_t)INT64_MAX - off;
        if (ok)
            offs = json_pack("[II]", (json_int_t)off,
                             (json_int_t)(off + bytes));
        // json_object_set (not _new) keeps our references, so one decref
        // below frees each piece whichever step failed. jansson refuses a
        // key that is not valid UTF-8, so a bad name fails here too.
        ok = ok && offs &&
             !json_object_set_new(e, "dtype",
                                  json_string(st_dtype_name(t->dtype))) &&
             !json_object_set(e, "shape", shape) &&
             !json_object_set(e, "data_offsets", offs) &&
             !json_object_set(root, t->name, e);
        json_decref(offs);
        json_decref(shape);
        json_decref(e);
        if (!ok) {
            s = mhsa__fail(MHSA_ERR_INVALID_ARG, "safetensors: cannot add "
                           "tensor '%s' (size overflow, invalid UTF-8 or no "
                           "memory)", t->name);
            break;
        }
        off += bytes;
    }
    char *js = s == MHSA_OK ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (s != MHSA_OK)
        return s;
    if (!js)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "safetensors: no memory");
    size_t len = strlen(js);
    size_t padded = (len + 7) / 8 * 8;
    char *h = mhsa__alloc(padded);
    if (!h) {
        free(js);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "safetensors: no memory");
    }
    memcpy(h, js, len);
    memset(h + len, ' ', padded - len);
    free(js);
    *out = h;
    *out_len = padded;
    return MHSA_OK;
}

static mhsa_status write_body(int fd, const char *hdr, size_t hlen,
                              const mhsa_st_tensor *const *order, size_t n)
{
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    if (write_full(fd, len8, 8) || write_full(fd, hdr, hlen))
        return MHSA_ERR_IO;
    unsigned char *buf = mhsa__alloc(ST_CHUNK);
    if (!buf)
        return MHSA_ERR_NO_MEMORY;
    mhsa_status s = MHSA_OK;
    for (size_t i = 0; i < n && s == MHSA_OK; i++) {
        size_t count = 1;
        for (int d = 0; d < order[i]->ndim; d++)
            count *= order[i]->dims[d];   // checked in build_header
        const float *x = order[i]->data;
        mhsa_dtype dt = order[i]->dtype;
        size_t es = st_elem_size(dt);
        for (size_t done = 0; done < count && s == MHSA_OK;) {
            size_t k = count - done < ST_CHUNK / 4 ? count - done
                                                   : ST_CHUNK / 4;
            for (size_t j = 0; j < k; j++) {
                uint32_t u;
                if (dt == MHSA_F16)
                    u = mhsa_f32_to_f16(x[done + j]);
                else if (dt == MHSA_BF16)
                    u = mhsa_f32_to_bf16(x[done + j]);
                else
                    memcpy(&u, &x[done + j], sizeof u);
                for (size_t b = 0; b < es; b++)
                    buf[es * j + b] = (unsigned char)(u >> (8 * b));
            }
            if (write_full(fd, buf, es * k))
                s = MHSA_ERR_IO;
            done += k;
        }
    }
    mhsa__free(buf);
    return s;
}

// The directory holding path, fsync'd so that a rename into it is on disk
// too. Best effort: some file systems refuse fsync on a directory, and the
// file itself is already complete and synced by then.
static void sync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) {
        strcpy(dir, ".");
    } else if ((size_t)(slash - path) < sizeof dir) {
        size_t len = slash == path ? 1 : (size_t)(slash - path);
        memcpy(dir, path, len);
        dir[len] = '\0';
    } else {
        return;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

mhsa_status mhsa__st_write_f32(const char *path, const mhsa_st_tensor *t,
                               size_t n)
{
    return mhsa__st_write(path, t, n, NULL, 0);
}

mhsa_status mhsa__st_write(const char *path, const mhsa_st_tensor *t,
                           size_t n, const mhsa_st_meta *meta, size_t n_meta)
{
    if (!path || (n && !t) || (n_meta && !meta))
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa__st_write: %s is NULL",
                          !path ? "path" : !meta && n_meta ? "meta" : "t");
    for (size_t i = 0; i < n_meta; i++) {
        int bad = !meta[i].key || !meta[i].value || !meta[i].key[0] ||
                  !strcmp(meta[i].key, "format");
        for (size_t j = 0; !bad && j < i; j++)
            bad = !strcmp(meta[i].key, meta[j].key);
        if (bad)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__st_write: "
                              "metadata %zu ('%s'): NULL, empty, reserved "
                              "or duplicate key, or NULL value", i,
                              meta[i].key ? meta[i].key : "(null)");
    }
    for (size_t i = 0; i < n; i++) {
        int bad = !t[i].name || t[i].ndim < 0 ||
                  t[i].ndim > MHSA_ST_MAX_DIMS ||
                  (t[i].dtype != MHSA_F32 && t[i].dtype != MHSA_F16 &&
                   t[i].dtype != MHSA_BF16) ||
                  !strcmp(t[i].name, "__metadata__") || !t[i].name[0];
        if (!bad && !t[i].data) {
            int empty = 0;   // NULL data is fine only for an empty tensor
            for (int d = 0; d < t[i].ndim; d++)
                empty |= t[i].dims[d] == 0;
            bad = !empty;
        }
        for (size_t j = 0; !bad && j < i; j++)
            bad = !strcmp(t[i].name, t[j].name);
        if (bad)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__st_write: "
                              "tensor %zu ('%s'): NULL, empty, reserved or "
                              "duplicate name, bad ndim %d or dtype, or NULL data", i,
                              t[i].name ? t[i].name : "(null)", t[i].ndim);
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return mhsa__fail(MHSA_ERR_IO, "%s: %s", path, S_ISDIR(st.st_mode)
                          ? "is a directory" : "is not a regular file");

    // safetensors orders the data by dtype alignment, then name.
    const mhsa_st_tensor **order = mhsa__alloc((n ? n : 1) * sizeof *order);
    if (!order)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "safetensors: no memory");
    for (size_t i = 0; i < n; i++)
        order[i] = &t[i];
    qsort(order, n, sizeof *order, cmp_name);
    char *hdr = NULL, *tmp = NULL;
    size_t hlen = 0;
    mhsa_status s = build_header(order, n, meta, n_meta, &hdr, &hlen);
    if (s != MHSA_OK)
        goto out;

    // Write beside the target and rename over it: readers (and a crash)
    // see the old file or the new one, never half a file.
    static atomic_uint counter;
    size_t plen = strlen(path) + 64;
    tmp = mhsa__alloc(plen);
    if (!tmp) {
        s = mhsa__fail(MHSA_ERR_NO_MEMORY, "safetensors: no memory");
        goto out;
    }
    snprintf(tmp, plen, "%s.tmp%ld.%u", path, (long)getpid(),
             atomic_fetch_add(&counter, 1u));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        s = mhsa__fail(MHSA_ERR_IO, "%s: cannot create: %s", tmp,
                       strerror(errno));
        goto out;
    }
    s = write_body(fd, hdr, hlen, order, n);
    // On disk before it replaces anything: a crash after the rename must
    // not leave an empty or partial file under the old name.
    if (s == MHSA_OK && fsync(fd) != 0)
        s = MHSA_ERR_IO;
    int err = errno;
    if (close(fd) != 0 && s == MHSA_OK) {
        s = MHSA_ERR_IO;
        err = errno;
    }
    if (s == MHSA_OK && rename(tmp, path) != 0) {
        s = MHSA_ERR_IO;
        err = errno;
    }
    if (s == MHSA_OK)
        sync_dir_of(path);
    if (s != MHSA_OK) {
        unlink(tmp);
        s = s == MHSA_ERR_NO_MEMORY
            ? mhsa__fail(s, "safetensors: no memory")
            : mhsa__fail(MHSA_ERR_IO, "%s: cannot write: %s", path,
                         strerror(err));
    }
out:
    mhsa__free(tmp);
    mhsa__free(hdr);
    mhsa__free(order);
    return s;
}
