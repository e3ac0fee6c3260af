// safetensors.c — the validating .safetensors reader and the F32 writer
// (see safetensors.h for the format and the guarantees), and the block's
// mhsa_block_load_safetensors / mhsa_block_save_safetensors on top of them.
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
        int r = mhsa__pread_full(f->fd, buf, k * esize,
                           f->data_start + e->begin + done * esize);
        if (r != 0) {
            // The file was validated at open: a short read now means it
            // shrank underneath us.
            s = r < 0 ? mhsa__fail(MHSA_ERR_IO, "tensor '%s': read error: "
                                   "%s", name, strerror(errno))
                      : mhsa__fail(MHSA_ERR_FORMAT, "tensor '%s': file "
                                   "truncated while reading", name);
            break;
        }
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

// ---- the block ------------------------------------------------------------
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
