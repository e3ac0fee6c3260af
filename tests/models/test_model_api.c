// test_model_api.c — the public model API (include/mhsa_model.h) on the
// small Qwen2 and Llama 3 files of tests/family_files.c: loading and
// metadata, tokenize and detokenize (against the internal tokenizer, and
// back to the text), evaluation against the internal runner's logits bit
// for bit, sequences interleaved and on two threads against each alone,
// the sampler (the stream of mhsa-generate's sampler of before, the same
// tokens for a seed, each option doing what it says), and every refusal
// with its status and a message naming the call.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "family_files.h"
#include "mhsa_model.h"
#include "models/gguf/gguf.h"
#include "models/llama/llama.h"
#include "models/tokenizer/tokenizer.h"
#include "nn/sample.h"
#include "util.h"

enum { MAX_V = 512, T = FAMILY_N_IDS };

static const char tmpl[] =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "<|im_end|>\n{% endfor %}";

// Family f's file (F32 matrices), with the template or none.
static const char *path_of(family f, int with_template)
{
    const char *p = family_temp_file(f, 0, with_template ? tmpl : NULL);
    ck_assert_ptr_nonnull(p);
    return p;
}

static mhsa_model *load(family f, const mhsa_model_params *p)
{
    mhsa_model *m = NULL;
    mhsa_status st = mhsa_model_load(path_of(f, 0), p, &m);
    ck_assert_msg(st == MHSA_OK, "%s", mhsa_last_error());
    return m;
}

// The last error names the call and says `what`.
static void says(const char *fn, const char *what)
{
    const char *e = mhsa_last_error();
    ck_assert_msg(strstr(e, fn) && strstr(e, what),
                  "wanted \"%s\" and \"%s\" in: %s", fn, what, e);
}

// ---- loading and metadata ---------------------------------------------------

START_TEST(load_and_metadata)
{
    for (int f = 0; f < N_FAMILIES; f++) {
        mhsa_model *m = load((family)f, NULL);
        ck_assert_str_eq(mhsa_model_arch(m),
                         f == FAMILY_QWEN2 ? "qwen2" : "llama");
        ck_assert_int_eq(mhsa_model_n_vocab(m), family_vocab_size());
        ck_assert_int_eq(mhsa_model_n_ctx(m), FAM_CTX);
        ck_assert_int_eq(mhsa_model_n_ctx_train(m), FAM_CTX);
        ck_assert_ptr_null(mhsa_model_chat_template(m));
        ck_assert_uint_gt(mhsa_model_weight_bytes(m), 0);
        ck_assert_str_eq(mhsa_model_weight_types(m), "f32");
        // BOS, EOS and the end of generation as the internal tokenizer
        // reads them.
        mhsa_gguf_file *g;
        mhsa_tokenizer *tok;
        ck_assert_int_eq(mhsa__gguf_open(path_of((family)f, 0), &g), MHSA_OK);
        ck_assert_int_eq(mhsa__tok_load(g, &tok), MHSA_OK);
        mhsa__gguf_close(g);
        ck_assert_int_ge(mhsa_model_bos(m), 0);
        ck_assert_int_eq(mhsa_model_bos(m), mhsa__tok_bos(tok));
        ck_assert_int_eq(mhsa_model_eos(m), mhsa__tok_eos(tok));
        ck_assert_int_eq(mhsa_model_adds_bos(m), mhsa__tok_adds_bos(tok));
        ck_assert_int_eq(mhsa_model_adds_bos(m), f == FAMILY_LLAMA3);
        ck_assert_int_eq(mhsa_model_adds_eos(m), 0);
        for (int32_t t = 0; t < mhsa_model_n_vocab(m); t++)
            ck_assert_int_eq(mhsa_model_is_eog(m, t),
                             mhsa__tok_is_eog(tok, t));
        ck_assert(mhsa_model_is_eog(m, mhsa_model_eos(m)));
        ck_assert(!mhsa_model_is_eog(m, -1));
        ck_assert(!mhsa_model_is_eog(m, mhsa_model_n_vocab(m)));
        mhsa__tok_free(tok);
        mhsa_model_free(m);
    }
    // The chat template, and the other weights and contexts.
    mhsa_model *m;
    ck_assert_int_eq(mhsa_model_load(path_of(FAMILY_QWEN2, 1), NULL, &m),
                     MHSA_OK);
    ck_assert_str_eq(mhsa_model_chat_template(m), tmpl);
    mhsa_model_free(m);
    mhsa_model_params p = {.weights = MHSA_WEIGHTS_BF16, .context = 16};
    m = load(FAMILY_LLAMA3, &p);
    ck_assert_int_eq(mhsa_model_n_ctx(m), 16);
    ck_assert_int_eq(mhsa_model_n_ctx_train(m), FAM_CTX);
    ck_assert_str_eq(mhsa_model_weight_types(m), "bf16");
    mhsa_model_free(m);
    p = (mhsa_model_params){.vocab_only = 1};
    m = load(FAMILY_QWEN2, &p);
    ck_assert_int_eq(mhsa_model_n_vocab(m), family_vocab_size());
    ck_assert_int_eq(mhsa_model_n_ctx(m), FAM_CTX);
    ck_assert_uint_eq(mhsa_model_weight_bytes(m), 0);
    ck_assert_str_eq(mhsa_model_weight_types(m), "");
    mhsa_seq *s = NULL;
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &s), MHSA_ERR_STATE);
    says("mhsa_seq_create", "vocab_only");
    ck_assert_ptr_null(s);
    mhsa_model_free(m);
}
END_TEST

