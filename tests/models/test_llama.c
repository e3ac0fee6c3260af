// test_llama.c — the Llama model's refusals (src/models/llama): files that are
// not llama models or lack or misshape what one needs, each
// MHSA_ERR_FORMAT naming the key or tensor, and mhsa__llama_forward's
// argument errors, which leave the cache as it was. The files are small
// F32 models written with tests/gguf_writer.c. (The model's numbers are
// checked against PyTorch by tests/models/llama_ref.py.) A wider model's
// decoding gives the same bits on 1, 2 and 3 threads.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "models/gguf/gguf.h"
#include "gguf_writer.h"
#include "models/llama/llama.h"
#include "models/llama/llama_internal.h"
#include "models/tokenizer/tokenizer.h"
#include "util.h"

// D = 16, 2 heads of 8 sharing 1 KV head, F = 256 (so that an iq2_xxs
// ffn_down, 256 values a block, has whole rows), vocab 8, 2 layers.
enum { D = 16, H = 2, KV = 1, DH = 8, F = 256, V = 8, L = 2, CTX = 16 };

// A model's sizes: the test model's above, or a wider one.
typedef struct dims { int D, H, KV, DH, F, V, CTX; } dims;
static const dims std_dims = {D, H, KV, DH, F, V, CTX};
// Wide enough that a decoding step's attention and MLP each run on the
// threads (over the work threshold of core/threads.h).
static const dims wide_dims = {128, 4, 2, 32, 512, 64, 64};
enum { MAX_D = 128, MAX_F = 512, MAX_V = 64 };

typedef struct opts {
    const dims *dm;           // NULL: std_dims
    const char *arch;         // general.architecture
    int no_block_count;       // leave llama.block_count out
    const char *drop;         // a tensor left out
    const char *misshape;     // a tensor written with one row too many
    const char *iq2;          // a tensor written as iq2_xxs (ggml type 16),
                              // a type mhsa does not read
    uint32_t block_count;     // llama.block_count; 0: L (the tensors are
                              // always L layers')
    uint32_t d_ff;            // llama.feed_forward_length; 0: F
    float eps;                // the rms epsilon; 0: 1e-5
    const char *extra;        // one more tensor (D floats) of this name
    int scaling_u32;          // llama.rope.scaling.type as the u32 1
    int tok_vocab;            // > 0: tokenizer keys, this many tokens
    const char *tok_key;      // with tok_vocab: one more u32 key ...
    uint32_t tok_val;         // ... of this value
    int qkv_bias;             // blk.N.attn_{q,k,v}.bias (qwen2's)
    const char *key_arch;     // the keys' prefix; NULL: "qwen2" for a
                              // qwen2 file, else "llama"
    int rope_freqs;           // > 0: rope_freqs.weight of this length ...
    float rope_freq;          // ... its values this (one of them 2.5)
} opts;

static opts std_opts(void)
{
    return (opts){NULL, "llama", 0, NULL, NULL, NULL, 0, 0, 0.0f, NULL, 0,
                  0, NULL, 0, 0, NULL, 0, 0.0f};
}

// A Qwen2 model: biases on Q, K and V, qwen2.* keys.
static opts qwen2_opts(void)
{
    opts o = std_opts();
    o.arch = "qwen2";
    o.qkv_bias = 1;
    return o;
}

static char model_path[512];

static void key_u32(gw *w, const char *k, uint32_t v)
{
    gw_key(w, k, MHSA_GGUF_UINT32);
    gw_u32(w, v);
}

