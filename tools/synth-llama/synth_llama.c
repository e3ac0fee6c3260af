// synth-llama — writes a Llama-architecture GGUF file of any shape with
// random weights: a model for benchmarks at sizes where DRAM, not the
// cache, is the limit (a 1.1B shape, say). The tokenizer is another
// GGUF file's (every tokenizer.* key copied, so llama.cpp and mhsa-generate
// load and tokenize it as that model); the vocabulary size is its token
// count.
//
//   synth-llama --tokenizer FROM.gguf --out OUT.gguf [options]
//
//   --d-model N    embedding width             (default 2048)
//   --layers N     blocks                      (default 22)
//   --heads N      query heads                 (default 32)
//   --kv-heads N   key/value heads             (default 4)
//   --ffn N        feed-forward width          (default 5632)
//   --ctx N        llama.context_length        (default 2048)
//   --type T       f16 or f32 for the matrices (default f16)
//   --scale S      standard deviation          (default 0.02)
//   --seed N       random seed                 (default 1)
//
// The defaults are TinyLlama-1.1B's shape. Matrices (token_embd, output,
// and per block attn_q/k/v/output, ffn_gate/up/down) hold normal draws of
// mean 0 and standard deviation S; the RMS norm weights are 1 (F32, as
// llama.cpp writes them). The output matrix is its own tensor, not tied to
// the embedding. The same arguments give the same bytes. Quantized files
// come from this one through llama.cpp's tool:
//   llama-quantize OUT.gguf OUT-Q4_0.gguf Q4_0
// The file is written tensor by tensor, never whole in memory (F16 at the
// default shape: 2.3 GB).
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_writer.h"
#include "kernels/half.h"
#include "mhsa.h"
#include "models/gguf/gguf.h"

enum { ALIGN = MHSA_GGUF_DEFAULT_ALIGNMENT, N_PER_LAYER = 9 };

typedef struct opts {
    const char *tokenizer, *out;
    long d, layers, heads, kv_heads, ffn, ctx;
    int f32;
    double scale;
    unsigned long long seed;
} opts;

static void usage(FILE *to)
{
    fprintf(to,
            "usage: synth-llama --tokenizer FROM.gguf --out OUT.gguf "
            "[--d-model N] [--layers N]\n"
            "       [--heads N] [--kv-heads N] [--ffn N] [--ctx N] "
            "[--type f16|f32] [--scale S] [--seed N]\n"
            "A Llama GGUF file of that shape (default TinyLlama-1.1B's: "
            "2048, 22, 32, 4, 5632)\nwith random normal weights and "
            "FROM's tokenizer.\n");
}

static long arg_long(const char *opt, const char *s, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > max) {
        fprintf(stderr, "synth-llama: %s '%s' is not an integer in 1..%ld\n",
                opt, s, max);
        exit(2);
    }
    return v;
}

static opts parse(int argc, char **argv)
{
    opts o = { .d = 2048, .layers = 22, .heads = 32, .kv_heads = 4,
               .ffn = 5632, .ctx = 2048, .scale = 0.02, .seed = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "synth-llama: %s needs a value\n", a);
            usage(stderr);
            exit(2);
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--tokenizer"))
            o.tokenizer = v;
        else if (!strcmp(a, "--out"))
            o.out = v;
        else if (!strcmp(a, "--d-model"))
            o.d = arg_long(a, v, 1L << 16);
        else if (!strcmp(a, "--layers"))
            o.layers = arg_long(a, v, 1024);
        else if (!strcmp(a, "--heads"))
            o.heads = arg_long(a, v, 1024);
        else if (!strcmp(a, "--kv-heads"))
            o.kv_heads = arg_long(a, v, 1024);
        else if (!strcmp(a, "--ffn"))
            o.ffn = arg_long(a, v, 1L << 18);
        else if (!strcmp(a, "--ctx"))
            o.ctx = arg_long(a, v, 1L << 24);
        else if (!strcmp(a, "--seed"))
            o.seed = (unsigned long long)arg_long(a, v, 0x7fffffffL);
        else if (!strcmp(a, "--type") && (!strcmp(v, "f16") ||
                                          !strcmp(v, "f32")))
            o.f32 = !strcmp(v, "f32");
        else if (!strcmp(a, "--scale")) {
            char *end;
            o.scale = strtod(v, &end);
            if (end == v || *end || !(o.scale > 0 && o.scale < 1e3)) {
                fprintf(stderr, "synth-llama: --scale '%s' is not a "
                        "number in (0, 1000)\n", v);
                exit(2);
            }
        } else {
            fprintf(stderr, "synth-llama: unknown option or value: %s %s\n",
                    a, v);
            usage(stderr);
            exit(2);
        }
    }
    if (!o.tokenizer || !o.out) {
        usage(stderr);
        exit(2);
    }
    if (o.d % o.heads || o.heads % o.kv_heads || (o.d / o.heads) % 2) {
        fprintf(stderr, "synth-llama: --d-model %ld must be a multiple of "
                "--heads %ld, with an even head width, and --heads a "
                "multiple of --kv-heads %ld\n", o.d, o.heads, o.kv_heads);
        exit(2);
    }
    return o;
}

