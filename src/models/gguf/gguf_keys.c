// gguf_keys.c — what the parser (gguf.c) and the getters (gguf_meta.c)
// both stand on: the value types' names and sizes, and the key index the
// parser sorts and the lookup searches with the same comparison.
#include <stdlib.h>
#include <string.h>

#include "gguf_impl.h"

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
