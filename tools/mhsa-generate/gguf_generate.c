// gguf_generate.c — mhsa-generate on a Llama-architecture GGUF model,
// through the library's model API (mhsa_model.h) alone: the prompt through
// the file's tokenizer, prefilled in one evaluation, then one token at a
// time, sampled as for the GPT (mhsa_sampler: --temperature 0 is greedy),
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
#include "mhsa_model.h"

typedef struct gguf_run {
    const gen_args *a;
    mhsa_model *vocab;     // the tokenizer and metadata (vocab_only)
    mhsa_model *m;
    mhsa_seq *seq;
    mhsa_sampler *sampler;
    int32_t *ids;          // prompt then generated
    size_t n_prompt, cap_ids;
    float *logits;         // (V)
    size_t V;
    char text[256];        // one token's bytes
} gguf_run;

static void run_free(gguf_run *r)
{
    mhsa_sampler_destroy(r->sampler);
    mhsa_seq_destroy(r->seq);
    mhsa_model_free(r->m);
    mhsa_model_free(r->vocab);
    free(r->ids);
    free(r->logits);
}

static unsigned encode_flags(const gen_args *a)
{
    return MHSA_TOKENIZE_ADD_SPECIAL |
           (a->no_parse_special ? 0u : (unsigned)MHSA_TOKENIZE_PARSE_SPECIAL);
}

int gen_model_error(const gen_args *a)
{
    fprintf(stderr, "mhsa-generate: --model %s: %s\n", gen_quote(a->model),
            mhsa_last_error());
    return CLI_USAGE;
}

int gen_gguf_start(const gen_args *a, mhsa_model **vocab)
{
    gen_set_threads(a->threads);
    if (a->isa != MHSA_ISA_AUTO && mhsa_select_isa(a->isa) != MHSA_OK) {
        fprintf(stderr, "mhsa-generate: --isa %s: not available on this "
                "machine or build\n", mhsa_isa_name(a->isa));
        return CLI_USAGE;
    }
    mhsa_model_params p = {0};
    p.vocab_only = 1;
    if (mhsa_model_load(a->model, &p, vocab) != MHSA_OK)
        return gen_model_error(a);
    return CLI_OK;
}

int gen_sampler(const gen_args *a, int n_vocab, mhsa_sampler **out)
{
    mhsa_sampler_params p = {0};
    p.temperature = a->temperature;
    p.top_k = a->top_k;
    p.seed = a->seed;
    if (mhsa_sampler_create(&p, n_vocab, out) != MHSA_OK)
        return gen_fail("the sampler");
    return CLI_OK;
}

mhsa_model_weights gen_weights(const gen_args *a)
{
    return a->weight_dtype == GEN_WEIGHTS_FILE ? MHSA_WEIGHTS_AS_STORED
         : a->weight_dtype == MHSA_F16 ? MHSA_WEIGHTS_F16
         : a->weight_dtype == MHSA_BF16 ? MHSA_WEIGHTS_BF16
         : MHSA_WEIGHTS_F32;
}

int gen_tokenize(const gen_args *a, const mhsa_model *vocab, unsigned flags,
                 size_t extra, int32_t **ids, size_t *n, size_t *cap)
{
    // The ids' count first (nothing written), then the ids into room for
    // them and `extra` more.
    mhsa_status st = mhsa_tokenize(vocab, a->prompt, a->prompt_len, flags,
                                   NULL, 0, n);
    if (st == MHSA_ERR_SHAPE || st == MHSA_OK) {
        if (*n > ((size_t)1 << 40) || extra > ((size_t)1 << 40))
            st = MHSA_ERR_NO_MEMORY;
        else if (!(*ids = malloc((*n + extra ? *n + extra : 1) *
                                 sizeof(int32_t)))) {
            fprintf(stderr, "mhsa-generate: out of memory\n");
            return CLI_FAIL;
        } else {
            *cap = *n + extra;
            st = mhsa_tokenize(vocab, a->prompt, a->prompt_len, flags, *ids,
                               *cap, n);
        }
    }
    if (st == MHSA_ERR_NO_MEMORY) {
        fprintf(stderr, "mhsa-generate: %s is too long\n",
                gen_prompt_flag(a));
        return CLI_USAGE;
    }
    if (st == MHSA_ERR_INVALID_ARG) {   // not UTF-8: the user's text
        fprintf(stderr, "mhsa-generate: %s: %s\n", gen_prompt_flag(a),
                mhsa_last_error());
        return CLI_USAGE;
    }
    if (st != MHSA_OK)
        return gen_fail("tokenizing the prompt");
    return CLI_OK;
}