// ---- text ---------------------------------------------------------------------

START_TEST(tokenize_and_detokenize)
{
    for (int f = 0; f < N_FAMILIES; f++) {
        mhsa_model *m = load((family)f, NULL);
        mhsa_gguf_file *g;
        mhsa_tokenizer *tok;
        ck_assert_int_eq(mhsa__gguf_open(path_of((family)f, 0), &g), MHSA_OK);
        ck_assert_int_eq(mhsa__tok_load(g, &tok), MHSA_OK);
        mhsa__gguf_close(g);
        static const unsigned flags[] = {
            0, MHSA_TOKENIZE_ADD_SPECIAL, MHSA_TOKENIZE_PARSE_SPECIAL,
            MHSA_TOKENIZE_ADD_SPECIAL | MHSA_TOKENIZE_PARSE_SPECIAL};
        static const unsigned tflags[] = {
            0, MHSA_TOK_ADD_SPECIAL, MHSA_TOK_PARSE_SPECIAL,
            MHSA_TOK_ADD_SPECIAL | MHSA_TOK_PARSE_SPECIAL};
        for (size_t i = 0; i < family_n_texts; i++)
            for (int k = 0; k < 4; k++) {
                const char *text = family_texts[i];
                size_t len = strlen(text), n = 0, want_n = 0;
                static int32_t ids[1024], want[1024];
                // The size alone, then too small by one, then exact.
                ck_assert_int_eq(mhsa__tok_encode(tok, text, len, tflags[k],
                                                  want, 1024, &want_n),
                                 MHSA_OK);
                mhsa_status st = mhsa_tokenize(m, text, len, flags[k], NULL,
                                               0, &n);
                ck_assert_int_eq(st, want_n ? MHSA_ERR_SHAPE : MHSA_OK);
                ck_assert_uint_eq(n, want_n);
                for (size_t j = 0; j < 1024; j++)
                    ids[j] = -7;
                if (want_n) {
                    n = 0;
                    ck_assert_int_eq(mhsa_tokenize(m, text, len, flags[k],
                                                   ids, want_n - 1, &n),
                                     MHSA_ERR_SHAPE);
                    says("mhsa_tokenize", "room for");
                    ck_assert_uint_eq(n, want_n);
                    for (size_t j = 0; j < 1024; j++)
                        ck_assert_int_eq(ids[j], -7);
                }
                ck_assert_int_eq(mhsa_tokenize(m, text, len, flags[k], ids,
                                               want_n, &n), MHSA_OK);
                ck_assert_uint_eq(n, want_n);
                ck_assert(!memcmp(ids, want, n * sizeof(int32_t)));
                ck_assert_int_eq(ids[n], -7);
                // Back to text as the internal decoder gives it; without
                // special tokens parsed (BOS gives nothing), the text
                // itself.
                static char buf[4096], ref[4096];
                size_t got = 0, ref_len = 0;
                ck_assert_int_eq(mhsa__tok_decode(tok, ids, n, 0, ref,
                                                  sizeof ref, &ref_len),
                                 MHSA_OK);
                if (!(flags[k] & MHSA_TOKENIZE_PARSE_SPECIAL)) {
                    ck_assert_uint_eq(ref_len, len);
                    ck_assert(!memcmp(ref, text, len));
                }
                ck_assert_int_eq(mhsa_detokenize(m, ids, n, 0, NULL, 0,
                                                 &got), MHSA_ERR_SHAPE);
                ck_assert_uint_eq(got, ref_len);
                memset(buf, 'x', sizeof buf);
                ck_assert_int_eq(mhsa_detokenize(m, ids, n, 0, buf, ref_len,
                                                 &got), MHSA_ERR_SHAPE);
                says("mhsa_detokenize", "NUL");
                ck_assert_int_eq(buf[0], 'x');
                ck_assert_int_eq(mhsa_detokenize(m, ids, n, 0, buf,
                                                 ref_len + 1, &got),
                                 MHSA_OK);
                ck_assert_uint_eq(got, ref_len);
                ck_assert(!memcmp(buf, ref, ref_len) && buf[ref_len] == 0);
                ck_assert_int_eq(buf[ref_len + 1], 'x');
            }
        // Special tokens: parsed, one token, and its text only with
        // MHSA_DETOKENIZE_SPECIAL.
        const char *sp = f == FAMILY_QWEN2 ? "<|im_end|>" : "<|end_of_text|>";
        int32_t ids[64];
        size_t n = 0, got = 0;
        ck_assert_int_eq(mhsa_tokenize(m, sp, strlen(sp),
                                       MHSA_TOKENIZE_PARSE_SPECIAL, ids, 64,
                                       &n), MHSA_OK);
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(ids[0], mhsa_model_eos(m));
        char buf[64];
        ck_assert_int_eq(mhsa_detokenize(m, ids, 1, 0, buf, sizeof buf,
                                         &got), MHSA_OK);
        ck_assert_uint_eq(got, 0);
        ck_assert_str_eq(buf, "");
        ck_assert_int_eq(mhsa_detokenize(m, ids, 1, MHSA_DETOKENIZE_SPECIAL,
                                         buf, sizeof buf, &got), MHSA_OK);
        ck_assert_str_eq(buf, sp);
        ck_assert_int_eq(mhsa_tokenize(m, sp, strlen(sp), 0, ids, 64, &n),
                         MHSA_OK);
        ck_assert_uint_gt(n, 1);
        // With BOS where the model adds it.
        ck_assert_int_eq(mhsa_tokenize(m, "", 0, MHSA_TOKENIZE_ADD_SPECIAL,
                                       ids, 64, &n), MHSA_OK);
        ck_assert_uint_eq(n, (size_t)mhsa_model_adds_bos(m));
        mhsa__tok_free(tok);
        mhsa_model_free(m);
    }
}
END_TEST

