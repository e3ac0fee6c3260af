// gguf_meta.c — a GGUF file's metadata: lookup by key and the typed
// getters of gguf.h. Everything here reads what mhsa__gguf_open already
// validated (types, sizes, bools), so the getters only check that the
// caller asks for the type the file has.
#include <stdlib.h>
#include <string.h>

#include "io/file_read.h"
#include "gguf_impl.h"
#include "core/status.h"

typedef unsigned long long ull;   // for printf

uint32_t mhsa__gguf_version(const mhsa_gguf_file *f) { return f->version; }

uint32_t mhsa__gguf_alignment(const mhsa_gguf_file *f)
{
    return f->alignment;
}

size_t mhsa__gguf_kv_count(const mhsa_gguf_file *f) { return f->n_kv; }

const char *mhsa__gguf_kv_key(const mhsa_gguf_file *f, size_t i)
{
    return i < f->n_kv ? f->kv[i].key : NULL;
}

const mhsa_gguf_val *mhsa__gguf_kv_val(const mhsa_gguf_file *f, size_t i)
{
    return i < f->n_kv ? &f->kv[i].val : NULL;
}

mhsa_gguf_type mhsa__gguf_val_type(const mhsa_gguf_val *v)
{
    return (mhsa_gguf_type)v->type;
}

// The owning key of v, escaped for a message (file_read.h) into buf.
static const char *key_of(const mhsa_gguf_val *v, char (*buf)[96])
{
    const char *k = (const char *)v->f->buf + v->key;
    return mhsa__esc(*buf, sizeof *buf, k, strlen(k));
}
// A buffer for it living to the end of the enclosing block.
#define KEY_OF(v) key_of((v), &(char[96]){0})

// The number of `type` at p (validated bytes), exactly.
static mhsa_gguf_num decode(uint32_t type, const unsigned char *p)
{
    mhsa_gguf_num n = {.type = (mhsa_gguf_type)type};
    size_t bytes = mhsa__gguf_fixed_size(type);
    uint64_t u = 0;
    for (size_t i = bytes; i-- > 0;)
        u = u << 8 | p[i];
    switch (type) {
    case MHSA_GGUF_INT8:  n.as.i = u < 0x80 ? (int64_t)u : (int64_t)u - 0x100;
                          break;
    case MHSA_GGUF_INT16: n.as.i = u < 0x8000 ? (int64_t)u
                                              : (int64_t)u - 0x10000;
                          break;
    case MHSA_GGUF_INT32: n.as.i = u < 0x80000000u ? (int64_t)u
                                                   : (int64_t)u - 0x100000000;
                          break;
    case MHSA_GGUF_INT64: memcpy(&n.as.i, &u, sizeof u);   // two's complement
                          break;
    case MHSA_GGUF_FLOAT32: {
        uint32_t b = (uint32_t)u;
        float x;
        memcpy(&x, &b, sizeof x);
        n.as.f = x;
        // A subnormal by integer arithmetic: under the library's
        // flush-to-zero mode (core/fpenv.h) the conversion above gives 0,
        // and a message would show 0 instead of the value in the file.
        if ((b & 0x7f800000u) == 0 && (b & 0x7fffffu)) {
            n.as.f = (double)(b & 0x7fffffu) * 0x1p-149;
            n.as.f = b >> 31 ? -n.as.f : n.as.f;
        }
        break;
    }
    case MHSA_GGUF_FLOAT64: memcpy(&n.as.f, &u, sizeof u); break;
    default:              n.as.u = u; break;   // unsigned types and bool
    }
    return n;
}

mhsa_status mhsa__gguf_val_num(const mhsa_gguf_val *v, mhsa_gguf_num *out)
{
    if (!mhsa__gguf_fixed_size(v->type))
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s' is %s, not a number",
                          KEY_OF(v), mhsa__gguf_type_name(v->type));
    *out = decode(v->type, v->f->buf + v->off);
    return MHSA_OK;
}

mhsa_status mhsa__gguf_val_str(const mhsa_gguf_val *v, const char **s,
                               size_t *len)
{
    if (v->type != MHSA_GGUF_STRING)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s' is %s, not a string",
                          KEY_OF(v), mhsa__gguf_type_name(v->type));
    *s = (const char *)v->f->buf + v->off;
    if (len)
        *len = (size_t)v->n;
    return MHSA_OK;
}

int mhsa__gguf_arr_type(const mhsa_gguf_val *v)
{
    return v->type == MHSA_GGUF_ARRAY ? (int)v->elem : -1;
}

uint64_t mhsa__gguf_arr_count(const mhsa_gguf_val *v)
{
    return v->type == MHSA_GGUF_ARRAY ? v->n : 0;
}

// v an array of elements of `want` (0: any fixed-size type) holding i.
static mhsa_status check_elem(const mhsa_gguf_val *v, uint64_t i,
                              uint32_t want, const char *what)
{
    int ok = v->type == MHSA_GGUF_ARRAY &&
             (want ? v->elem == want : mhsa__gguf_fixed_size(v->elem) > 0);
    if (!ok)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': %s %s, not an array "
                          "of %s", KEY_OF(v),
                          v->type == MHSA_GGUF_ARRAY ? "array of" : "is",
                          mhsa__gguf_type_name(v->type == MHSA_GGUF_ARRAY
                                               ? v->elem : v->type), what);
    if (i >= v->n)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': element %llu of an "
                          "array of %llu", KEY_OF(v), (ull)i, (ull)v->n);
    return MHSA_OK;
}