// Writes the model o describes to model_path.
static void write_model(opts o)
{
    const dims dm = o.dm ? *o.dm : std_dims;
    const int D = dm.D, KV = dm.KV, DH = dm.DH, F = dm.F, V = dm.V;
    const struct { const char *name; int rows, cols; } mats[] = {
        {"attn_q", D, D}, {"attn_k", KV * DH, D}, {"attn_v", KV * DH, D},
        {"attn_output", D, D}, {"ffn_gate", F, D}, {"ffn_up", F, D},
        {"ffn_down", D, F},
    };
    enum { N_MATS = sizeof mats / sizeof mats[0] };
    static char names[L][N_MATS + 5][48];
    gw_tensor t[4 + L * (N_MATS + 5)];
    size_t nt = 0;
    // One buffer big enough for the largest tensor (plus the extra row),
    // shared by all: the values do not matter here.
    static float data[(MAX_F + 1) * MAX_D + (MAX_V + 1) * MAX_D];
    rng r = {20261201};
    fill_uniform(&r, data, sizeof data / sizeof *data, -0.5f, 0.5f);
    t[nt++] = (gw_tensor){"token_embd.weight", 2, {D, V}, MHSA_GGML_F32,
                          data, (size_t)V * D * 4};
    t[nt++] = (gw_tensor){"output_norm.weight", 1, {D}, MHSA_GGML_F32, data,
                          D * 4};
    for (int l = 0; l < L; l++) {
        snprintf(names[l][0], 48, "blk.%d.attn_norm.weight", l);
        snprintf(names[l][1], 48, "blk.%d.ffn_norm.weight", l);
        t[nt++] = (gw_tensor){names[l][0], 1, {D}, MHSA_GGML_F32, data,
                              D * 4};
        t[nt++] = (gw_tensor){names[l][1], 1, {D}, MHSA_GGML_F32, data,
                              D * 4};
        for (int i = 0; i < N_MATS; i++) {
            char *n = names[l][2 + i];
            snprintf(n, 48, "blk.%d.%s.weight", l, mats[i].name);
            gw_tensor x = {n, 2, {(uint64_t)mats[i].cols,
                                  (uint64_t)mats[i].rows}, MHSA_GGML_F32,
                           data, (size_t)mats[i].rows * mats[i].cols * 4};
            if (o.misshape && !strcmp(o.misshape, n)) {
                x.ne[1]++;
                x.bytes += (size_t)mats[i].cols * 4;
            }
            if (o.iq2 && !strcmp(o.iq2, n)) {
                x.type = 16;   // 66 bytes per 256 values
                x.bytes = (size_t)mats[i].rows * (mats[i].cols / 256) * 66;
            }
            if (!(o.drop && !strcmp(o.drop, n)))
                t[nt++] = x;
        }
        for (int i = 0; o.qkv_bias && i < 3; i++) {   // (D), (kvd), (kvd)
            char *n = names[l][2 + N_MATS + i];
            snprintf(n, 48, "blk.%d.%s.bias", l, mats[i].name);
            gw_tensor x = {n, 1, {(uint64_t)mats[i].rows}, MHSA_GGML_F32,
                           data, (size_t)mats[i].rows * 4};
            if (o.misshape && !strcmp(o.misshape, n)) {
                x.ne[0]--;
                x.bytes -= 4;
            }
            if (!(o.drop && !strcmp(o.drop, n)))
                t[nt++] = x;
        }
    }
    if (o.extra)
        t[nt++] = (gw_tensor){o.extra, 1, {D}, MHSA_GGML_F32, data, D * 4};
    static float freqs[64];
    for (int i = 0; i < 64; i++)
        freqs[i] = i == 1 ? 2.5f : o.rope_freq;
    if (o.rope_freqs > 0)
        t[nt++] = (gw_tensor){"rope_freqs.weight", 1,
                              {(uint64_t)o.rope_freqs}, MHSA_GGML_F32, freqs,
                              (size_t)o.rope_freqs * 4};
    gw w = {0};
    gw_header(&w, 3, nt, 0);
    uint64_t nkv = 0;
    gw_key(&w, "general.architecture", MHSA_GGUF_STRING);
    gw_str(&w, o.arch);
    nkv++;
    const char *ka = o.key_arch ? o.key_arch
                   : !strcmp(o.arch, "qwen2") ? "qwen2" : "llama";
    char k[80];
#define KEY(what) (snprintf(k, sizeof k, "%s.%s", ka, what), k)
    if (!o.no_block_count) {
        key_u32(&w, KEY("block_count"), o.block_count ? o.block_count : L);
        nkv++;
    }
    key_u32(&w, KEY("context_length"), (uint32_t)dm.CTX);
    key_u32(&w, KEY("embedding_length"), (uint32_t)D);
    key_u32(&w, KEY("feed_forward_length"), o.d_ff ? o.d_ff : (uint32_t)F);
    key_u32(&w, KEY("attention.head_count"), (uint32_t)dm.H);
    key_u32(&w, KEY("attention.head_count_kv"), (uint32_t)KV);
    gw_key(&w, KEY("attention.layer_norm_rms_epsilon"), MHSA_GGUF_FLOAT32);
    gw_f32(&w, o.eps != 0.0f ? o.eps : 1e-5f);
    nkv += 6;
    if (o.scaling_u32) {
        key_u32(&w, KEY("rope.scaling.type"), 1);
        nkv++;
    }
#undef KEY
    if (o.tok_vocab > 0) {   // a byte-level BPE vocabulary "t0", "t1", ...
        gw_key(&w, "tokenizer.ggml.model", MHSA_GGUF_STRING);
        gw_str(&w, "gpt2");
        gw_key(&w, "tokenizer.ggml.pre", MHSA_GGUF_STRING);
        gw_str(&w, "gpt-2");
        gw_key(&w, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
        gw_arr(&w, MHSA_GGUF_STRING, (uint64_t)o.tok_vocab);
        for (int i = 0; i < o.tok_vocab; i++) {
            char tok[16];
            snprintf(tok, sizeof tok, "t%d", i);
            gw_str(&w, tok);
        }
        gw_key(&w, "tokenizer.ggml.merges", MHSA_GGUF_ARRAY);
        gw_arr(&w, MHSA_GGUF_STRING, 1);
        gw_str(&w, "t 0");
        nkv += 4;
        if (o.tok_key) {
            key_u32(&w, o.tok_key, o.tok_val);
            nkv++;
        }
    }
    gw_put_u64(&w, 16, nkv);   // after "GGUF", version, tensor count
    gw_tensors(&w, t, nt, 32);
    const char *d = getenv("TMPDIR");
    snprintf(model_path, sizeof model_path, "%s/mhsa-llama-%ld.gguf",
             d && d[0] ? d : "/tmp", (long)getpid());
    ck_assert_int_eq(gw_save(&w, model_path), 0);
    gw_free(&w);
}

// Loads the model o describes; the file is removed again.
static mhsa_status load(opts o, int capacity, mhsa_llama **m)
{
    write_model(o);
    *m = NULL;
    mhsa_status st = mhsa__llama_load(model_path, capacity, m);
    unlink(model_path);
    return st;
}

// The load of o fails with MHSA_ERR_FORMAT and a message naming `names`.
static void check_refused(opts o, const char *names)
{
    mhsa_llama *m;
    mhsa_status st = load(o, 0, &m);
    ck_assert_msg(st == MHSA_ERR_FORMAT && !m, "%s: status %s",
                  names, mhsa_status_str(st));
    ck_assert_msg(strstr(mhsa_last_error(), names), "message \"%s\" does "
                  "not name %s", mhsa_last_error(), names);
}

START_TEST(loads_the_test_model)
{
    mhsa_llama *m;
    ck_assert_int_eq(load(std_opts(), 0, &m), MHSA_OK);
    const mhsa_llama_config *c = mhsa__llama_config(m);
    ck_assert_int_eq(c->vocab, V);
    ck_assert_int_eq(c->n_layer, L);
    ck_assert_int_eq(c->n_kv_head, KV);
    ck_assert_int_eq(c->rope_dim, DH);   // the default: the head size
    ck_assert_int_eq(c->tied, 1);
    ck_assert_int_eq(mhsa__llama_capacity(m), CTX);
    mhsa__llama_destroy(m);
}
END_TEST

// A Qwen2 file: its row of the table (biases, NEOX rope), in the fp and
// the file modes, which give the same logits (F32 weights: both compute in
// fp32, in other orders).
START_TEST(loads_qwen2)
{
    mhsa_llama *m[2];
    float logits[2][3 * V];
    const int32_t ids[3] = {1, 5, 2};
    write_model(qwen2_opts());
    ck_assert_int_eq(mhsa__llama_load(model_path, 0, &m[0]), MHSA_OK);
    ck_assert_int_eq(mhsa__llama_load_ex(model_path, 0, MHSA__WEIGHTS_FILE,
                                         &m[1]), MHSA_OK);
    unlink(model_path);
    const mhsa_llama_config *c = mhsa__llama_config(m[0]);
    ck_assert_str_eq(c->arch, "qwen2");
    ck_assert_int_eq(c->qkv_bias, 1);
    ck_assert_int_eq(c->rope_interleaved, 0);
    for (int i = 0; i < 2; i++) {
        mhsa_llama_cache *kc;
        ck_assert_int_eq(mhsa__llama_cache_create(m[i], MHSA_F32, &kc),
                         MHSA_OK);
        ck_assert_int_eq(mhsa__llama_forward(m[i], kc, ids, 3, 1,
                                             logits[i]), MHSA_OK);
        mhsa__llama_cache_destroy(kc);
        mhsa__llama_destroy(m[i]);
    }
    for (int i = 0; i < 3 * V; i++)
        ck_assert_msg(fabsf(logits[0][i] - logits[1][i]) <= 1e-4f,
                      "logit %d: fp %g, file mode %g", i,
                      (double)logits[0][i], (double)logits[1][i]);
}
END_TEST

// What a family's row does not have, or has of the wrong size, is refused
// by name.
START_TEST(refuses_what_a_family_lacks)
{
    opts o = qwen2_opts();
    o.drop = "blk.1.attn_v.bias";
    check_refused(o, "blk.1.attn_v.bias");
    o = qwen2_opts();
    o.misshape = "blk.0.attn_k.bias";
    check_refused(o, "blk.0.attn_k.bias");
    o = qwen2_opts();
    o.key_arch = "llama";
    check_refused(o, "qwen2.block_count");
    o = std_opts();
    o.qkv_bias = 1;   // llama has none
    check_refused(o, "blk.0.attn_q.bias");
    o = std_opts();
    o.arch = "phi3";
    check_refused(o, "\"phi3\"");
}
END_TEST

// The logits of ids {1, 5, 2, 7} (4 x V) of the model o describes, in
// file mode or not.
static void logits_of(opts o, int file_mode, float *logits)
{
    const int32_t ids[4] = {1, 5, 2, 7};
    mhsa_llama *m;
    mhsa_llama_cache *kc;
    write_model(o);
    ck_assert_int_eq(mhsa__llama_load_ex(model_path, 0, file_mode
                                         ? MHSA__WEIGHTS_FILE : MHSA_F32,
                                         &m), MHSA_OK);
    unlink(model_path);
    ck_assert_int_eq(mhsa__llama_cache_create(m, MHSA_F32, &kc), MHSA_OK);
    ck_assert_int_eq(mhsa__llama_forward(m, kc, ids, 4, 1, logits), MHSA_OK);
    mhsa__llama_cache_destroy(kc);
    mhsa__llama_destroy(m);
}

// Llama 3's rope_freqs.weight: factors of 1 change nothing, others do, in
// both modes alike; a wrong length, a factor of 0 and the tensor in a
// family without it are refused by name.
START_TEST(rope_freqs)
{
    static float plain[4 * V], f[2][4 * V];
    opts o = std_opts();
    logits_of(o, 0, plain);
    o.rope_freqs = DH / 2;   // all 1 but pair 1's 2.5
    o.rope_freq = 1.0f;
    logits_of(o, 0, f[0]);
    // (A sum, not a running fmax: GCC 12 for AArch64 crashes vectorising
    // that reduction here.)
    double diff = 0.0;
    for (int i = 0; i < 4 * V; i++)
        diff += fabs((double)f[0][i] - plain[i]);
    ck_assert_msg(diff > 1e-5, "a factor of 2.5 changed nothing (%g)",
                  diff);
    ck_assert_msg(memcmp(f[0], plain, V * sizeof(float)) == 0,
                  "position 0 has no rotation, whatever the factors");
    logits_of(o, 1, f[1]);
    for (int i = 0; i < 4 * V; i++)
        ck_assert_msg(fabsf(f[0][i] - f[1][i]) <= 1e-4f, "logit %d: fp %g, "
                      "file mode %g", i, (double)f[0][i], (double)f[1][i]);
    o.rope_freqs = DH / 2 + 1;
    check_refused(o, "rope_freqs.weight");
    o.rope_freqs = DH / 2;
    o.rope_freq = 0.0f;
    check_refused(o, "rope_freqs.weight[0] = 0");
    o = qwen2_opts();
    o.rope_freqs = DH / 2;
    o.rope_freq = 1.0f;
    check_refused(o, "rope_freqs.weight");
}
END_TEST

START_TEST(refuses_what_is_not_a_llama)
{
    opts o = std_opts();
    o.arch = "gpt2";
    check_refused(o, "general.architecture");
    o = std_opts();
    o.no_block_count = 1;
    check_refused(o, "llama.block_count");
    o = std_opts();
    o.drop = "blk.1.ffn_up.weight";
    check_refused(o, "blk.1.ffn_up.weight");
    o = std_opts();
    o.misshape = "blk.0.attn_k.weight";
    check_refused(o, "blk.0.attn_k.weight");
    o = std_opts();
    o.iq2 = "blk.1.ffn_down.weight";
    check_refused(o, "blk.1.ffn_down.weight");
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "iq2_xxs"));
    // A capacity past the context length is the caller's error.
    mhsa_llama *m;
    ck_assert_int_eq(load(std_opts(), CTX + 1, &m), MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_null(m);
}
END_TEST