// ---- evaluation -----------------------------------------------------------

static const int internal_dtype[] = {
    [MHSA_WEIGHTS_AS_STORED] = MHSA__WEIGHTS_FILE,
    [MHSA_WEIGHTS_F32] = MHSA_F32,
    [MHSA_WEIGHTS_F16] = MHSA_F16,
    [MHSA_WEIGHTS_BF16] = MHSA_BF16,
};

// mhsa_seq_eval gives the internal forward's logits, bit for bit: every
// row (ALL) and the last (LAST), each weight form and KV type.
START_TEST(eval_equals_the_runner)
{
    static float want[T * MAX_V], got[T * MAX_V], last[MAX_V];
    for (int f = 0; f < N_FAMILIES; f++)
        for (int w = MHSA_WEIGHTS_AS_STORED; w <= MHSA_WEIGHTS_BF16; w++) {
            mhsa_dtype kv = w == MHSA_WEIGHTS_F16 ? MHSA_F16 : MHSA_F32;
            mhsa_llama *lm;
            mhsa_llama_cache *lc;
            ck_assert_int_eq(mhsa__llama_load_ex(path_of((family)f, 0), 0,
                                                 internal_dtype[w], &lm),
                             MHSA_OK);
            ck_assert_int_eq(mhsa__llama_cache_create(lm, kv, &lc), MHSA_OK);
            ck_assert_int_eq(mhsa__llama_forward(lm, lc, family_ids, T, 1,
                                                 want), MHSA_OK);
            mhsa_model_params p = {.weights = w};
            mhsa_model *m = load((family)f, &p);
            size_t V = (size_t)mhsa_model_n_vocab(m);
            ck_assert_uint_le(V, MAX_V);
            mhsa_seq *s;
            ck_assert_int_eq(mhsa_seq_create(m, kv, &s), MHSA_OK);
            ck_assert_int_eq(mhsa_seq_eval(s, family_ids, T, MHSA_LOGITS_ALL,
                                           got, T * V), MHSA_OK);
            ck_assert_int_eq(mhsa_seq_len(s), T);
            ck_assert_msg(!memcmp(got, want, T * V * sizeof(float)),
                          "%s weights %d: logits differ from the runner's",
                          family_name((family)f), w);
            mhsa_seq_reset(s);
            ck_assert_int_eq(mhsa_seq_len(s), 0);
            ck_assert_int_eq(mhsa_seq_eval(s, family_ids, T,
                                           MHSA_LOGITS_LAST, last, V),
                             MHSA_OK);
            ck_assert(!memcmp(last, want + (T - 1) * V, V * sizeof(float)));
            mhsa_seq_destroy(s);
            mhsa_model_free(m);
            mhsa__llama_cache_destroy(lc);
            mhsa__llama_destroy(lm);
        }
}
END_TEST

