// gguf_generate.c — mhsa-generate on a Llama-architecture GGUF model
// (src/models/llama): the prompt through the file's tokenizer, prefilled in one
// forward (one mhsa_forward_cached call per layer), then one token at a
// time, sampled as for the GPT (sample_token: --temperature 0 is greedy),
// until -n tokens or the end-of-sequence token. Nothing is allocated per
// token. The prompt's special tokens' text (such as "<|im_start|>") is
// that token, as llama-cli and llama-simple parse it (--no-parse-special:
// plain text); control tokens are not printed (--special: they are), as
// llama-cli; generation ends at any end-of-generation token, as
// llama_vocab_is_eog says. --ids prints token ids instead of text; --bench
// times llama-bench's pp512 (a 512-token prefill) and tg64 (64 tokens
// decoded after it), and the time to first token of a 16-token prompt.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_util.h"
#include "gguf_generate.h"
#include "models/gguf/gguf.h"
#include "models/llama/llama.h"
#include "models/tokenizer/tokenizer.h"
#include "sample.h"

_Static_assert((int)GEN_WEIGHTS_FILE == (int)MHSA__WEIGHTS_FILE,
               "--weight-dtype file is the loader's MHSA__WEIGHTS_FILE");

typedef struct gguf_run {
    const gen_args *a;
    mhsa_tokenizer *tok;
    mhsa_llama *m;
    mhsa_llama_cache *cache;
    int32_t *ids;          // prompt then generated
    size_t n_prompt, cap_ids;
    float *logits;         // (V)
    int *order;            // (V) scratch of sample_token
    char text[256];        // one token's bytes
} gguf_run;

static void run_free(gguf_run *r)
{
    mhsa__llama_cache_destroy(r->cache);
    mhsa__llama_destroy(r->m);
    mhsa__tok_free(r->tok);
    free(r->ids);
    free(r->logits);
    free(r->order);
}

static unsigned encode_flags(const gen_args *a)
{
    return MHSA_TOK_ADD_SPECIAL |
           (a->no_parse_special ? 0u : (unsigned)MHSA_TOK_PARSE_SPECIAL);
}

int gen_model_error(const gen_args *a)
{
    fprintf(stderr, "mhsa-generate: --model %s: %s\n", gen_quote(a->model),
            mhsa_last_error());
    return CLI_USAGE;
}

int gen_gguf_start(const gen_args *a, mhsa_tokenizer **tok)
{
    gen_set_threads(a->threads);
    if (a->isa != MHSA_ISA_AUTO && mhsa_select_isa(a->isa) != MHSA_OK) {
        fprintf(stderr, "mhsa-generate: --isa %s: not available on this "
                "machine or build\n", mhsa_isa_name(a->isa));
        return CLI_USAGE;
    }
    mhsa_gguf_file *f = NULL;
    if (mhsa__gguf_open(a->model, &f) != MHSA_OK)
        return gen_model_error(a);
    mhsa_status st = mhsa__tok_load(f, tok);
    mhsa__gguf_close(f);
    return st == MHSA_OK ? CLI_OK : gen_model_error(a);
}