// The tokenizer, the prompt's ids, then the model with a sequence for them
// and the new tokens.
static int setup(gguf_run *r)
{
    const gen_args *a = r->a;
    int rc = gen_gguf_start(a, &r->vocab);
    if (rc != CLI_OK)
        return rc;
    size_t n = 0;
    size_t extra = (size_t)a->n + 1;   // the new tokens, or BOS alone
    if (a->bench && extra < 512 + 64)
        extra = 512 + 64;
    rc = gen_tokenize(a, r->vocab, encode_flags(a), extra, &r->ids, &n,
                      &r->cap_ids);
    if (rc != CLI_OK)
        return rc;
    if (n == 0) {   // an empty prompt: start from BOS where there is one
        if (mhsa_model_bos(r->vocab) < 0) {
            fprintf(stderr, "mhsa-generate: %s is empty and the model has "
                    "no BOS token to start from\n", gen_prompt_flag(a));
            return CLI_USAGE;
        }
        r->ids[n++] = mhsa_model_bos(r->vocab);
    }
    r->n_prompt = n;
    int context = mhsa_model_n_ctx_train(r->vocab);
    // The sequence holds the prompt and the new tokens (or what --ctx
    // says); generation stops early when it is full. -n 0 processes the
    // prompt only.
    size_t need = a->bench ? 512 + 64 : n + (a->n > 0);
    size_t want = a->bench ? need : n + (size_t)a->n;
    if (want > (size_t)context)
        want = (size_t)context;
    size_t cap = a->ctx ? (size_t)a->ctx : want;
    if (a->ctx && cap > (size_t)context) {
        fprintf(stderr, "mhsa-generate: --ctx %d is more than the model's "
                "context of %d positions\n", a->ctx, context);
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
                    context);
        return CLI_USAGE;
    }
    mhsa_model_params p = {0};
    p.weights = (int)gen_weights(a);
    p.context = (int)cap;
    if (mhsa_model_load(a->model, &p, &r->m) != MHSA_OK ||
        mhsa_seq_create(r->m, a->kv_dtype, &r->seq) != MHSA_OK)
        return gen_model_error(a);
    mhsa_model_free(r->vocab);   // the model has its own tokenizer
    r->vocab = NULL;
    r->V = (size_t)mhsa_model_n_vocab(r->m);
    r->logits = malloc(r->V * sizeof(float));
    if (!r->logits) {
        fprintf(stderr, "mhsa-generate: out of memory\n");
        return CLI_FAIL;
    }
    return gen_sampler(a, (int)r->V, &r->sampler);
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
    unsigned flags = r->a->special ? (unsigned)MHSA_DETOKENIZE_SPECIAL : 0u;
    if (mhsa_detokenize(r->m, &id, 1, flags, r->text, sizeof r->text,
                        &len) != MHSA_OK)
        return gen_fail("decoding a token");
    fwrite(r->text, 1, len, stdout);
    return CLI_OK;
}

static int generate(gguf_run *r)
{
    const gen_args *a = r->a;
    size_t n = r->n_prompt;
    if (!a->ids) {
        fwrite(a->prompt, 1, a->prompt_len, stdout);
        fflush(stdout);
    }
    size_t room = (size_t)mhsa_model_n_ctx(r->m) - n;
    double t0 = gen_now_s();
    if (mhsa_seq_eval(r->seq, r->ids, n, MHSA_LOGITS_LAST, r->logits,
                      r->V) != MHSA_OK)
        return gen_fail("prefill");
    double t_prefill = gen_now_s() - t0, t_decode = 0.0, t1 = 0.0;
    int made = 0, steps = 0;
    for (int i = 0; i < a->n && (size_t)i < room; i++) {
        int32_t tok;
        if (mhsa_sampler_sample(r->sampler, r->logits, r->V, NULL, 0,
                                &tok) != MHSA_OK)
            return gen_fail("sampling");
        // A decoding step: the forward of the token before, then this
        // sampling (the first token's sampling goes with no step).
        if (i > 0) {
            t_decode += gen_now_s() - t1;
            steps++;
        }
        if (mhsa_model_is_eog(r->m, tok))
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
        if (mhsa_seq_eval(r->seq, &r->ids[n - 1], 1, MHSA_LOGITS_LAST,
                          r->logits, r->V) != MHSA_OK)
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
    if (mhsa_tokenize(r->m, sentence, sizeof sentence - 1, 0, r->ids,
                      r->cap_ids, &n) != MHSA_OK)
        return gen_fail("ttft: tokenizing");
    char prompt[sizeof sentence];
    if (mhsa_detokenize(r->m, r->ids, n < 16 ? n : 16,
                        MHSA_DETOKENIZE_STRIP_SPACE, prompt, sizeof prompt,
                        &len) != MHSA_OK)
        return gen_fail("ttft: decoding");
    mhsa_sampler_params greedy = {0};
    mhsa_sampler *first = NULL;
    if (mhsa_sampler_create(&greedy, (int)r->V, &first) != MHSA_OK)
        return gen_fail("ttft: the sampler");
    double t[9];
    for (int rep = 0; rep < 9; rep++) {
        mhsa_seq_reset(r->seq);
        double t0 = gen_now_s();
        int32_t tok;
        size_t out;
        if (mhsa_tokenize(r->m, prompt, len, encode_flags(r->a), r->ids,
                          r->cap_ids, &n) != MHSA_OK ||
            mhsa_seq_eval(r->seq, r->ids, n, MHSA_LOGITS_LAST, r->logits,
                          r->V) != MHSA_OK ||
            mhsa_sampler_sample(first, r->logits, r->V, NULL, 0, &tok) !=
                MHSA_OK ||
            mhsa_detokenize(r->m, &tok, 1, 0, r->text, sizeof r->text,
                            &out) != MHSA_OK) {
            mhsa_sampler_destroy(first);
            return gen_fail("ttft");
        }
        t[rep] = gen_now_s() - t0;
    }
    mhsa_sampler_destroy(first);
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
    for (int i = 0; i < 512 + 64; i++)
        r->ids[i] = (int32_t)(((uint32_t)i * 2654435761u) % (uint32_t)r->V);
    double best_pp = 1e30, best_tg = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        mhsa_seq_reset(r->seq);
        double t0 = gen_now_s();
        if (mhsa_seq_eval(r->seq, r->ids, 512, MHSA_LOGITS_LAST, r->logits,
                          r->V) != MHSA_OK)
            return gen_fail("pp512");
        double t1 = gen_now_s();
        for (int i = 0; i < 64; i++)
            if (mhsa_seq_eval(r->seq, &r->ids[512 + i], 1, MHSA_LOGITS_LAST,
                              r->logits, r->V) != MHSA_OK)
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
           (double)mhsa_model_weight_bytes(r->m) / 1e6,
           mhsa_model_weight_types(r->m),
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