// Two sequences' tokens, and the logits (LAST) after each of their steps:
// prefill 4, then one token at a time.
enum { STEPS = 6 };
static const int32_t seq_a[] = {5, 17, 200, 33, 7, 9, 100, 3, 250};
static const int32_t seq_b[] = {300, 2, 2, 81, 64, 1, 12, 13, 90};

static void step(mhsa_seq *s, const int32_t *toks, int i, float *out,
                 size_t V)
{
    const int32_t *t = i == 0 ? toks : toks + 3 + i;
    size_t n = i == 0 ? 4 : 1;
    ck_assert_int_eq(mhsa_seq_eval(s, t, n, MHSA_LOGITS_LAST, out, V),
                     MHSA_OK);
}

static void run_alone(mhsa_model *m, const int32_t *toks, float *out)
{
    size_t V = (size_t)mhsa_model_n_vocab(m);
    mhsa_seq *s;
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &s), MHSA_OK);
    for (int i = 0; i < STEPS; i++)
        step(s, toks, i, out + (size_t)i * V, V);
    mhsa_seq_destroy(s);
}

START_TEST(sequences_interleaved_equal_alone)
{
    static float a[STEPS * MAX_V], b[STEPS * MAX_V];
    static float ai[STEPS * MAX_V], bi[STEPS * MAX_V];
    mhsa_model_params p = {.context = 16};
    mhsa_model *m = load(FAMILY_LLAMA3, &p);
    size_t V = (size_t)mhsa_model_n_vocab(m);
    run_alone(m, seq_a, a);
    run_alone(m, seq_b, b);
    mhsa_seq *sa, *sb;
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &sa), MHSA_OK);
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &sb), MHSA_OK);
    for (int i = 0; i < STEPS; i++) {
        step(sb, seq_b, i, bi + (size_t)i * V, V);
        step(sa, seq_a, i, ai + (size_t)i * V, V);
    }
    ck_assert(!memcmp(a, ai, STEPS * V * sizeof(float)));
    ck_assert(!memcmp(b, bi, STEPS * V * sizeof(float)));
    ck_assert(memcmp(a, b, V * sizeof(float)) != 0);
    // A reset sequence is a new one.
    mhsa_seq_reset(sa);
    for (int i = 0; i < STEPS; i++)
        step(sa, seq_a, i, ai + (size_t)i * V, V);
    ck_assert(!memcmp(a, ai, STEPS * V * sizeof(float)));
    mhsa_seq_destroy(sa);
    mhsa_seq_destroy(sb);
    mhsa_model_free(m);
}
END_TEST

typedef struct thread_job {
    mhsa_model *m;
    const int32_t *toks;
    float *out;
} thread_job;

static void *thread_main(void *arg)
{
    thread_job *j = arg;
    size_t V = (size_t)mhsa_model_n_vocab(j->m);
    mhsa_seq *s;
    if (mhsa_seq_create(j->m, MHSA_F32, &s) != MHSA_OK)
        return NULL;
    for (int rep = 0; rep < 20; rep++) {
        mhsa_seq_reset(s);
        for (int i = 0; i < STEPS; i++) {
            const int32_t *t = i == 0 ? j->toks : j->toks + 3 + i;
            if (mhsa_seq_eval(s, t, i == 0 ? 4 : 1, MHSA_LOGITS_LAST,
                              j->out + (size_t)i * V, V) != MHSA_OK) {
                mhsa_seq_destroy(s);
                return NULL;
            }
        }
    }
    mhsa_seq_destroy(s);
    return j;
}

// One model, two threads, a sequence each, at once: each thread's logits
// are those of its sequence alone (the model orders the evaluations).
START_TEST(two_threads_share_a_model)
{
    static float a[STEPS * MAX_V], b[STEPS * MAX_V];
    static float ta[STEPS * MAX_V], tb[STEPS * MAX_V];
    mhsa_model_params p = {.context = 16};
    mhsa_model *m = load(FAMILY_QWEN2, &p);
    size_t V = (size_t)mhsa_model_n_vocab(m);
    run_alone(m, seq_a, a);
    run_alone(m, seq_b, b);
    thread_job ja = {m, seq_a, ta}, jb = {m, seq_b, tb};
    pthread_t x, y;
    ck_assert_int_eq(pthread_create(&x, NULL, thread_main, &ja), 0);
    ck_assert_int_eq(pthread_create(&y, NULL, thread_main, &jb), 0);
    void *rx, *ry;
    pthread_join(x, &rx);
    pthread_join(y, &ry);
    ck_assert(rx == &ja && ry == &jb);
    ck_assert(!memcmp(a, ta, STEPS * V * sizeof(float)));
    ck_assert(!memcmp(b, tb, STEPS * V * sizeof(float)));
    mhsa_model_free(m);
}
END_TEST

