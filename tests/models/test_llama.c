// test_llama.c — the Llama model's refusals (src/llama): files that are
// not llama models or lack or misshape what one needs, each
// MHSA_ERR_FORMAT naming the key or tensor, and mhsa__llama_forward's
// argument errors, which leave the cache as it was. The files are small
// F32 models written with tests/gguf_writer.c. (The model's numbers are
// checked against PyTorch by tests/models/llama_ref.py.) A wider model's
// decoding gives the same bits on 1, 2 and 3 threads.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/gguf.h"
#include "gguf_writer.h"
#include "llama/llama.h"
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
} opts;

static opts std_opts(void)
{
    return (opts){NULL, "llama", 0, NULL, NULL, NULL};
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
    static char names[L][N_MATS + 2][48];
    gw_tensor t[3 + L * (N_MATS + 2)];
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
    }
    gw w = {0};
    gw_header(&w, 3, nt, 0);
    uint64_t nkv = 0;
    gw_key(&w, "general.architecture", MHSA_GGUF_STRING);
    gw_str(&w, o.arch);
    nkv++;
    if (!o.no_block_count) {
        key_u32(&w, "llama.block_count", L);
        nkv++;
    }
    key_u32(&w, "llama.context_length", (uint32_t)dm.CTX);
    key_u32(&w, "llama.embedding_length", (uint32_t)D);
    key_u32(&w, "llama.feed_forward_length", (uint32_t)F);
    key_u32(&w, "llama.attention.head_count", (uint32_t)dm.H);
    key_u32(&w, "llama.attention.head_count_kv", (uint32_t)KV);
    gw_key(&w, "llama.attention.layer_norm_rms_epsilon", MHSA_GGUF_FLOAT32);
    gw_f32(&w, 1e-5f);
    nkv += 6;
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
    tcase_add_test(tc, forward_errors_leave_the_cache);
    tcase_add_test(tc, decode_same_bits_on_1_2_3_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