mhsa_status mhsa__gguf_arr_num(const mhsa_gguf_val *v, uint64_t i,
                               mhsa_gguf_num *out)
{
    mhsa_status s = check_elem(v, i, 0, "numbers");
    if (s == MHSA_OK)
        *out = decode(v->elem, v->f->buf + v->off +
                      (size_t)i * mhsa__gguf_fixed_size(v->elem));
    return s;
}

mhsa_status mhsa__gguf_arr_str(const mhsa_gguf_val *v, uint64_t i,
                               const char **s, size_t *len)
{
    mhsa_status st = check_elem(v, i, MHSA_GGUF_STRING, "strings");
    if (st == MHSA_OK) {
        *s = (const char *)v->f->buf + v->strs[i].off;
        if (len)
            *len = (size_t)v->strs[i].len;
    }
    return st;
}

mhsa_status mhsa__gguf_arr_arr(const mhsa_gguf_val *v, uint64_t i,
                               const mhsa_gguf_val **out)
{
    mhsa_status s = check_elem(v, i, MHSA_GGUF_ARRAY, "arrays");
    if (s == MHSA_OK)
        *out = &v->arrs[i];
    return s;
}

// ---- getters by key -------------------------------------------------------

// The value of key, which must exist and be of `type`.
static mhsa_status get(const mhsa_gguf_file *f, const char *key,
                       uint32_t type, const mhsa_gguf_val **v)
{
    if (!f || !key)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__gguf_get: %s is NULL",
                          !f ? "f" : "key");
    *v = mhsa__gguf_find(f, key);
    if (!*v)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s' not found",
                          mhsa__esc((char[96]){0}, 96, key, strlen(key)));
    if ((*v)->type != type)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s' is %s, expected %s",
                          mhsa__esc((char[96]){0}, 96, key, strlen(key)),
                          mhsa__gguf_type_name((*v)->type),
                          mhsa__gguf_type_name(type));
    return MHSA_OK;
}

mhsa_status mhsa__gguf_get_str(const mhsa_gguf_file *f, const char *key,
                               const char **s, size_t *len)
{
    const mhsa_gguf_val *v = NULL;
    mhsa_status st = get(f, key, MHSA_GGUF_STRING, &v);
    return st == MHSA_OK ? mhsa__gguf_val_str(v, s, len) : st;
}

// The number at key, which must exist and be of `type`, stored into *out
// as the C type its getter takes (uint32_t, int32_t, uint64_t, float, and
// int for a bool, one byte validated 0 or 1 at open); *out is written only
// when the key has that type.
static mhsa_status get_fixed(const mhsa_gguf_file *f, const char *key,
                             uint32_t type, void *out)
{
    const mhsa_gguf_val *v = NULL;
    mhsa_status s = get(f, key, type, &v);
    if (s != MHSA_OK)
        return s;
    mhsa_gguf_num n = decode(type, f->buf + v->off);
    switch (type) {
    case MHSA_GGUF_UINT32:  *(uint32_t *)out = (uint32_t)n.as.u; break;
    case MHSA_GGUF_INT32:   *(int32_t *)out = (int32_t)n.as.i; break;
    case MHSA_GGUF_UINT64:  *(uint64_t *)out = n.as.u; break;
    case MHSA_GGUF_FLOAT32: *(float *)out = (float)n.as.f; break;
    default:                *(int *)out = n.as.u != 0; break;   // bool
    }
    return MHSA_OK;
}

mhsa_status mhsa__gguf_get_u32(const mhsa_gguf_file *f, const char *key,
                               uint32_t *out)
{
    return get_fixed(f, key, MHSA_GGUF_UINT32, out);
}

mhsa_status mhsa__gguf_get_i32(const mhsa_gguf_file *f, const char *key,
                               int32_t *out)
{
    return get_fixed(f, key, MHSA_GGUF_INT32, out);
}

mhsa_status mhsa__gguf_get_u64(const mhsa_gguf_file *f, const char *key,
                               uint64_t *out)
{
    return get_fixed(f, key, MHSA_GGUF_UINT64, out);
}

mhsa_status mhsa__gguf_get_f32(const mhsa_gguf_file *f, const char *key,
                               float *out)
{
    return get_fixed(f, key, MHSA_GGUF_FLOAT32, out);
}

mhsa_status mhsa__gguf_get_bool(const mhsa_gguf_file *f, const char *key,
                                int *out)
{
    return get_fixed(f, key, MHSA_GGUF_BOOL, out);
}

mhsa_status mhsa__gguf_get_arr(const mhsa_gguf_file *f, const char *key,
                               const mhsa_gguf_val **arr)
{
    return get(f, key, MHSA_GGUF_ARRAY, arr);
}