// The tokenizer, the prompt's ids, then the model with a cache for them
// and the new tokens.
static int setup(gguf_run *r)
{
    const gen_args *a = r->a;
    int rc = gen_gguf_start(a, &r->tok);
    if (rc != CLI_OK)
        return rc;
    size_t len = a->prompt_len, n = 0;
    size_t max_ids = mhsa__tok_max_ids(r->tok, len);
    if (max_ids > ((size_t)1 << 40)) {
        fprintf(stderr, "mhsa-generate: %s is too long\n",
                gen_prompt_flag(a));
        return CLI_USAGE;
    }
    r->cap_ids = max_ids + (size_t)a->n;
    if (a->bench && r->cap_ids < 512 + 64)
        r->cap_ids = 512 + 64;
    r->ids = malloc(r->cap_ids * sizeof(int32_t));
    if (!r->ids) {
        fprintf(stderr, "mhsa-generate: out of memory\n");
        return CLI_FAIL;
    }
    mhsa_status st_enc = mhsa__tok_encode(r->tok, a->prompt, len,
                                          encode_flags(a), r->ids, max_ids,
                                          &n);
    if (st_enc == MHSA_ERR_INVALID_ARG) {   // not UTF-8: the user's text
        fprintf(stderr, "mhsa-generate: %s: %s\n", gen_prompt_flag(a),
                mhsa_last_error());
        return CLI_USAGE;
    }
    if (st_enc != MHSA_OK)
        return gen_fail("tokenizing the prompt");
    if (n == 0) {   // an empty prompt: start from BOS where there is one
        if (mhsa__tok_bos(r->tok) < 0) {
            fprintf(stderr, "mhsa-generate: %s is empty and the model has "
                    "no BOS token to start from\n", gen_prompt_flag(a));
            return CLI_USAGE;
        }
        r->ids[n++] = mhsa__tok_bos(r->tok);
    }
    r->n_prompt = n;
    mhsa_llama_config cfg;
    if (mhsa__llama_read_config(a->model, &cfg) != MHSA_OK)
        return gen_model_error(a);
    // The cache holds the prompt and the new tokens (or what --ctx says);
    // generation stops early when it is full. -n 0 processes the prompt
    // only.
    size_t need = a->bench ? 512 + 64 : n + (a->n > 0);
    size_t want = a->bench ? need : n + (size_t)a->n;
    if (want > (size_t)cfg.context)
        want = (size_t)cfg.context;
    size_t cap = a->ctx ? (size_t)a->ctx : want;
    if (a->ctx && cap > (size_t)cfg.context) {
        fprintf(stderr, "mhsa-generate: --ctx %d is more than the model's "
                "context of %d positions\n", a->ctx, cfg.context);
        return CLI_USAGE;
    }
    if (cap < need) {
        if (a->bench)
            fprintf(stderr, "mhsa-generate: --bench needs 512 + 64 "
                    "positions; %s %zu\n", a->ctx ? "--ctx gives"
                    : "the model's context is", cap);
        else if (a->ctx)
            fprintf(stderr, "mhsa-generate: --ctx %d is too small: %s is "
                    "%zu tokens%s\n", a->ctx, gen_prompt_flag(a), n,
                    a->n > 0 ? ", and -n needs room for one more" : "");
        else
            fprintf(stderr, "mhsa-generate: %s is %zu tokens%s; the "
                    "model's context is %d positions\n",
                    gen_prompt_flag(a), n,
                    a->n > 0 ? ", and -n needs room for one more" : "",
                    cfg.context);
        return CLI_USAGE;
    }
    if (mhsa__llama_load_ex(a->model, (int)cap, a->weight_dtype, &r->m) !=
            MHSA_OK ||
        mhsa__llama_cache_create(r->m, a->kv_dtype, &r->cache) != MHSA_OK)
        return gen_model_error(a);
    size_t V = (size_t)mhsa__llama_config(r->m)->vocab;
    r->logits = malloc(V * sizeof(float));
    r->order = malloc(V * sizeof(int));
    if (!r->logits || !r->order) {
        fprintf(stderr, "mhsa-generate: out of memory\n");
        return CLI_FAIL;
    }
    return CLI_OK;
}

static void print_ids(const char *label, const int32_t *ids, size_t n)
{
    printf("%s", label);
    for (size_t i = 0; i < n; i++)
        printf(" %d", (int)ids[i]);
    printf("\n");
}

// A token's bytes to stdout (a multi-byte character may span tokens: the
// bytes go out as they come).
static int put_token(gguf_run *r, int32_t id)
{
    size_t len = 0;
    unsigned flags = r->a->special ? (unsigned)MHSA_TOK_DECODE_SPECIAL : 0u;
    if (mhsa__tok_decode(r->tok, &id, 1, flags, r->text, sizeof r->text,
                         &len) != MHSA_OK)
        return gen_fail("decoding a token");
    fwrite(r->text, 1, len, stdout);
    return CLI_OK;
}