// The tokenizer of the model file o describes: its status; *t on success.
static mhsa_status load_tokenizer(opts o, mhsa_tokenizer **t)
{
    write_model(o);
    mhsa_gguf_file *f = NULL;
    *t = NULL;
    mhsa_status st = mhsa__gguf_open(model_path, &f);
    ck_assert_msg(st == MHSA_OK, "%s", mhsa_last_error());
    st = mhsa__tok_load(f, t);
    mhsa__gguf_close(f);
    unlink(model_path);
    return st;
}

// A model file whose metadata and tensors disagree: fewer layers in the
// metadata than in the tensors (the rest would be ignored), a tensor no
// llama layer has, a wrong value type, a subnormal epsilon, a string from
// the file with control bytes.
START_TEST(refuses_what_it_would_ignore)
{
    opts o = std_opts();
    o.block_count = 1;   // the file has 2 layers
    check_refused(o, "tensor 'blk.1.attn_norm.weight' is not used");
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "llama.block_count = 1"));
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "expected 11, got 20"));
    // Also read_config, which the CLI calls before it loads.
    write_model(o);
    mhsa_llama_config c;
    ck_assert_int_eq(mhsa__llama_read_config(model_path, &c),
                     MHSA_ERR_FORMAT);
    unlink(model_path);
    o = std_opts();
    o.extra = "blk.0.attn_k.bias";
    check_refused(o, "tensor 'blk.0.attn_k.bias' is not used");
    o = std_opts();
    o.scaling_u32 = 1;
    check_refused(o, "llama.rope.scaling.type is a u32, not a string");
    o = std_opts();
    o.eps = 1.4e-45f;   // the smallest subnormal
    check_refused(o, "llama.attention.layer_norm_rms_epsilon = "
                  "1.40129846e-45");
    o = std_opts();
    o.arch = "lla\x1b]0;pwned\x07ma";
    check_refused(o, "\"lla\\x1b]0;pwned\\x07ma\"");
}
END_TEST