// ---- the tokenizer's keys, copied value by value --------------------------

static void put_num(gw *w, int type, const mhsa_gguf_num *n)
{
    switch (type) {
    case MHSA_GGUF_UINT8:
    case MHSA_GGUF_BOOL: gw_u8(w, (uint8_t)n->as.u); break;
    case MHSA_GGUF_INT8: gw_u8(w, (uint8_t)n->as.i); break;
    case MHSA_GGUF_UINT16: gw_u16(w, (uint16_t)n->as.u); break;
    case MHSA_GGUF_INT16: gw_u16(w, (uint16_t)n->as.i); break;
    case MHSA_GGUF_UINT32: gw_u32(w, (uint32_t)n->as.u); break;
    case MHSA_GGUF_INT32: gw_u32(w, (uint32_t)n->as.i); break;
    case MHSA_GGUF_UINT64: gw_u64(w, n->as.u); break;
    case MHSA_GGUF_INT64: gw_u64(w, (uint64_t)n->as.i); break;
    case MHSA_GGUF_FLOAT32: gw_f32(w, (float)n->as.f); break;
    default: gw_f64(w, n->as.f); break;   // FLOAT64
    }
}

// The value v (not its type) appended to w; an array as element type,
// count and elements.
static mhsa_status put_val(gw *w, const mhsa_gguf_val *v)
{
    mhsa_status st = MHSA_OK;
    const char *s;
    size_t len;
    mhsa_gguf_num n;
    int t = (int)mhsa__gguf_val_type(v);
    if (t == MHSA_GGUF_STRING) {
        if ((st = mhsa__gguf_val_str(v, &s, &len)) == MHSA_OK)
            gw_strn(w, s, len);
        return st;
    }
    if (t != MHSA_GGUF_ARRAY) {
        if ((st = mhsa__gguf_val_num(v, &n)) == MHSA_OK)
            put_num(w, t, &n);
        return st;
    }
    int et = mhsa__gguf_arr_type(v);
    uint64_t count = mhsa__gguf_arr_count(v);
    gw_arr(w, (uint32_t)et, count);
    for (uint64_t i = 0; i < count && st == MHSA_OK; i++) {
        const mhsa_gguf_val *e;
        if (et == MHSA_GGUF_STRING) {
            if ((st = mhsa__gguf_arr_str(v, i, &s, &len)) == MHSA_OK)
                gw_strn(w, s, len);
        } else if (et == MHSA_GGUF_ARRAY) {
            if ((st = mhsa__gguf_arr_arr(v, i, &e)) == MHSA_OK)
                st = put_val(w, e);
        } else if ((st = mhsa__gguf_arr_num(v, i, &n)) == MHSA_OK) {
            put_num(w, et, &n);
        }
    }
    return st;
}

static int is_tokenizer_key(const char *k)
{
    return !strncmp(k, "tokenizer.", 10);
}

// ---- random normal draws ---------------------------------------------------

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// n normal draws of standard deviation `scale` (Box-Muller, two per pair
// of uniforms in (0, 1]).
static void normals(uint64_t *state, float scale, float *x, size_t n)
{
    const float two_pi = 6.28318530717958647692f;
    for (size_t i = 0; i < n; i += 2) {
        uint64_t r = splitmix64(state);
        float u1 = (float)((r >> 40) + 1) * 0x1p-24f;            // (0, 1]
        float u2 = (float)((r >> 16) & 0xffffffu) * 0x1p-24f;    // [0, 1)
        float m = scale * sqrtf(-2.0f * logf(u1));
        x[i] = m * cosf(two_pi * u2);
        if (i + 1 < n)
            x[i + 1] = m * sinf(two_pi * u2);
    }
}

