// gguf.c — mhsa__gguf_open: reading and validating a GGUF file's header
// (see gguf.h for the format and the guarantees, gguf_impl.h for the
// handle), mhsa__gguf_close, and the key index every lookup uses.
//
// I/O is pread, not mmap: a file that shrinks while it is open then gives
// a short read and an error, where a mapping would die of SIGBUS; memory
// stays what the header needs plus a 64 KiB chunk per tensor read,
// whatever the file claims; and the sanitizers and the fuzzer see every
// byte we touch as a heap buffer of exactly the size read.
//
// The header is parsed in one pass as it is read in, into a buffer that
// grows (doubling, never past the file's size) only when the next field
// needs bytes beyond what is already in. Every length and count is first
// checked against the bytes the file has left: a count of n entries that
// take at least k bytes each must satisfy n <= left / k before anything
// is allocated for them, so a 4-byte file claiming 2^60 keys fails at once.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/file_read.h"
#include "gguf_dequant.h"
#include "gguf_impl.h"
#include "core/status.h"
#include "core/alloc.h"

#define GGUF_CHUNK ((size_t)1 << 16)
// Arrays of arrays deeper than this are refused (ggml refuses any): it
// bounds the parser's recursion.
enum { GGUF_MAX_NESTING = 8 };
// The fewest bytes a key/value and a tensor info take: an 8-byte string
// length, a 4-byte type and a 1-byte value; a name length, n_dims, one
// dimension, the type and the offset.
enum { MIN_KV_BYTES = 13, MIN_TENSOR_BYTES = 32 };

typedef struct cursor {
    mhsa_gguf_file *f;
    const char *path;
    size_t pos;          // next byte to parse
    char where[112];     // "header", "key 'general.name'", "tensor #3"
} cursor;

typedef unsigned long long ull;   // for printf

// MHSA_ERR_FORMAT "path: <where>: <message>".
__attribute__((format(printf, 2, 3)))
static mhsa_status bad(const cursor *c, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mhsa__fail(MHSA_ERR_FORMAT, "%s: %s: %s", c->path, c->where, msg);
}

// Makes f->buf hold the n bytes at c->pos, reading ahead up to a chunk;
// FORMAT naming `what` when the file ends first.
static mhsa_status need(cursor *c, uint64_t n, const char *what)
{
    mhsa_gguf_file *f = c->f;
    if (n > f->file_size - c->pos)
        return bad(c, "%s (%llu bytes at offset %zu) runs past the end of "
                   "the file (%llu bytes)", what, (ull)n, c->pos,
                   (ull)f->file_size);
    size_t end = c->pos + (size_t)n;
    if (end <= f->len)
        return MHSA_OK;
    uint64_t want = (uint64_t)f->len + GGUF_CHUNK;
    want = want < end ? end : want;
    want = want > f->file_size ? f->file_size : want;
    if (want > f->cap) {
        size_t cap = f->cap ? f->cap : GGUF_CHUNK;
        while (cap < want)
            cap = cap > SIZE_MAX / 2 ? (size_t)want : cap * 2;
        cap = cap > f->file_size ? (size_t)f->file_size : cap;
        unsigned char *nb = mhsa__alloc(cap);
        if (!nb)
            return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory for a "
                              "%zu-byte header", c->path, cap);
        if (f->len)
            memcpy(nb, f->buf, f->len);
        mhsa__free(f->buf);
        f->buf = nb;
        f->cap = cap;
    }
    int r = mhsa__pread_full(f->fd, f->buf + f->len, (size_t)want - f->len,
                             f->len);
    if (r < 0)
        return mhsa__fail(MHSA_ERR_IO, "%s: read error: %s", c->path,
                          strerror(errno));
    if (r > 0)
        return bad(c, "file shrank while being read");
    f->len = (size_t)want;
    return MHSA_OK;
}