// The tokenizer and the model agree on the vocabulary: as many tokens as
// token_embd has rows, every special token id inside it.
START_TEST(tokenizer_fits_the_model)
{
    mhsa_tokenizer *t;
    opts o = std_opts();
    o.tok_vocab = V;
    ck_assert_int_eq(load_tokenizer(o, &t), MHSA_OK);
    ck_assert_uint_eq(mhsa__tok_vocab_size(t), V);
    mhsa__tok_free(t);
    o.tok_vocab = V + 1;
    ck_assert_int_eq(load_tokenizer(o, &t), MHSA_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(mhsa_last_error(), "tokenizer.ggml.tokens") &&
                  strstr(mhsa_last_error(), "9 tokens") &&
                  strstr(mhsa_last_error(), "token_embd.weight has 8 rows"),
                  "%s", mhsa_last_error());
    o.tok_vocab = V - 1;
    ck_assert_int_eq(load_tokenizer(o, &t), MHSA_ERR_FORMAT);
    static const char *const ids[] = {
        "tokenizer.ggml.padding_token_id", "tokenizer.ggml.cls_token_id",
        "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.mask_token_id",
        "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.bos_token_id",
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        o = std_opts();
        o.tok_vocab = V;
        o.tok_key = ids[i];
        o.tok_val = V - 1;
        ck_assert_int_eq(load_tokenizer(o, &t), MHSA_OK);
        mhsa__tok_free(t);
        o.tok_val = 1000000000;
        ck_assert_int_eq(load_tokenizer(o, &t), MHSA_ERR_FORMAT);
        ck_assert_msg(strstr(mhsa_last_error(), ids[i]) &&
                      strstr(mhsa_last_error(), "1000000000"), "%s",
                      mhsa_last_error());
    }
}
END_TEST