// ---- the tensors -----------------------------------------------------------

typedef struct spec {
    char name[48];
    uint64_t ne[2];   // innermost first; ne[1] == 0: a vector (a norm)
} spec;

static size_t specs(const opts *o, uint64_t vocab, spec *s)
{
    uint64_t d = (uint64_t)o->d, f = (uint64_t)o->ffn;
    uint64_t dkv = d / (uint64_t)o->heads * (uint64_t)o->kv_heads;
    size_t n = 0;
    s[n++] = (spec){ "token_embd.weight", { d, vocab } };
    for (long l = 0; l < o->layers; l++) {
        static const struct { const char *name; int in, out; } per[] = {
            { "attn_norm", 0, -1 }, { "attn_q", 0, 0 }, { "attn_k", 0, 1 },
            { "attn_v", 0, 1 }, { "attn_output", 0, 0 },
            { "ffn_norm", 0, -1 }, { "ffn_gate", 0, 2 },
            { "ffn_up", 0, 2 }, { "ffn_down", 2, 0 },
        };
        for (int k = 0; k < N_PER_LAYER; k++) {
            uint64_t dim[3] = { d, dkv, f };
            spec *t = &s[n++];
            snprintf(t->name, sizeof t->name, "blk.%ld.%s.weight", l,
                     per[k].name);
            t->ne[0] = dim[per[k].in];
            t->ne[1] = per[k].out < 0 ? 0 : dim[per[k].out];
        }
    }
    s[n++] = (spec){ "output_norm.weight", { d, 0 } };
    s[n++] = (spec){ "output.weight", { d, vocab } };
    return n;
}

static int write_data(FILE *fp, const spec *s, size_t n, const opts *o,
                      uint64_t pos)
{
    enum { CHUNK = 1 << 20 };
    float *x = malloc(CHUNK * sizeof *x);
    uint16_t *h = malloc(CHUNK * sizeof *h);
    int ok = x && h;
    for (size_t i = 0; i < n && ok; i++) {
        static const char zeros[ALIGN];
        size_t pad = (size_t)((ALIGN - pos % ALIGN) % ALIGN);
        ok = fwrite(zeros, 1, pad, fp) == pad;
        pos += pad;
        // Each tensor its own stream, so a shape change leaves the others.
        uint64_t state = o->seed * 0x100000001b3ull + i;
        int norm = s[i].ne[1] == 0, half = !norm && !o->f32;
        uint64_t left = norm ? s[i].ne[0] : s[i].ne[0] * s[i].ne[1];
        while (left && ok) {
            size_t m = left < CHUNK ? (size_t)left : CHUNK;
            if (norm) {
                for (size_t j = 0; j < m; j++)
                    x[j] = 1.0f;
            } else {
                normals(&state, (float)o->scale, x, m);
            }
            if (half) {
                for (size_t j = 0; j < m; j++)
                    h[j] = mhsa_f32_to_f16(x[j]);
                ok = fwrite(h, sizeof *h, m, fp) == m;
            } else {
                ok = fwrite(x, sizeof *x, m, fp) == m;
            }
            pos += m * (half ? 2 : 4);
            left -= m;
        }
    }
    free(x);
    free(h);
    return ok;
}

