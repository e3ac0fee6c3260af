// gguf_generate.c — mhsa-generate on a Llama-architecture GGUF model
// (src/llama): the prompt through the file's tokenizer, prefilled in one
// forward (one mhsa_forward_cached call per layer), then one token at a
// time, sampled as for the GPT (sample_token: --temperature 0 is greedy),
// until -n tokens or the end-of-sequence token. Nothing is allocated per
// token. --ids prints token ids instead of text; --bench times llama-bench's
// pp512 (a 512-token prefill) and tg64 (64 tokens decoded after it).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "generate.h"
#include "io/gguf.h"
#include "llama/llama.h"
#include "llama/tokenizer.h"

int mhsa_is_gguf(const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[4] = { 0 };
    int is = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
    if (f)
        fclose(f);
    return is;
}

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

static int model_error(const gen_args *a)
{
    fprintf(stderr, "mhsa-generate: --model %s: %s\n", a->model,
            mhsa_last_error());
    return CLI_USAGE;
}

// The tokenizer, the prompt's ids, then the model with a cache for them
// and the new tokens.
static int setup(gguf_run *r)
{
    const gen_args *a = r->a;
    if (a->threads > 0)
        omp_set_num_threads(a->threads);
    if (a->isa != MHSA_ISA_AUTO && mhsa_select_isa(a->isa) != MHSA_OK) {
        fprintf(stderr, "mhsa-generate: --isa %s: not available on this "
                "machine or build\n", mhsa_isa_name(a->isa));
        return CLI_USAGE;
    }
    mhsa_gguf_file *f = NULL;
    if (mhsa__gguf_open(a->model, &f) != MHSA_OK)
        return model_error(a);
    mhsa_status st = mhsa__tok_load(f, &r->tok);
    mhsa__gguf_close(f);
    if (st != MHSA_OK)
        return model_error(a);
    size_t len = strlen(a->prompt), n = 0;
    r->cap_ids = len + 2 + (size_t)a->n;
    if (a->bench && r->cap_ids < 512 + 64)
        r->cap_ids = 512 + 64;
    r->ids = malloc(r->cap_ids * sizeof(int32_t));
    if (!r->ids) {
        fprintf(stderr, "mhsa-generate: out of memory\n");
        return CLI_FAIL;
    }
    if (mhsa__tok_encode(r->tok, a->prompt, len, 1, r->ids, len + 2, &n) !=
        MHSA_OK)
        return gen_fail("tokenizing the prompt");
    if (n == 0) {   // an empty prompt: start from BOS where there is one
        if (mhsa__tok_bos(r->tok) < 0) {
            fprintf(stderr, "mhsa-generate: --prompt is empty and the "
                    "model has no BOS token to start from\n");
            return CLI_USAGE;
        }
        r->ids[n++] = mhsa__tok_bos(r->tok);
    }
    r->n_prompt = n;
    mhsa_llama_config cfg;
    if (mhsa__llama_read_config(a->model, &cfg) != MHSA_OK)
        return model_error(a);
    // The cache holds the prompt and the new tokens (or what --ctx says);
    // generation stops early when it is full.
    size_t need = a->bench ? 512 + 64 : n + 1;
    size_t want = a->bench ? need : n + (size_t)a->n;
    if (want > (size_t)cfg.context)
        want = (size_t)cfg.context;
    size_t cap = a->ctx ? (size_t)a->ctx : want;
    if (cap < need || cap > (size_t)cfg.context) {
        fprintf(stderr, "mhsa-generate: %s %zu positions, the run needs "
                "%zu (%s) and the model's context is %d\n",
                a->ctx ? "--ctx gives" : "the cache would hold", cap, need,
                a->bench ? "--bench: 512 + 64" : "the prompt and one more",
                cfg.context);
        return CLI_USAGE;
    }
    if (mhsa__llama_load(a->model, (int)cap, &r->m) != MHSA_OK ||
        mhsa__llama_cache_create(r->m, a->kv_dtype, &r->cache) != MHSA_OK)
        return model_error(a);
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
    if (mhsa__tok_decode(r->tok, &id, 1, 0, r->text, sizeof r->text, &len)
        != MHSA_OK)
        return gen_fail("decoding a token");
    fwrite(r->text, 1, len, stdout);
    return CLI_OK;
}

static int generate(gguf_run *r)
{
    const gen_args *a = r->a;
    int V = mhsa__llama_config(r->m)->vocab;
    int32_t eos = mhsa__tok_eos(r->tok);
    size_t n = r->n_prompt;
    if (!a->ids) {
        fwrite(a->prompt, 1, strlen(a->prompt), stdout);
        fflush(stdout);
    }
    size_t room = (size_t)mhsa__llama_capacity(r->m) - n;
    double t0 = gen_now_s();
    if (mhsa__llama_forward(r->m, r->cache, r->ids, (int)n, 0, r->logits) !=
        MHSA_OK)
        return gen_fail("prefill");
    double t_prefill = gen_now_s() - t0, t_decode = 0.0;
    uint64_t rng = a->seed;
    int made = 0;
    for (int i = 0; i < a->n && (size_t)i < room; i++) {
        int32_t tok = sample_token(r->logits, V, a->temperature, a->top_k,
                                   &rng, r->order);
        if (tok == eos)
            break;
        r->ids[n++] = tok;
        made++;
        if (!a->ids && put_token(r, tok) != CLI_OK)
            return CLI_FAIL;
        if (!a->ids)
            fflush(stdout);
        if (i + 1 == a->n || (size_t)i + 1 == room)
            break;
        double t1 = gen_now_s();
        if (mhsa__llama_forward(r->m, r->cache, &r->ids[n - 1], 1, 0,
                                r->logits) != MHSA_OK)
            return gen_fail("decode");
        t_decode += gen_now_s() - t1;
    }
    if (a->ids) {
        print_ids("prompt_ids:", r->ids, r->n_prompt);
        print_ids("new_ids:", r->ids + r->n_prompt, (size_t)made);
    } else {
        printf("\n");
    }
    fflush(stdout);
    int steps = made > 1 ? made - 1 : 0;
    fprintf(stderr, "mhsa-generate: prefill %zu tokens in %.2f ms (%.1f "
            "tokens/s); decode %d tokens in %.2f ms (%.1f tokens/s); %d "
            "thread%s, isa %s\n", r->n_prompt, 1e3 * t_prefill,
            (double)r->n_prompt / (t_prefill + 1e-12), steps,
            1e3 * t_decode, (double)steps / (t_decode + 1e-12),
            omp_get_max_threads(), omp_get_max_threads() == 1 ? "" : "s",
            mhsa_isa_name(mhsa_active_isa()));
    return CLI_OK;
}

// pp512 and tg64 as llama-bench measures them: a 512-token prefill into an
// empty cache, then 64 tokens decoded one at a time after it; fixed token
// ids (the time does not depend on them). The better of three runs each.
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
    printf("pp512: %.1f tokens/s\ntg64: %.1f tokens/s\n"
           "(%d thread%s, isa %s, kv %s, weights %.0f MB fp32)\n",
           512.0 / best_pp, 64.0 / best_tg, omp_get_max_threads(),
           omp_get_max_threads() == 1 ? "" : "s",
           mhsa_isa_name(mhsa_active_isa()),
           r->a->kv_dtype == MHSA_F32 ? "f32"
           : r->a->kv_dtype == MHSA_F16 ? "f16" : "bf16",
           (double)mhsa__llama_weight_bytes(r->m) / 1e6);
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
