// gguf_writer.c — the in-memory GGUF writer of the tests (gguf_writer.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_writer.h"
#include "models/gguf/gguf.h"

void gw_free(gw *w)
{
    free(w->p);
    w->p = NULL;
    w->len = w->cap = 0;
}

void gw_bytes(gw *w, const void *b, size_t n)
{
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n)
            cap *= 2;
        unsigned char *p = realloc(w->p, cap);
        if (!p)
            abort();   // a test helper: no memory is a broken test machine
        w->p = p;
        w->cap = cap;
    }
    if (n)
        memcpy(w->p + w->len, b, n);
    w->len += n;
}

static void le(gw *w, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    gw_bytes(w, b, (size_t)bytes);
}

void gw_u8(gw *w, uint8_t v) { le(w, v, 1); }
void gw_u16(gw *w, uint16_t v) { le(w, v, 2); }
void gw_u32(gw *w, uint32_t v) { le(w, v, 4); }
void gw_u64(gw *w, uint64_t v) { le(w, v, 8); }

void gw_f32(gw *w, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    le(w, u, 4);
}

void gw_f64(gw *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    le(w, u, 8);
}

void gw_strn(gw *w, const char *s, size_t n)
{
    gw_u64(w, n);
    gw_bytes(w, s, n);
}

void gw_str(gw *w, const char *s) { gw_strn(w, s, strlen(s)); }

void gw_pad(gw *w, size_t alignment)
{
    while (w->len % alignment)
        gw_u8(w, 0);
}

void gw_put_u32(gw *w, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        w->p[at + i] = (unsigned char)(v >> (8 * i));
}

void gw_put_u64(gw *w, size_t at, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        w->p[at + i] = (unsigned char)(v >> (8 * i));
}

void gw_header(gw *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gw_bytes(w, "GGUF", 4);
    gw_u32(w, version);
    gw_u64(w, n_tensors);
    gw_u64(w, n_kv);
}

void gw_key(gw *w, const char *key, uint32_t type)
{
    gw_str(w, key);
    gw_u32(w, type);
}

void gw_key_u32(gw *w, const char *key, uint32_t v)
{
    gw_key(w, key, MHSA_GGUF_UINT32);
    gw_u32(w, v);
}

void gw_llama_shape(gw *w, uint32_t layers, uint32_t ctx, uint32_t d_model,
                    uint32_t d_ff, uint32_t heads, uint32_t kv_heads,
                    float eps)
{
    gw_key(w, "general.architecture", MHSA_GGUF_STRING);
    gw_str(w, "llama");
    gw_key_u32(w, "llama.block_count", layers);
    gw_key_u32(w, "llama.context_length", ctx);
    gw_key_u32(w, "llama.embedding_length", d_model);
    gw_key_u32(w, "llama.feed_forward_length", d_ff);
    gw_key_u32(w, "llama.attention.head_count", heads);
    gw_key_u32(w, "llama.attention.head_count_kv", kv_heads);
    gw_key(w, "llama.attention.layer_norm_rms_epsilon", MHSA_GGUF_FLOAT32);
    gw_f32(w, eps);
}

void gw_arr(gw *w, uint32_t elem, uint64_t n)
{
    gw_u32(w, elem);
    gw_u64(w, n);
}

void gw_tensor_infos(gw *w, const gw_tensor *t, size_t n,
                     uint32_t alignment)
{
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        gw_str(w, t[i].name);
        gw_u32(w, t[i].n_dims);
        for (uint32_t d = 0; d < t[i].n_dims; d++)
            gw_u64(w, t[i].ne[d]);
        gw_u32(w, t[i].type);
        gw_u64(w, off);
        off += (t[i].bytes + alignment - 1) / alignment * alignment;
    }
    gw_pad(w, alignment);
}

void gw_tensors(gw *w, const gw_tensor *t, size_t n, uint32_t alignment)
{
    gw_tensor_infos(w, t, n, alignment);
    for (size_t i = 0; i < n; i++) {
        gw_pad(w, alignment);
        gw_bytes(w, t[i].data, t[i].bytes);
    }
}

int gw_save_prefix(const gw *w, size_t n, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t put = n ? fwrite(w->p, 1, n, f) : 0;
    return (fclose(f) != 0 || put != n) ? -1 : 0;
}

int gw_save(const gw *w, const char *path)
{
    return gw_save_prefix(w, w->len, path);
}