int main(int argc, char **argv)
{
    opts o = parse(argc, argv);
    mhsa_gguf_file *src;
    if (mhsa__gguf_open(o.tokenizer, &src) != MHSA_OK) {
        fprintf(stderr, "synth-llama: %s\n", mhsa_last_error());
        return 1;
    }
    const mhsa_gguf_val *tokens;
    if (mhsa__gguf_get_arr(src, "tokenizer.ggml.tokens", &tokens) !=
        MHSA_OK) {
        fprintf(stderr, "synth-llama: %s\n", mhsa_last_error());
        return 1;
    }
    uint64_t vocab = mhsa__gguf_arr_count(tokens);
    size_t n_tok_keys = 0;
    for (size_t i = 0; i < mhsa__gguf_kv_count(src); i++)
        n_tok_keys += is_tokenizer_key(mhsa__gguf_kv_key(src, i));

    size_t n = (size_t)o.layers * N_PER_LAYER + 3;
    spec *s = malloc(n * sizeof *s);
    gw_tensor *t = calloc(n, sizeof *t);
    if (!s || !t) {
        fprintf(stderr, "synth-llama: out of memory\n");
        return 1;
    }
    specs(&o, vocab, s);
    uint64_t params = 0;
    for (size_t i = 0; i < n; i++) {
        int norm = s[i].ne[1] == 0;
        uint64_t numel = norm ? s[i].ne[0] : s[i].ne[0] * s[i].ne[1];
        t[i] = (gw_tensor){ .name = s[i].name, .n_dims = norm ? 1 : 2,
                            .ne = { s[i].ne[0], s[i].ne[1] },
                            .type = norm || o.f32 ? MHSA_GGML_F32
                                                  : MHSA_GGML_F16,
                            .bytes = numel * (norm || o.f32 ? 4 : 2) };
        params += numel;
    }

    gw w = { 0 };
    char name[96];
    snprintf(name, sizeof name, "synthetic llama %ldx%ld, %ld/%ld heads, "
             "ffn %ld", o.layers, o.d, o.heads, o.kv_heads, o.ffn);
    gw_header(&w, 3, n, 14 + n_tok_keys);
    gw_key(&w, "general.architecture", MHSA_GGUF_STRING);
    gw_str(&w, "llama");
    gw_key(&w, "general.name", MHSA_GGUF_STRING);
    gw_str(&w, name);
    gw_key(&w, "general.file_type", MHSA_GGUF_UINT32);   // llama_ftype
    gw_u32(&w, o.f32 ? 0 : 1);
    gw_key(&w, "llama.vocab_size", MHSA_GGUF_UINT32);
    gw_u32(&w, (uint32_t)vocab);
    gw_key(&w, "llama.context_length", MHSA_GGUF_UINT32);
    gw_u32(&w, (uint32_t)o.ctx);
    gw_key(&w, "llama.embedding_length", MHSA_GGUF_UINT32);
    gw_u32(&w, (uint32_t)o.d);
    gw_key(&w, "llama.block_count", MHSA_GGUF_UINT32);
    gw_u32(&w, (uint32_t)o.layers);
    gw_key(&w, "llama.feed_forward_length", MHSA_GGUF_UINT32);
    gw_u32(&w, (uint32_t)o.ffn);
    gw_key(&w, "llama.attention.head_count", MHSA_GGUF_UINT32);
    gw_u32(&w, (uint32_t)o.heads);
    gw_key(&w, "llama.attention.head_count_kv", MHSA_GGUF_UINT32);
    gw_u32(&w, (uint32_t)o.kv_heads);
    gw_key(&w, "llama.rope.dimension_count", MHSA_GGUF_UINT32);
    gw_u32(&w, (uint32_t)(o.d / o.heads));
    gw_key(&w, "llama.rope.freq_base", MHSA_GGUF_FLOAT32);
    gw_f32(&w, 10000.0f);
    gw_key(&w, "llama.attention.layer_norm_rms_epsilon", MHSA_GGUF_FLOAT32);
    gw_f32(&w, 1e-5f);
    gw_key(&w, "general.alignment", MHSA_GGUF_UINT32);
    gw_u32(&w, ALIGN);
    for (size_t i = 0; i < mhsa__gguf_kv_count(src); i++) {
        const char *k = mhsa__gguf_kv_key(src, i);
        if (!is_tokenizer_key(k))
            continue;
        const mhsa_gguf_val *v = mhsa__gguf_kv_val(src, i);
        gw_key(&w, k, (uint32_t)mhsa__gguf_val_type(v));
        if (put_val(&w, v) != MHSA_OK) {
            fprintf(stderr, "synth-llama: %s\n", mhsa_last_error());
            return 1;
        }
    }
    gw_tensor_infos(&w, t, n, ALIGN);
    mhsa__gguf_close(src);

    FILE *fp = fopen(o.out, "wb");
    int ok = fp && fwrite(w.p, 1, w.len, fp) == w.len &&
             write_data(fp, s, n, &o, w.len);
    if (fp && fclose(fp))
        ok = 0;
    if (!ok) {
        fprintf(stderr, "synth-llama: cannot write %s: %s\n", o.out,
                strerror(errno));
        remove(o.out);
        return 1;
    }
    printf("%s: %s, vocabulary %llu, %.3f B parameters (%s)\n", o.out, name,
           (unsigned long long)vocab, (double)params * 1e-9,
           o.f32 ? "f32" : "f16");
    gw_free(&w);
    free(s);
    free(t);
    return 0;
}