// ---- the sampler ---------------------------------------------------------------

static void random_logits(float *z, int V, uint64_t seed)
{
    rng r = {seed};
    for (int j = 0; j < V; j++)
        z[j] = (float)rng_uniform(&r, -4.0f, 4.0f);
}

static mhsa_sampler *sampler(const mhsa_sampler_params *p, int V)
{
    mhsa_sampler *s = NULL;
    mhsa_status st = mhsa_sampler_create(p, V, &s);
    ck_assert_msg(st == MHSA_OK, "%s", mhsa_last_error());
    return s;
}

static int argmax(const float *z, int V)
{
    int best = 0;
    for (int j = 1; j < V; j++)
        if (z[j] > z[best])
            best = j;
    return best;
}

START_TEST(sampler_stream_and_seed)
{
    enum { V = 300, N = 200 };
    static float z[V];
    static int order[V];
    random_logits(z, V, 5);
    // The stream of mhsa-generate's sampler of before (temperature and
    // top-k, splitmix64 from the seed): token for token.
    static const int ks[] = {0, 1, 7, 40, V};
    static const float temps[] = {0.3f, 0.8f, 1.0f, 3.0f};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 4; b++) {
            mhsa_sampler_params p = {.temperature = temps[b], .top_k = ks[a],
                                     .seed = 1234 + (uint64_t)a};
            mhsa_sampler *s = sampler(&p, V);
            uint64_t rng = p.seed;
            for (int i = 0; i < N; i++) {
                int32_t t;
                ck_assert_int_eq(mhsa_sampler_sample(s, z, V, NULL, 0, &t),
                                 MHSA_OK);
                ck_assert_int_eq(t, mhsa__sample_token(z, V, temps[b],
                                                       ks[a], 1.0f, 0.0f,
                                                       &rng, order));
            }
            mhsa_sampler_destroy(s);
        }
    // The same seed, the same tokens; reset starts the stream again; other
    // seeds give other tokens.
    mhsa_sampler_params p = {.temperature = 1.0f, .top_p = 0.9f,
                             .min_p = 0.01f, .repeat_penalty = 1.3f,
                             .repeat_last_n = 8, .seed = 42};
    mhsa_sampler *s1 = sampler(&p, V), *s2 = sampler(&p, V);
    p.seed = 43;
    mhsa_sampler *s3 = sampler(&p, V);
    static int32_t t1[N], t2[N], t3[N];
    int diff = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(mhsa_sampler_sample(s1, z, V, t1, (size_t)i,
                                             &t1[i]), MHSA_OK);
        ck_assert_int_eq(mhsa_sampler_sample(s2, z, V, t2, (size_t)i,
                                             &t2[i]), MHSA_OK);
        ck_assert_int_eq(mhsa_sampler_sample(s3, z, V, t3, (size_t)i,
                                             &t3[i]), MHSA_OK);
        ck_assert_int_eq(t1[i], t2[i]);
        diff += t1[i] != t3[i];
    }
    ck_assert_int_gt(diff, N / 4);
    mhsa_sampler_reset(s1);
    for (int i = 0; i < N; i++) {
        int32_t t;
        ck_assert_int_eq(mhsa_sampler_sample(s1, z, V, t1, (size_t)i, &t),
                         MHSA_OK);
        ck_assert_int_eq(t, t1[i]);
    }
    mhsa_sampler_destroy(s1);
    mhsa_sampler_destroy(s2);
    mhsa_sampler_destroy(s3);
}
END_TEST