// Metadata that implies a model far bigger than its tensors fails on the
// first tensor that is missing or misshapen, before the model's memory is
// allocated: run in a child whose address space is capped a little above
// what it uses now, where a loader that allocates first runs out of
// memory instead. (Not under ASan or valgrind, whose reservations a cap
// breaks; there the load runs uncapped.)
static void load_capped(opts o, mhsa_status want, const char *names)
{
    write_model(o);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int capped = !under_valgrind();
#if defined(__SANITIZE_ADDRESS__)
        capped = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
        capped = 0;
#endif
#endif
        long pages = 0;
        FILE *fp = fopen("/proc/self/statm", "r");
        if (capped && fp && fscanf(fp, "%ld", &pages) == 1 && pages > 0) {
            rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) +
                         ((rlim_t)256 << 20);
            struct rlimit rl = {cap, cap};
            if (setrlimit(RLIMIT_AS, &rl) != 0)
                _exit(10);
        }
        if (fp)
            fclose(fp);
        mhsa_llama *m = NULL;
        mhsa_status st = mhsa__llama_load(model_path, 0, &m);
        if (st != want || m || !strstr(mhsa_last_error(), names)) {
            fprintf(stderr, "want %s naming %s, got %s: %s\n",
                    mhsa_status_str(want), names, mhsa_status_str(st),
                    mhsa_last_error());
            _exit(1);
        }
        _exit(0);
    }
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    unlink(model_path);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "%s: the child "
                  "failed (status %d; its stderr says why)", names, ws);
}