static uint64_t le(const unsigned char *b, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static mhsa_status rd_u32(cursor *c, uint32_t *v, const char *what)
{
    mhsa_status s = need(c, 4, what);
    if (s == MHSA_OK) {
        *v = (uint32_t)le(c->f->buf + c->pos, 4);
        c->pos += 4;
    }
    return s;
}

static mhsa_status rd_u64(cursor *c, uint64_t *v, const char *what)
{
    mhsa_status s = need(c, 8, what);
    if (s == MHSA_OK) {
        *v = le(c->f->buf + c->pos, 8);
        c->pos += 8;
    }
    return s;
}

// A string: its offset in buf (NUL-terminated there, moved down over its
// already-read length: see gguf_impl.h) and byte count.
static mhsa_status rd_str(cursor *c, size_t *off, uint64_t *len,
                          const char *what)
{
    uint64_t n;
    mhsa_status s = rd_u64(c, &n, what);
    if (s == MHSA_OK)
        s = need(c, n, what);
    if (s != MHSA_OK)
        return s;
    unsigned char *p = c->f->buf + c->pos;
    memmove(p - 8, p, (size_t)n);
    (p - 8)[n] = '\0';
    *off = c->pos - 8;
    *len = n;
    c->pos += (size_t)n;
    return MHSA_OK;
}

// n fixed-size values of `type` at c->pos (bools must be 0 or 1).
static mhsa_status rd_fixed(cursor *c, uint32_t type, uint64_t n,
                            size_t *off, const char *what)
{
    size_t sz = mhsa__gguf_fixed_size(type);
    if (n > (c->f->file_size - c->pos) / sz)
        return bad(c, "%s of %llu %s values runs past the end of the file "
                   "(%llu bytes left)", what, (ull)n,
                   mhsa__gguf_type_name(type),
                   (ull)(c->f->file_size - c->pos));
    mhsa_status s = need(c, n * sz, what);
    if (s != MHSA_OK)
        return s;
    for (uint64_t i = 0; type == MHSA_GGUF_BOOL && i < n; i++)
        if (c->f->buf[c->pos + i] > 1)
            return bad(c, "bool %llu is %u (must be 0 or 1)", (ull)i,
                       c->f->buf[c->pos + i]);
    *off = c->pos;
    c->pos += (size_t)(n * sz);
    return MHSA_OK;
}

// n zeroed items of `size` bytes; NULL on overflow or no memory. The
// counts were bounded by the file's size, but that is a uint64_t: a
// 32-bit size_t could still wrap.
static void *alloc_n(uint64_t n, size_t size)
{
    size_t bytes;
    if (n > SIZE_MAX || !mhsa__mul((size_t)n, size, &bytes))
        return NULL;
    return mhsa__alloc(bytes ? bytes : 1);
}

static void free_val(mhsa_gguf_val *v)
{
    for (uint64_t i = 0; v->arrs && i < v->n; i++)
        free_val(&v->arrs[i]);
    mhsa__free(v->arrs);
    mhsa__free(v->strs);
    v->arrs = NULL;
    v->strs = NULL;
}

// An array's element type, count and elements into v (v->f, v->key set).
static mhsa_status rd_array(cursor *c, mhsa_gguf_val *v, int depth)
{
    v->type = MHSA_GGUF_ARRAY;
    mhsa_status s = rd_u32(c, &v->elem, "array element type");
    if (s == MHSA_OK)
        s = rd_u64(c, &v->n, "array length");
    if (s != MHSA_OK)
        return s;
    uint64_t left = c->f->file_size - c->pos;
    if (mhsa__gguf_fixed_size(v->elem))
        return rd_fixed(c, v->elem, v->n, &v->off, "array");
    if (v->elem != MHSA_GGUF_STRING && v->elem != MHSA_GGUF_ARRAY)
        return bad(c, "unknown array element type %u", v->elem);
    // A string takes at least its 8-byte length, an array 12 bytes.
    uint64_t min = v->elem == MHSA_GGUF_STRING ? 8 : 12;
    if (v->n > left / min)
        return bad(c, "array of %llu %ss cannot fit in the %llu bytes left",
                   (ull)v->n, mhsa__gguf_type_name(v->elem), (ull)left);
    if (v->elem == MHSA_GGUF_ARRAY && depth >= GGUF_MAX_NESTING)
        return bad(c, "arrays nested deeper than %d", GGUF_MAX_NESTING);
    if (v->n == 0)
        return MHSA_OK;
    size_t each = v->elem == MHSA_GGUF_STRING ? sizeof *v->strs
                                              : sizeof *v->arrs;
    void *items = alloc_n(v->n, each);
    if (!items)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: %s: no memory for %llu "
                          "array elements", c->path, c->where, (ull)v->n);
    if (v->elem == MHSA_GGUF_STRING)
        v->strs = items;
    else
        v->arrs = items;
    for (uint64_t i = 0; s == MHSA_OK && i < v->n; i++) {
        if (v->strs) {
            s = rd_str(c, &v->strs[i].off, &v->strs[i].len,
                       "string element");
        } else {
            v->arrs[i].f = v->f;
            v->arrs[i].key = v->key;
            s = rd_array(c, &v->arrs[i], depth + 1);
        }
    }
    return s;
}