START_TEST(sampler_options)
{
    enum { V = 64, N = 400 };
    static float z[V];
    random_logits(z, V, 9);
    int best = argmax(z, V);
    float saved[V];
    memcpy(saved, z, sizeof z);
    int32_t t;
    // Greedy (the default), top_k 1, a tiny nucleus, min_p 1: the argmax.
    mhsa_sampler_params ps[] = {
        {0}, {.temperature = 2.0f, .top_k = 1},
        {.temperature = 2.0f, .top_p = 1e-6f},
        {.temperature = 2.0f, .min_p = 1.0f}};
    for (size_t c = 0; c < sizeof ps / sizeof ps[0]; c++) {
        ps[c].seed = 3;
        mhsa_sampler *s = sampler(&ps[c], V);
        for (int i = 0; i < 50; i++) {
            ck_assert_int_eq(mhsa_sampler_sample(s, z, V, NULL, 0, &t),
                             MHSA_OK);
            ck_assert_int_eq(t, best);
        }
        mhsa_sampler_destroy(s);
    }
    // top_p and min_p keep the best candidates only: every drawn token
    // is inside the set each defines.
    int by_rank[V];
    for (int j = 0; j < V; j++)
        by_rank[j] = j;
    for (int i = 0; i < V; i++)   // sort ids by logit, best first
        for (int j = i + 1; j < V; j++)
            if (z[by_rank[j]] > z[by_rank[i]]) {
                int x = by_rank[i];
                by_rank[i] = by_rank[j];
                by_rank[j] = x;
            }
    double w[V], sum = 0.0;
    for (int i = 0; i < V; i++)
        sum += w[i] = exp((double)z[by_rank[i]] - (double)z[by_rank[0]]);
    int nucleus = 0;
    for (double c = 0.0; c < 0.5 * sum; nucleus++)
        c += w[nucleus];
    int above = 0;
    while (above < V && w[above] >= 0.2)
        above++;
    mhsa_sampler_params pp = {.temperature = 1.0f, .top_p = 0.5f, .seed = 1};
    mhsa_sampler_params pm = {.temperature = 1.0f, .min_p = 0.2f, .seed = 1};
    mhsa_sampler *sp = sampler(&pp, V), *sm = sampler(&pm, V);
    int seen_p[V] = {0}, seen_m[V] = {0};
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(mhsa_sampler_sample(sp, z, V, NULL, 0, &t), MHSA_OK);
        seen_p[t] = 1;
        ck_assert_int_eq(mhsa_sampler_sample(sm, z, V, NULL, 0, &t), MHSA_OK);
        seen_m[t] = 1;
    }
    int np = 0, nm = 0;
    for (int i = 0; i < V; i++) {
        np += seen_p[by_rank[i]];
        nm += seen_m[by_rank[i]];
        ck_assert_msg(!seen_p[by_rank[i]] || i < nucleus, "top_p: rank %d "
                      "drawn, the nucleus is %d", i, nucleus);
        ck_assert_msg(!seen_m[by_rank[i]] || i < above, "min_p: rank %d "
                      "drawn, %d are above", i, above);
    }
    ck_assert_int_gt(np, 1);
    ck_assert_int_gt(nm, 1);
    mhsa_sampler_destroy(sp);
    mhsa_sampler_destroy(sm);
    // The repetition penalty: the argmax in the recent history loses to
    // the second best; out of the window (repeat_last_n) it wins again.
    int second = by_rank[1];
    mhsa_sampler_params pr = {.repeat_penalty = 1e6f, .repeat_last_n = 2};
    mhsa_sampler *sr = sampler(&pr, V);
    int32_t worst = by_rank[V - 1], hist[3] = {best, worst, worst};
    ck_assert_int_eq(mhsa_sampler_sample(sr, z, V, hist, 1, &t), MHSA_OK);
    ck_assert_int_eq(t, second);
    ck_assert_int_eq(mhsa_sampler_sample(sr, z, V, hist, 3, &t), MHSA_OK);
    ck_assert_int_eq(t, best);
    mhsa_sampler_destroy(sr);
    ck_assert(!memcmp(z, saved, sizeof z));   // logits not modified
}
END_TEST

// ---- refusals ------------------------------------------------------------------