static int generate(gguf_run *r)
{
    const gen_args *a = r->a;
    int V = mhsa__llama_config(r->m)->vocab;
    size_t n = r->n_prompt;
    if (!a->ids) {
        fwrite(a->prompt, 1, a->prompt_len, stdout);
        fflush(stdout);
    }
    size_t room = (size_t)mhsa__llama_capacity(r->m) - n;
    double t0 = gen_now_s();
    if (mhsa__llama_forward(r->m, r->cache, r->ids, (int)n, 0, r->logits) !=
        MHSA_OK)
        return gen_fail("prefill");
    double t_prefill = gen_now_s() - t0, t_decode = 0.0, t1 = 0.0;
    uint64_t rng = a->seed;
    int made = 0, steps = 0;
    for (int i = 0; i < a->n && (size_t)i < room; i++) {
        int32_t tok = sample_token(r->logits, V, a->temperature, a->top_k,
                                   &rng, r->order);
        // A decoding step: the forward of the token before, then this
        // sampling (the first token's sampling goes with no step).
        if (i > 0) {
            t_decode += gen_now_s() - t1;
            steps++;
        }
        if (mhsa__tok_is_eog(r->tok, tok))
            break;
        r->ids[n++] = tok;
        made++;
        if (!a->ids && put_token(r, tok) != CLI_OK)
            return CLI_FAIL;
        if (!a->ids)
            fflush(stdout);
        if (i + 1 == a->n || (size_t)i + 1 == room)
            break;
        t1 = gen_now_s();
        if (mhsa__llama_forward(r->m, r->cache, &r->ids[n - 1], 1, 0,
                                r->logits) != MHSA_OK)
            return gen_fail("decode");
    }
    if (a->ids) {
        print_ids("prompt_ids:", r->ids, r->n_prompt);
        print_ids("new_ids:", r->ids + r->n_prompt, (size_t)made);
    } else {
        printf("\n");
    }
    fflush(stdout);
    fprintf(stderr, "mhsa-generate: prefill %zu tokens in %.2f ms (%.1f "
            "tokens/s); decode %d tokens in %.2f ms (%.1f tokens/s); %d "
            "thread%s, isa %s\n", r->n_prompt, 1e3 * t_prefill,
            (double)r->n_prompt / (t_prefill + 1e-12), steps,
            1e3 * t_decode, (double)steps / (t_decode + 1e-12),
            omp_get_max_threads(), omp_get_max_threads() == 1 ? "" : "s",
            mhsa_isa_name(mhsa_active_isa()));
    return CLI_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Time to first token: text in (tokenized), prefilled into an empty
// cache, the first new token picked and turned back into text; the model
// is loaded before (excluded). The prompt is the first 16 tokens of a
// fixed sentence, given as text. Median of 9 runs into *ms; *n_tok the
// prompt's tokens.
static int ttft(gguf_run *r, double *ms, size_t *n_tok)
{
    static const char sentence[] =
        "The quick brown fox jumps over the lazy dog, and then it runs "
        "far away into the deep green forest behind the old farm house.";
    size_t n = 0, len = 0;
    if (mhsa__tok_encode(r->tok, sentence, sizeof sentence - 1, 0, r->ids,
                         r->cap_ids, &n) != MHSA_OK)
        return gen_fail("ttft: tokenizing");
    char prompt[sizeof sentence];
    if (mhsa__tok_decode(r->tok, r->ids, n < 16 ? n : 16,
                         MHSA_TOK_STRIP_SPACE, prompt, sizeof prompt - 1,
                         &len) != MHSA_OK)
        return gen_fail("ttft: decoding");
    prompt[len] = '\0';
    int V = mhsa__llama_config(r->m)->vocab;
    double t[9];
    for (int rep = 0; rep < 9; rep++) {
        mhsa__llama_cache_reset(r->cache);
        double t0 = gen_now_s();
        if (mhsa__tok_encode(r->tok, prompt, len, encode_flags(r->a),
                             r->ids, r->cap_ids, &n) != MHSA_OK ||
            mhsa__llama_forward(r->m, r->cache, r->ids, (int)n, 0,
                                r->logits) != MHSA_OK)
            return gen_fail("ttft");
        uint64_t rng = 1;
        int32_t tok = sample_token(r->logits, V, 0.0f, 0, &rng, r->order);
        size_t out;
        if (mhsa__tok_decode(r->tok, &tok, 1, 0, r->text, sizeof r->text,
                             &out) != MHSA_OK)
            return gen_fail("ttft: decoding");
        t[rep] = gen_now_s() - t0;
    }
    qsort(t, 9, sizeof t[0], cmp_double);
    *ms = 1e3 * t[4];
    *n_tok = n;
    return CLI_OK;
}

// pp512 and tg64 as llama-bench measures them: a 512-token prefill into an
// empty cache, then 64 tokens decoded one at a time after it; fixed token
// ids (the time does not depend on them). The better of three runs each.
// Then the time to first token (ttft).
static int bench(gguf_run *r)
{
    int V = mhsa__llama_config(r->m)->vocab;
    for (int i = 0; i < 512 + 64; i++)
        r->ids[i] = (int32_t)(((uint32_t)i * 2654435761u) % (uint32_t)V);
    double best_pp = 1e30, best_tg = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        mhsa__llama_cache_reset(r->cache);
        double t0 = gen_now_s();
        if (mhsa__llama_forward(r->m, r->cache, r->ids, 512, 0, r->logits) !=
            MHSA_OK)
            return gen_fail("pp512");
        double t1 = gen_now_s();
        for (int i = 0; i < 64; i++)
            if (mhsa__llama_forward(r->m, r->cache, &r->ids[512 + i], 1, 0,
                                    r->logits) != MHSA_OK)
                return gen_fail("tg64");
        double t2 = gen_now_s();
        best_pp = t1 - t0 < best_pp ? t1 - t0 : best_pp;
        best_tg = t2 - t1 < best_tg ? t2 - t1 : best_tg;
    }
    double ms = 0.0;
    size_t n_tok = 0;
    if (ttft(r, &ms, &n_tok) != CLI_OK)
        return CLI_FAIL;
    printf("pp512: %.1f tokens/s\ntg64: %.1f tokens/s\n"
           "ttft: %.2f ms (%zu-token prompt, text to first token, median "
           "of 9)\n(%d thread%s, isa %s, kv %s, weights %.1f MB %s%s)\n",
           512.0 / best_pp, 64.0 / best_tg, ms, n_tok, omp_get_max_threads(),
           omp_get_max_threads() == 1 ? "" : "s",
           mhsa_isa_name(mhsa_active_isa()),
           r->a->kv_dtype == MHSA_F32 ? "f32"
           : r->a->kv_dtype == MHSA_F16 ? "f16" : "bf16",
           (double)mhsa__llama_weight_bytes(r->m) / 1e6,
           mhsa__llama_weight_types(r->m),
           r->a->weight_dtype == GEN_WEIGHTS_FILE ? " as stored" : "");
    return CLI_OK;
}

int mhsa_generate_gguf(const gen_args *a)
{
    gguf_run r;
    memset(&r, 0, sizeof r);
    r.a = a;
    int rc = setup(&r);
    if (rc == CLI_OK)
        rc = a->bench ? bench(&r) : generate(&r);
    run_free(&r);
    return rc;
}