START_TEST(checks_tensors_before_allocating)
{
    opts o = std_opts();
    o.block_count = 100000;   // 4.9 GB of layers; the file has 2
    load_capped(o, MHSA_ERR_FORMAT, "blk.2.attn_norm.weight");
    o.block_count = 2147483647;
    load_capped(o, MHSA_ERR_FORMAT, "blk.2.attn_norm.weight");
    o = std_opts();
    o.d_ff = 4000000;         // 1.5 GB of MLP; the file's is 256 wide
    load_capped(o, MHSA_ERR_FORMAT, "blk.0.ffn_gate.weight");
}
END_TEST

// A model bigger than the machine's memory is refused before anything is
// allocated, naming the keys, the size they imply and the size there is.
START_TEST(too_big_for_the_machine)
{
    mhsa_llama_config c = {.vocab = 32000, .n_layer = 1000, .d_model = 4096,
                           .n_head = 32, .n_kv_head = 8, .d_ff = 14336,
                           .context = 4096, .rope_dim = 128,
                           .rope_theta = 1e4f, .rms_eps = 1e-5f, .tied = 0};
    // 1000 layers of 2 * 4096 + 3 * 14336 * 4096 floats and the
    // attention's (4096 + 2 * 1024 + 4096) * 4096, 2 * 32000 * 4096 for
    // the embedding and head, the activations: 874.3 GB in fp32.
    ck_assert_int_eq(mhsa__llama_check_memory(&c, 4096, MHSA_F32, "m.gguf",
                                              (uint64_t)64 << 30),
                     MHSA_ERR_NO_MEMORY);
    const char *e = mhsa_last_error();
    ck_assert_msg(strstr(e, "llama.block_count = 1000") &&
                  strstr(e, "llama.feed_forward_length = 14336") &&
                  strstr(e, "needs 874.3 GB") && strstr(e, "68.7 GB"), "%s",
                  e);
    c.n_layer = 2;
    ck_assert_int_eq(mhsa__llama_check_memory(&c, 4096, MHSA_F32, "m.gguf",
                                              (uint64_t)64 << 30), MHSA_OK);
    // Sizes that overflow 64 bits are refused too.
    c.n_layer = 2147483647;
    c.d_ff = 2147483647;
    c.d_model = 2147483647;
    ck_assert_int_eq(mhsa__llama_check_memory(&c, 4096, MHSA_F32, "m.gguf",
                                              (uint64_t)64 << 30),
                     MHSA_ERR_NO_MEMORY);
}
END_TEST