START_TEST(errors)
{
    mhsa_model *m = NULL;
    mhsa_model_params p = {0};
    // Loading.
    ck_assert_int_eq(mhsa_model_load(NULL, NULL, &m), MHSA_ERR_INVALID_ARG);
    says("mhsa_model_load", "path");
    ck_assert_int_eq(mhsa_model_load(path_of(FAMILY_QWEN2, 0), NULL, NULL),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_model_load", "out");
    ck_assert_int_eq(mhsa_model_load("/nonexistent/model.gguf", NULL, &m),
                     MHSA_ERR_IO);
    ck_assert_ptr_null(m);
    char junk[512];
    snprintf(junk, sizeof junk, "%s.junk", path_of(FAMILY_QWEN2, 0));
    FILE *fp = fopen(junk, "wb");
    ck_assert_ptr_nonnull(fp);
    fputs("this is not a GGUF file at all, not even close", fp);
    fclose(fp);
    ck_assert_int_eq(mhsa_model_load(junk, NULL, &m), MHSA_ERR_FORMAT);
    unlink(junk);
    ck_assert_ptr_null(m);
    p.weights = 9;
    ck_assert_int_eq(mhsa_model_load(path_of(FAMILY_QWEN2, 0), &p, &m),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_model_load", "weights = 9");
    p = (mhsa_model_params){.context = FAM_CTX + 1};
    ck_assert_int_eq(mhsa_model_load(path_of(FAMILY_QWEN2, 0), &p, &m),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_model_load", "context = 65");
    p = (mhsa_model_params){.context = -1};
    ck_assert_int_eq(mhsa_model_load(path_of(FAMILY_QWEN2, 0), &p, &m),
                     MHSA_ERR_INVALID_ARG);
    p = (mhsa_model_params){.vocab_only = 2};
    ck_assert_int_eq(mhsa_model_load(path_of(FAMILY_QWEN2, 0), &p, &m),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_null(m);
    // NULL objects: no-ops and neutral answers.
    mhsa_model_free(NULL);
    mhsa_seq_destroy(NULL);
    mhsa_seq_reset(NULL);
    mhsa_sampler_destroy(NULL);
    mhsa_sampler_reset(NULL);
    ck_assert_ptr_null(mhsa_model_arch(NULL));
    ck_assert_int_eq(mhsa_model_n_vocab(NULL), 0);
    ck_assert_int_eq(mhsa_model_n_ctx(NULL), 0);
    ck_assert_int_eq(mhsa_model_bos(NULL), -1);
    ck_assert_int_eq(mhsa_model_eos(NULL), -1);
    ck_assert_int_eq(mhsa_model_is_eog(NULL, 0), 0);
    ck_assert_ptr_null(mhsa_model_chat_template(NULL));
    ck_assert_int_eq(mhsa_seq_len(NULL), 0);

    p = (mhsa_model_params){.context = 8};
    m = load(FAMILY_QWEN2, &p);
    int V = mhsa_model_n_vocab(m);
    int32_t ids[16];
    size_t n = 99;
    char buf[64];
    // Tokenize.
    ck_assert_int_eq(mhsa_tokenize(NULL, "a", 1, 0, ids, 16, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_tokenize", "m is NULL");
    ck_assert_int_eq(mhsa_tokenize(m, NULL, 1, 0, ids, 16, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_tokenize", "text is NULL");
    ck_assert_int_eq(mhsa_tokenize(m, "a", 1, 0, ids, 16, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_tokenize(m, "a", 1, 0, NULL, 16, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_tokenize", "ids is NULL with cap > 0");
    ck_assert_int_eq(mhsa_tokenize(m, "a", 1, 8, ids, 16, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_tokenize", "flags");
    ck_assert_int_eq(mhsa_tokenize(m, "ok \xc0\xaf", 5, 0, ids, 16, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_tokenize", "offset 3 (0xc0)");
    ck_assert_uint_eq(n, 99);
    // Detokenize.
    int32_t one = 5;
    ck_assert_int_eq(mhsa_detokenize(NULL, &one, 1, 0, buf, 64, &n),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_detokenize(m, &one, 1, 0, buf, 64, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_detokenize(m, NULL, 1, 0, buf, 64, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_detokenize", "ids is NULL with n > 0");
    ck_assert_int_eq(mhsa_detokenize(m, &one, 1, 0, NULL, 64, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_detokenize", "buf is NULL with cap > 0");
    ck_assert_int_eq(mhsa_detokenize(m, &one, 1, 4, buf, 64, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_detokenize", "flags");
    int32_t bad[2] = {5, V};
    ck_assert_int_eq(mhsa_detokenize(m, bad, 2, 0, buf, 64, &n),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_detokenize", "ids[1]");
    bad[1] = -1;
    ck_assert_int_eq(mhsa_detokenize(m, bad, 2, 0, buf, 64, &n),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_uint_eq(n, 99);
    // Sequences.
    mhsa_seq *s = NULL;
    ck_assert_int_eq(mhsa_seq_create(NULL, MHSA_F32, &s),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_seq_create(m, (mhsa_dtype)7, &s),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_seq_create", "kv_dtype = 7");
    ck_assert_ptr_null(s);
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &s), MHSA_OK);
    static float lg[16 * MAX_V];
    for (int i = 0; i < 16 * MAX_V; i++)
        lg[i] = 7.0f;
    int32_t toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    ck_assert_int_eq(mhsa_seq_eval(NULL, toks, 1, 0, lg, MAX_V),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_seq_eval(s, NULL, 1, 0, lg, MAX_V),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_seq_eval", "tokens is NULL");
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 1, 0, NULL, MAX_V),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_seq_eval", "logits is NULL");
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 0, 0, lg, MAX_V),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_seq_eval", "n = 0");
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 1, (mhsa_logits)2, lg, MAX_V),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_seq_eval", "which = 2");
    int32_t oob[2] = {1, V};
    ck_assert_int_eq(mhsa_seq_eval(s, oob, 2, 0, lg, MAX_V),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_seq_eval", "tokens[1]");
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 1, MHSA_LOGITS_LAST, lg,
                                   (size_t)V - 1), MHSA_ERR_SHAPE);
    says("mhsa_seq_eval", "room for");
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 2, MHSA_LOGITS_ALL, lg,
                                   2 * (size_t)V - 1), MHSA_ERR_SHAPE);
    // Too many tokens for the context (8): refused, the sequence as it
    // was, and it goes on.
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 9, 0, lg, MAX_V), MHSA_ERR_SHAPE);
    says("mhsa_seq_eval", "8 positions");
    ck_assert_int_eq(mhsa_seq_len(s), 0);
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 6, 0, lg, MAX_V), MHSA_OK);
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 3, 0, lg, MAX_V), MHSA_ERR_SHAPE);
    ck_assert_int_eq(mhsa_seq_len(s), 6);
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 2, 0, lg, MAX_V), MHSA_OK);
    ck_assert_int_eq(mhsa_seq_len(s), 8);
    for (int i = 0; i < 16 * MAX_V; i++)
        lg[i] = 7.0f;
    ck_assert_int_eq(mhsa_seq_eval(s, toks, 1, 0, lg, MAX_V), MHSA_ERR_SHAPE);
    for (int i = 0; i < 16 * MAX_V; i++)
        ck_assert(lg[i] == 7.0f);   // nothing written on failure
    mhsa_seq_destroy(s);
    // Samplers.
    mhsa_sampler *smp = NULL;
    mhsa_sampler_params sp = {0};
    ck_assert_int_eq(mhsa_sampler_create(NULL, V, &smp),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_sampler_create(&sp, V, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_sampler_create(&sp, 0, &smp),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_sampler_create", "n_vocab = 0");
    static const struct { mhsa_sampler_params p; const char *says; } bp[] = {
        {{.temperature = -1.0f}, "temperature"},
        {{.temperature = INFINITY}, "temperature"},
        {{.temperature = NAN}, "temperature"},
        {{.top_k = -1}, "top_k"},
        {{.top_p = 1.5f}, "top_p"},
        {{.top_p = NAN}, "top_p"},
        {{.min_p = -0.1f}, "min_p"},
        {{.repeat_penalty = -2.0f}, "repeat_penalty"},
        {{.repeat_last_n = -1}, "repeat_last_n"},
    };
    for (size_t i = 0; i < sizeof bp / sizeof bp[0]; i++) {
        ck_assert_int_eq(mhsa_sampler_create(&bp[i].p, V, &smp),
                         MHSA_ERR_INVALID_ARG);
        says("mhsa_sampler_create", bp[i].says);
    }
    ck_assert_ptr_null(smp);
    sp = (mhsa_sampler_params){.temperature = 1.0f, .repeat_penalty = 1.5f,
                               .seed = 11};
    smp = sampler(&sp, V);
    mhsa_sampler *twin = sampler(&sp, V);
    int32_t t = -5;
    ck_assert_int_eq(mhsa_sampler_sample(NULL, lg, (size_t)V, NULL, 0, &t),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_sampler_sample(smp, NULL, (size_t)V, NULL, 0, &t),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_sampler_sample(smp, lg, (size_t)V, NULL, 0, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_sampler_sample(smp, lg, (size_t)V, NULL, 3, &t),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_sampler_sample", "history is NULL");
    ck_assert_int_eq(mhsa_sampler_sample(smp, lg, (size_t)V + 1, NULL, 0,
                                         &t), MHSA_ERR_INVALID_ARG);
    says("mhsa_sampler_sample", "made for");
    ck_assert_int_eq(mhsa_sampler_sample(smp, lg, (size_t)V, oob, 2, &t),
                     MHSA_ERR_INVALID_ARG);
    says("mhsa_sampler_sample", "history[1]");
    ck_assert_int_eq(t, -5);
    // The refusals moved no stream: smp still draws what its twin draws.
    random_logits(lg, V, 77);
    for (int i = 0; i < 20; i++) {
        int32_t a, b;
        ck_assert_int_eq(mhsa_sampler_sample(smp, lg, (size_t)V, NULL, 0,
                                             &a), MHSA_OK);
        ck_assert_int_eq(mhsa_sampler_sample(twin, lg, (size_t)V, NULL, 0,
                                             &b), MHSA_OK);
        ck_assert_int_eq(a, b);
    }
    mhsa_sampler_destroy(smp);
    mhsa_sampler_destroy(twin);
    mhsa_model_free(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("model_api");
    TCase *tc = tcase_create("model_api");
    tcase_add_checked_fixture(tc, NULL, family_temp_remove);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, load_and_metadata);
    tcase_add_test(tc, tokenize_and_detokenize);
    tcase_add_test(tc, eval_equals_the_runner);
    tcase_add_test(tc, sequences_interleaved_equal_alone);
    tcase_add_test(tc, two_threads_share_a_model);
    tcase_add_test(tc, sampler_stream_and_seed);
    tcase_add_test(tc, sampler_options);
    tcase_add_test(tc, errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