// One value of `type` into v.
static mhsa_status rd_value(cursor *c, uint32_t type, mhsa_gguf_val *v)
{
    v->type = type;
    if (mhsa__gguf_fixed_size(type))
        return rd_fixed(c, type, 1, &v->off, "value");
    if (type == MHSA_GGUF_STRING)
        return rd_str(c, &v->off, &v->n, "string value");
    if (type == MHSA_GGUF_ARRAY)
        return rd_array(c, v, 1);
    return bad(c, "unknown value type %u", type);
}

// Magic, version and the two counts; allocates the entry tables.
static mhsa_status rd_preamble(cursor *c)
{
    mhsa_gguf_file *f = c->f;
    mhsa_status s = need(c, 4, "magic");
    if (s != MHSA_OK)
        return s;
    const unsigned char *m = f->buf;
    if (memcmp(m, "GGUF", 4))
        return bad(c, "magic is %02x %02x %02x %02x, not \"GGUF\" (not a "
                   "GGUF file)", m[0], m[1], m[2], m[3]);
    c->pos = 4;
    if ((s = rd_u32(c, &f->version, "version")) != MHSA_OK)
        return s;
    if (f->version == 1)
        return bad(c, "version 1 (32-bit counts) is not supported, only 2 "
                   "and 3");
    if (f->version != 2 && f->version != 3)
        return bad(c, "version %u is not supported, only 2 and 3%s",
                   f->version, (f->version & 0xffff) == 0
                   ? " (a big-endian file?)" : "");
    uint64_t nt, nkv;
    if ((s = rd_u64(c, &nt, "tensor count")) != MHSA_OK ||
        (s = rd_u64(c, &nkv, "key/value count")) != MHSA_OK)
        return s;
    uint64_t left = f->file_size - c->pos;
    if (nkv > left / MIN_KV_BYTES ||
        nt > (left - nkv * MIN_KV_BYTES) / MIN_TENSOR_BYTES)
        return bad(c, "%llu key/values and %llu tensors cannot fit in the "
                   "%llu bytes after the header", (ull)nkv, (ull)nt,
                   (ull)left);
    f->kv = alloc_n(nkv, sizeof *f->kv);
    f->kv_sorted = alloc_n(nkv, sizeof *f->kv_sorted);
    f->t = alloc_n(nt, sizeof *f->t);
    f->t_name_off = alloc_n(nt, sizeof *f->t_name_off);
    f->t_sorted = alloc_n(nt, sizeof *f->t_sorted);
    // Counted only once allocated: close frees the values of n_kv keys.
    f->n_kv = f->kv ? (size_t)nkv : 0;
    f->n_tensors = f->t ? (size_t)nt : 0;
    if (!f->kv || !f->kv_sorted || !f->t || !f->t_name_off || !f->t_sorted)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory for %llu keys "
                          "and %llu tensors", c->path, (ull)nkv, (ull)nt);
    return MHSA_OK;
}