START_TEST(forward_errors_leave_the_cache)
{
    mhsa_llama *m;
    ck_assert_int_eq(load(std_opts(), 4, &m), MHSA_OK);
    mhsa_llama_cache *c;
    ck_assert_int_eq(mhsa__llama_cache_create(m, MHSA_F32, &c), MHSA_OK);
    float logits[5 * V];
    int32_t tok[5] = {1, 2, 3, 4, 5};
    ck_assert_int_eq(mhsa__llama_forward(m, c, tok, 3, 1, logits), MHSA_OK);
    ck_assert_int_eq(mhsa__llama_cache_len(c), 3);
    ck_assert_int_eq(mhsa__llama_forward(m, c, tok, 0, 0, logits),
                     MHSA_ERR_INVALID_ARG);
    // (one token: two would not fit, which is checked first)
    int32_t bad = V;
    ck_assert_int_eq(mhsa__llama_forward(m, c, &bad, 1, 0, logits),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "tokens[0] = 8"));
    bad = -1;
    ck_assert_int_eq(mhsa__llama_forward(m, c, &bad, 1, 0, logits),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__llama_cache_len(c), 3);
    // 3 cached + 2 new > capacity 4
    ck_assert_int_eq(mhsa__llama_forward(m, c, tok, 2, 0, logits),
                     MHSA_ERR_SHAPE);
    ck_assert_int_eq(mhsa__llama_cache_len(c), 3);
    // The cache still works: the one place left, then full.
    ck_assert_int_eq(mhsa__llama_forward(m, c, tok + 3, 1, 0, logits),
                     MHSA_OK);
    ck_assert_int_eq(mhsa__llama_cache_len(c), 4);
    ck_assert(all_finite(logits, V));
    ck_assert_int_eq(mhsa__llama_forward(m, c, tok, 1, 0, logits),
                     MHSA_ERR_SHAPE);
    ck_assert_int_eq(mhsa__llama_cache_len(c), 4);
    mhsa__llama_cache_destroy(c);
    mhsa__llama_destroy(m);
}
END_TEST

// A prefill and decoding steps (the one-row MLP and the block's one-token
// step, each in one parallel region) give the same logits bit for bit on
// 1, 2 and 3 threads, in each cache type.
START_TEST(decode_same_bits_on_1_2_3_threads)
{
    enum { P = 40, S = 3, WV = 64 };
    static const mhsa_dtype kv[] = {MHSA_F32, MHSA_F16};
    opts o = std_opts();
    o.dm = &wide_dims;
    int32_t tok[P + S];
    for (int i = 0; i < P + S; i++)
        tok[i] = (i * 7 + 3) % WV;
    int saved = omp_get_max_threads();
    for (size_t d = 0; d < sizeof kv / sizeof kv[0]; d++) {
        static float logits[3][S + 1][WV];
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(t + 1);
            mhsa_llama *m;
            ck_assert_int_eq(load(o, 0, &m), MHSA_OK);
            mhsa_llama_cache *c;
            ck_assert_int_eq(mhsa__llama_cache_create(m, kv[d], &c),
                             MHSA_OK);
            ck_assert_int_eq(mhsa__llama_forward(m, c, tok, P, 0,
                                                 logits[t][0]), MHSA_OK);
            for (int s = 0; s < S; s++)
                ck_assert_int_eq(mhsa__llama_forward(m, c, tok + P + s, 1, 0,
                                                     logits[t][s + 1]),
                                 MHSA_OK);
            mhsa__llama_cache_destroy(c);
            mhsa__llama_destroy(m);
        }
        ck_assert(all_finite(&logits[0][0][0], (S + 1) * WV));
        for (int t = 1; t < 3; t++)
            ck_assert_msg(!memcmp(logits[0], logits[t], sizeof logits[0]),
                          "cache dtype %d: logits differ on 1 and %d threads",
                          (int)kv[d], t + 1);
    }
    omp_set_num_threads(saved);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llama");
    TCase *tc = tcase_create("llama");
    tcase_add_test(tc, loads_the_test_model);
    tcase_add_test(tc, refuses_what_is_not_a_llama);
    tcase_add_test(tc, loads_qwen2);
    tcase_add_test(tc, refuses_what_a_family_lacks);
    tcase_add_test(tc, rope_freqs);
    tcase_add_test(tc, refuses_what_it_would_ignore);
    tcase_add_test(tc, tokenizer_fits_the_model);
    tcase_add_test(tc, checks_tensors_before_allocating);
    tcase_add_test(tc, too_big_for_the_machine);
    tcase_add_test(tc, forward_errors_leave_the_cache);
    tcase_add_test(tc, decode_same_bits_on_1_2_3_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
