// generate.c — mhsa-generate: load a GPT checkpoint (mhsa-train --task text
// --save, or tools/gpt_peer.py --save), prefill the prompt, then decode one
// byte at a time through the KV cache of every layer
// (mhsa_gpt_forward_cached -> mhsa_forward_cached), sampling with a
// temperature and top-k from a seeded splitmix64 stream.
//
// The text goes to stdout as it is made; the timings (prefill tokens/s,
// model time; decode tokens/s, each step's model time and sampling) to
// stderr. The logits are the same bits on any
// thread count, so the same seed gives the same text.
//
// A context longer than the model's block: when the cache is full, the
// last half block of text is prefilled again into an empty cache (learned
// positions stop at block_size), and decoding goes on from there; that
// refill counts as decoding time.
//
// Exit status: 0 done, 1 a failure while running, 2 bad flags or model.
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "gen_util.h"
#include "generate.h"
#include "gguf_generate.h"
#include "mhsa_model.h"
#include "mhsa_train.h"
#include "perplexity.h"

// ---- the run ----------------------------------------------------------------

typedef struct gen_run {
    gen_args a;
    mhsa_gpt *g;
    mhsa_gpt_cache *cache;
    int32_t *ctx;             // the whole text: prompt then generated
    float *logits;            // (V)
    mhsa_sampler *sampler;    // temperature, top-k, seed
} gen_run;

// Fills an empty cache with ctx[from .. to) and the logits of its end.
static int prefill(gen_run *r, size_t from, size_t to)
{
    mhsa_gpt_cache_reset(r->cache);
    if (mhsa_gpt_forward_cached(r->g, r->cache, r->ctx + from,
                                (int)(to - from), r->logits) != MHSA_OK)
        return gen_fail("prefill");
    return CLI_OK;
}

static int generate(gen_run *r)
{
    const mhsa_gpt_config *c = mhsa_gpt_get_config(r->g);
    int block = c->block_size;
    size_t np = r->a.prompt_len, n = np;
    if (np == 0) {
        r->ctx[0] = '\n';
        n = 1;
    }
    for (size_t i = 0; i < np; i++)
        r->ctx[i] = (unsigned char)r->a.prompt[i];
    for (size_t i = 0; i < n; i++)
        if (r->ctx[i] >= c->vocab) {
            fprintf(stderr, "mhsa-generate: %s: byte %d at offset %zu is "
                    "outside the model's vocabulary of %d\n",
                    gen_prompt_flag(&r->a), (int)r->ctx[i], i, c->vocab);
            return CLI_USAGE;
        }
    fwrite(r->a.prompt, 1, np, stdout);
    fflush(stdout);
    // A prompt longer than the block: its last block is the context.
    size_t from = n > (size_t)block ? n - (size_t)block : 0;
    double t0 = gen_now_s();
    if (prefill(r, from, n) != CLI_OK)
        return CLI_FAIL;
    double t_prefill = gen_now_s() - t0, t_decode = 0.0, t1 = 0.0;
    size_t pre = n - from;
    for (int i = 0; i < r->a.n; i++) {
        int32_t tok;
        if (mhsa_sampler_sample(r->sampler, r->logits, (size_t)c->vocab,
                                NULL, 0, &tok) != MHSA_OK)
            return gen_fail("sampling");
        // A decoding step: the forward of the token before, then this
        // sampling (the first token's sampling goes with no step).
        if (i > 0)
            t_decode += gen_now_s() - t1;
        r->ctx[n++] = tok;
        putchar(tok);
        if (tok == '\n')
            fflush(stdout);
        if (i + 1 == r->a.n)
            break;
        t1 = gen_now_s();
        int rc;
        if (mhsa_gpt_cache_len(r->cache) < block)
            rc = mhsa_gpt_forward_cached(r->g, r->cache, r->ctx + n - 1, 1,
                                         r->logits) == MHSA_OK ? CLI_OK
                                                               : gen_fail("decode");
        else
            rc = prefill(r, n - (size_t)(block / 2 > 0 ? block / 2 : 1), n);
        if (rc != CLI_OK)
            return rc;
    }
    printf("\n");
    fflush(stdout);
    fprintf(stderr, "mhsa-generate: prefill %zu tokens in %.2f ms (%.0f "
            "tokens/s); decode %d tokens in %.2f ms (%.0f tokens/s); %d "
            "thread%s, isa %s, weights %.1f kB %s\n", pre, 1e3 * t_prefill,
            (double)pre / (t_prefill + 1e-12), r->a.n > 0 ? r->a.n - 1 : 0,
            1e3 * t_decode,
            (double)(r->a.n > 1 ? r->a.n - 1 : 0) / (t_decode + 1e-12),
            omp_get_max_threads(), omp_get_max_threads() == 1 ? "" : "s",
            mhsa_isa_name(mhsa_active_isa()),
            (double)mhsa_gpt_weight_bytes(r->g) / 1e3,
            r->a.weight_dtype == MHSA_F16 ? "f16"
            : r->a.weight_dtype == MHSA_BF16 ? "bf16" : "f32");
    return CLI_OK;
}