static mhsa_status rd_kvs(cursor *c)
{
    mhsa_gguf_file *f = c->f;
    for (size_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        snprintf(c->where, sizeof c->where, "key #%zu", i);
        mhsa_status s = rd_str(c, &kv->key_off, &kv->key_len, "key name");
        if (s != MHSA_OK)
            return s;
        char q[88];
        snprintf(c->where, sizeof c->where, "key '%s'",
                 mhsa__esc(q, sizeof q, (const char *)f->buf + kv->key_off,
                           (size_t)kv->key_len));
        uint32_t type;
        kv->val.f = f;
        kv->val.key = kv->key_off;
        if ((s = rd_u32(c, &type, "value type")) != MHSA_OK ||
            (s = rd_value(c, type, &kv->val)) != MHSA_OK)
            return s;
    }
    return MHSA_OK;
}

// One tensor info into f->t[i] (dims reversed: see gguf.h).
static mhsa_status rd_tensor(cursor *c, size_t i)
{
    mhsa_gguf_file *f = c->f;
    mhsa_gguf_tensor *t = &f->t[i];
    snprintf(c->where, sizeof c->where, "tensor #%zu", i);
    uint64_t len;
    mhsa_status s = rd_str(c, &f->t_name_off[i], &len, "tensor name");
    if (s != MHSA_OK)
        return s;
    const char *name = (const char *)f->buf + f->t_name_off[i];
    char q[88];
    snprintf(c->where, sizeof c->where, "tensor '%s'",
             mhsa__esc(q, sizeof q, name, (size_t)len));
    if (strlen(name) != len)
        return bad(c, "name holds a NUL byte");
    uint32_t nd, type;
    if ((s = rd_u32(c, &nd, "n_dims")) != MHSA_OK)
        return s;
    if (nd < 1 || nd > MHSA_GGUF_MAX_DIMS)
        return bad(c, "n_dims is %u (must be 1 to %d)", nd,
                   MHSA_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    uint64_t ne[MHSA_GGUF_MAX_DIMS], numel = 1;
    for (uint32_t d = 0; d < nd; d++) {
        if ((s = rd_u64(c, &ne[d], "dimension")) != MHSA_OK)
            return s;
        if (ne[d] == 0 || ne[d] > INT64_MAX)
            return bad(c, "ne[%u] is %llu (must be 1 to 2^63-1)", d,
                       (ull)ne[d]);
        if (numel > (uint64_t)INT64_MAX / ne[d] || numel * ne[d] > SIZE_MAX)
            return bad(c, "element count overflows");
        numel *= ne[d];
        t->dims[nd - 1 - d] = (size_t)ne[d];   // numel fits size_t
    }
    t->numel = numel;
    if ((s = rd_u32(c, &type, "tensor type")) != MHSA_OK)
        return s;
    const mhsa_ggml_type_info *info = mhsa__ggml_type(type);
    if (!info)
        return bad(c, "unknown ggml type %u", type);
    t->type = type;
    t->type_name = info->name;
    if (ne[0] % info->block)
        return bad(c, "row length ne[0] = %llu is not a multiple of %s's "
                   "block size %u", (ull)ne[0], info->name, info->block);
    if (numel / info->block > UINT64_MAX / info->bytes)
        return bad(c, "byte size overflows");
    t->bytes = numel / info->block * info->bytes;
    return rd_u64(c, &t->offset, "data offset");
}

// ---- the value types and the key index ------------------------------------
// What the parser needs first and the getters (gguf_meta.c) stand on as
// well: the value types' names and sizes, and the key index that the
// parser sorts and mhsa__gguf_find searches with the same comparison.

const char *mhsa__gguf_type_name(uint32_t type)
{
    static const char *const names[] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string",
        "array", "u64", "i64", "f64",
    };
    return type < sizeof names / sizeof names[0] ? names[type] : "?";
}

size_t mhsa__gguf_fixed_size(uint32_t type)
{
    static const unsigned char size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0,
                                         8, 8, 8};
    return type < sizeof size ? size[type] : 0;
}

int mhsa__gguf_cmp_kv(const void *a, const void *b)
{
    const gguf_kv *x = *(const gguf_kv *const *)a;
    const gguf_kv *y = *(const gguf_kv *const *)b;
    uint64_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int r = memcmp(x->key, y->key, (size_t)n);
    if (r)
        return r;
    return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

const mhsa_gguf_val *mhsa__gguf_find(const mhsa_gguf_file *f,
                                     const char *key)
{
    if (!f || !key || !f->n_kv)   // (bsearch must not see a NULL array)
        return NULL;
    gguf_kv probe = {.key = key, .key_len = strlen(key)};
    const gguf_kv *pp = &probe;
    const gguf_kv *const *hit = bsearch(&pp, f->kv_sorted, f->n_kv,
                                        sizeof *f->kv_sorted,
                                        mhsa__gguf_cmp_kv);
    return hit ? &(*hit)->val : NULL;
}

int mhsa__gguf_cmp_tensor_name(const void *a, const void *b)
{
    const mhsa_gguf_tensor *x = *(const mhsa_gguf_tensor *const *)a;
    const mhsa_gguf_tensor *y = *(const mhsa_gguf_tensor *const *)b;
    return strcmp(x->name, y->name);
}

static int cmp_t_offset(const void *a, const void *b)
{
    const mhsa_gguf_tensor *x = *(const mhsa_gguf_tensor *const *)a;
    const mhsa_gguf_tensor *y = *(const mhsa_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

// Keys unique and general.alignment valid.
static mhsa_status check_keys(cursor *c)
{
    mhsa_gguf_file *f = c->f;
    for (size_t i = 0; i < f->n_kv; i++) {
        f->kv[i].key = (const char *)f->buf + f->kv[i].key_off;
        f->kv_sorted[i] = &f->kv[i];
    }
    qsort(f->kv_sorted, f->n_kv, sizeof *f->kv_sorted, mhsa__gguf_cmp_kv);
    for (size_t i = 1; i < f->n_kv; i++)
        if (!mhsa__gguf_cmp_kv(&f->kv_sorted[i - 1], &f->kv_sorted[i])) {
            char q[88];
            snprintf(c->where, sizeof c->where, "key '%s'",
                     mhsa__esc(q, sizeof q, f->kv_sorted[i]->key,
                               (size_t)f->kv_sorted[i]->key_len));
            return bad(c, "appears twice");
        }
    f->alignment = MHSA_GGUF_DEFAULT_ALIGNMENT;
    const mhsa_gguf_val *a = mhsa__gguf_find(f, "general.alignment");
    if (!a)
        return MHSA_OK;
    snprintf(c->where, sizeof c->where, "key 'general.alignment'");
    if (a->type != MHSA_GGUF_UINT32)
        return bad(c, "is %s, must be u32", mhsa__gguf_type_name(a->type));
    f->alignment = (uint32_t)le(f->buf + a->off, 4);
    if (f->alignment == 0 || (f->alignment & (f->alignment - 1)))
        return bad(c, "%u is not a power of two", f->alignment);
    return MHSA_OK;
}

// Every tensor's data aligned, inside the file, overlapping no other; names
// unique. Leaves f->t_sorted sorted by name.
static mhsa_status check_tensors(cursor *c)
{
    mhsa_gguf_file *f = c->f;
    uint64_t a = f->alignment, size = f->file_size;
    f->data_offset = ((uint64_t)c->pos + a - 1) / a * a;
    for (size_t i = 0; i < f->n_tensors; i++) {
        mhsa_gguf_tensor *t = &f->t[i];
        t->name = (const char *)f->buf + f->t_name_off[i];
        f->t_sorted[i] = t;
        char q[88];
        snprintf(c->where, sizeof c->where, "tensor '%s'",
                 mhsa__esc(q, sizeof q, t->name, strlen(t->name)));
        if (t->offset % a)
            return bad(c, "data offset %llu is not a multiple of the "
                       "alignment %u", (ull)t->offset, f->alignment);
        if (f->data_offset > size || t->offset > size - f->data_offset ||
            t->bytes > size - f->data_offset - t->offset)
            return bad(c, "data [%llu, +%llu) runs past the end of the file "
                       "(data section at %llu, file %llu bytes)",
                       (ull)t->offset, (ull)t->bytes, (ull)f->data_offset,
                       (ull)size);
    }
    qsort(f->t_sorted, f->n_tensors, sizeof *f->t_sorted, cmp_t_offset);
    for (size_t i = 1; i < f->n_tensors; i++) {
        const mhsa_gguf_tensor *p = f->t_sorted[i - 1], *t = f->t_sorted[i];
        if (p->offset + p->bytes > t->offset) {
            char q[88], qp[64];
            snprintf(c->where, sizeof c->where, "tensor '%s'",
                     mhsa__esc(q, sizeof q, t->name, strlen(t->name)));
            return bad(c, "data at %llu overlaps tensor '%s' [%llu, +%llu)",
                       (ull)t->offset,
                       mhsa__esc(qp, sizeof qp, p->name, strlen(p->name)),
                       (ull)p->offset, (ull)p->bytes);
        }
    }
    qsort(f->t_sorted, f->n_tensors, sizeof *f->t_sorted,
          mhsa__gguf_cmp_tensor_name);
    for (size_t i = 1; i < f->n_tensors; i++)
        if (!strcmp(f->t_sorted[i - 1]->name, f->t_sorted[i]->name)) {
            char q[88];
            snprintf(c->where, sizeof c->where, "tensor '%s'",
                     mhsa__esc(q, sizeof q, f->t_sorted[i]->name,
                               strlen(f->t_sorted[i]->name)));
            return bad(c, "name appears twice");
        }
    return MHSA_OK;
}

void mhsa__gguf_close(mhsa_gguf_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; f->kv && i < f->n_kv; i++)
        free_val(&f->kv[i].val);
    MHSA_FREE_ALL(f->kv, f->kv_sorted, f->t, f->t_name_off, f->t_sorted,
                  f->buf);
    if (f->fd >= 0)
        close(f->fd);
    mhsa__free(f);
}

mhsa_status mhsa__gguf_open(const char *path, mhsa_gguf_file **out)
{
    if (!path || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__gguf_open: %s is "
                          "NULL", !path ? "path" : "out");
    mhsa_gguf_file *f = mhsa__alloc(sizeof *f);
    if (!f)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", path);
    f->fd = -1;
    cursor c = {.f = f, .path = path, .where = "header"};
    mhsa_status s = mhsa__open_regular(path, &f->fd, &f->file_size);
    if (s == MHSA_OK)
        s = rd_preamble(&c);
    if (s == MHSA_OK)
        s = rd_kvs(&c);
    for (size_t i = 0; s == MHSA_OK && i < f->n_tensors; i++)
        s = rd_tensor(&c, i);
    // The buffer no longer moves: pointers into it can be taken now.
    if (s == MHSA_OK)
        s = check_keys(&c);
    if (s == MHSA_OK)
        s = check_tensors(&c);
    if (s != MHSA_OK) {
        mhsa__gguf_close(f);
        return s;
    }
    *out = f;
    return MHSA_OK;
}