static int setup(gen_run *r)
{
    gen_args *a = &r->a;
    gen_set_threads(a->threads);
    if (a->isa != MHSA_ISA_AUTO && mhsa_select_isa(a->isa) != MHSA_OK) {
        fprintf(stderr, "mhsa-generate: --isa %s: not available on this "
                "machine or build\n", mhsa_isa_name(a->isa));
        return CLI_USAGE;
    }
    mhsa_gpt_config c;
    if (mhsa_gpt_read_config(a->model, &c) != MHSA_OK) {
        fprintf(stderr, "mhsa-generate: --model %s\n", mhsa_last_error());
        return CLI_USAGE;
    }
    c.max_batch = 1;
    // (The default, the file's own types, is fp32 for a checkpoint.)
    c.weight_dtype = a->weight_dtype == GEN_WEIGHTS_FILE ? (int)MHSA_F32
                                                         : a->weight_dtype;
    if (mhsa_gpt_create(&c, &r->g) != MHSA_OK ||
        mhsa_gpt_load(r->g, a->model, 0) != MHSA_OK) {
        fprintf(stderr, "mhsa-generate: --model %s\n", mhsa_last_error());
        return CLI_USAGE;
    }
    if (mhsa_gpt_cache_create(r->g, c.block_size, &r->cache) != MHSA_OK)
        return gen_fail("creating the cache");
    size_t total = a->prompt_len + (size_t)a->n + 1;
    r->ctx = malloc(total * sizeof(int32_t));
    r->logits = malloc((size_t)c.vocab * sizeof(float));
    if (!r->ctx || !r->logits) {
        fprintf(stderr, "mhsa-generate: out of memory\n");
        return CLI_FAIL;
    }
    return gen_sampler(a, c.vocab, &r->sampler);
}

int mhsa_generate_cli(int argc, char **argv)
{
    gen_run r;
    memset(&r, 0, sizeof r);
    int rc = parse_gen_args(argc, argv, &r.a, stderr);
    if (rc == CLI_OK && r.a.help) {
        print_gen_help(stdout);
        return CLI_OK;
    }
    int is_gguf = 0;
    if (rc == CLI_OK)
        rc = gen_model_kind(stderr, r.a.model, &is_gguf);
    if (rc == CLI_OK && !is_gguf && r.a.gguf_only) {
        fprintf(stderr, "mhsa-generate: --kv-dtype, --ctx, --ids, --bench, "
                "--no-parse-special, --special, --perplexity and "
                "--weight-dtype file are for GGUF models; %s is a GPT "
                "checkpoint\n",
                gen_quote(r.a.model));
        rc = CLI_USAGE;
    }
    if (rc == CLI_OK)
        rc = gen_read_prompt(&r.a, stderr);
    if (rc == CLI_OK && is_gguf) {
        rc = r.a.perplexity ? mhsa_generate_perplexity(&r.a)
                            : mhsa_generate_gguf(&r.a);
        gen_args_free(&r.a);
        return rc;
    }
    if (rc == CLI_OK)
        rc = setup(&r);
    if (rc == CLI_OK)
        rc = generate(&r);
    mhsa_gpt_cache_destroy(r.cache);
    mhsa_gpt_destroy(r.g);
    free(r.ctx);
    free(r.logits);
    mhsa_sampler_destroy(r.sampler);
    gen_args_free(&r.a);
    return rc;
}
