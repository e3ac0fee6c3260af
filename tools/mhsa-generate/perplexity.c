// perplexity.c — mhsa-generate --perplexity FILE (perplexity.h): a text's
// perplexity under a GGUF model, computed as llama.cpp's llama-perplexity
// -f FILE -c N computes it (perplexity() in examples/perplexity/
// perplexity.cpp, commit c392e50), so that the two numbers compare:
//
// - the text, less one final newline (args.c, as llama.cpp's -f), is
//   tokenized once as common_tokenize(ctx, text, add_special = true,
//   parse_special = false) does: BOS first where the model adds one,
//   special tokens' text as plain text. A model that adds EOS is refused,
//   as llama.cpp asserts it does not;
// - the tokens are cut into n_chunk = n_tokens / N chunks of N tokens
//   (the rest is left out), and at least 2 chunks are needed (llama.cpp:
//   "you need at least 2*N tokens");
// - each chunk runs from an empty KV cache, its first token replaced by
//   BOS where the model adds one;
// - of each chunk only the second half counts: with first = N / 2, the
//   logits of positions first .. N - 2 predict tokens first + 1 .. N - 1,
//   each scored as -log softmax(logits)[token], the log-softmax as
//   llama.cpp's: float max, a double sum of expf(logit - max), then
//   (logit[token] - max) - log(sum) in double;
// - PPL = exp(the mean over all scored tokens), the running value printed
//   after each chunk as "[k]x," and the final one with its +/- (llama.cpp's
//   standard error of the mean NLL, times PPL).
//
// The forward runs each chunk in pieces of at most `batch` tokens (so that
// the logits held stay near 64 MiB, whatever N): the first half with the
// last row's logits only (they are not scored), the second half with every
// row's, each piece scored before the next. The last token of a chunk is
// only a target: it is not run. The NLL is summed in token order, so the
// result is the same on any number of threads.
#include "perplexity.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_util.h"
#include "gguf_generate.h"
#include "mhsa_model.h"

// Logits held at once: 2^24 floats (64 MiB), at most 512 rows.
enum { PPL_LOGIT_FLOATS = 1 << 24, PPL_MAX_BATCH = 512 };

typedef struct ppl_run {
    const gen_args *a;
    mhsa_model *vocab;   // the tokenizer and metadata (vocab_only)
    mhsa_model *m;
    mhsa_seq *seq;
    int32_t *ids;        // the text's tokens
    size_t n_ids, V;
    int n_ctx, batch, add_bos;
    int32_t *chunk;      // (n_ctx) one chunk, its first token BOS
    float *logits;       // (batch, V)
    double *nll;         // (batch) one piece's scores
} ppl_run;

static void run_free(ppl_run *r)
{
    mhsa_seq_destroy(r->seq);
    mhsa_model_free(r->m);
    mhsa_model_free(r->vocab);
    free(r->ids);
    free(r->chunk);
    free(r->logits);
    free(r->nll);
}

static int no_memory(void)
{
    fprintf(stderr, "mhsa-generate: --perplexity: out of memory\n");
    return CLI_FAIL;
}

// The text's tokens, as common_tokenize(ctx, text, true) makes them.
static int tokenize(ppl_run *r)
{
    size_t cap;
    return gen_tokenize(r->a, r->vocab, MHSA_TOKENIZE_ADD_SPECIAL, 0,
                        &r->ids, &r->n_ids, &cap);
}

// The chunk size: --ctx, else the default (the model's context when
// less), checked against the model and the text.
static int pick_ctx(ppl_run *r)
{
    const gen_args *a = r->a;
    int context = mhsa_model_n_ctx_train(r->vocab);
    if (a->ctx > context) {
        fprintf(stderr, "mhsa-generate: --ctx %d is more than the model's "
                "context of %d positions\n", a->ctx, context);
        return CLI_USAGE;
    }
    int n = a->ctx ? a->ctx : context < GEN_PPL_DEFAULT_CTX
                              ? context : GEN_PPL_DEFAULT_CTX;
    if (n < 3) {
        if (a->ctx)
            fprintf(stderr, "mhsa-generate: --ctx %d is too small for "
                    "--perplexity: a chunk of N tokens scores its last "
                    "N - N/2 - 1, none below 3\n", n);
        else
            fprintf(stderr, "mhsa-generate: the model's context of %d "
                    "positions is too small for --perplexity (chunks of "
                    "at least 3 tokens)\n", n);
        return CLI_USAGE;
    }
    if (r->n_ids < 2 * (size_t)n) {
        fprintf(stderr, "mhsa-generate: %s: the text is %zu tokens; a "
                "context of %d%s needs at least %zu (2 chunks), as "
                "llama-perplexity does\n", gen_prompt_flag(a), r->n_ids, n,
                a->ctx ? "" : " (the default --ctx)", 2 * (size_t)n);
        return CLI_USAGE;
    }
    r->n_ctx = n;
    return CLI_OK;
}

static int setup(ppl_run *r)
{
    const gen_args *a = r->a;
    int rc = gen_gguf_start(a, &r->vocab);
    if (rc != CLI_OK)
        return rc;
    if (mhsa_model_adds_eos(r->vocab)) {
        fprintf(stderr, "mhsa-generate: --model %s: the model adds EOS to "
                "every text (tokenizer.ggml.add_eos_token), which "
                "llama-perplexity refuses too\n", gen_quote(a->model));
        return CLI_USAGE;
    }
    r->add_bos = mhsa_model_adds_bos(r->vocab) &&
                 mhsa_model_bos(r->vocab) >= 0;
    rc = tokenize(r);
    if (rc == CLI_OK)
        rc = pick_ctx(r);
    if (rc != CLI_OK)
        return rc;
    mhsa_model_params p = {0};
    p.weights = (int)gen_weights(a);
    p.context = r->n_ctx;
    if (mhsa_model_load(a->model, &p, &r->m) != MHSA_OK ||
        mhsa_seq_create(r->m, a->kv_dtype, &r->seq) != MHSA_OK)
        return gen_model_error(a);
    mhsa_model_free(r->vocab);   // the model has its own tokenizer
    r->vocab = NULL;
    size_t V = (size_t)mhsa_model_n_vocab(r->m);
    r->V = V;
    int scored = r->n_ctx - r->n_ctx / 2 - 1;
    size_t b = PPL_LOGIT_FLOATS / V;
    b = b < 1 ? 1 : b > PPL_MAX_BATCH ? PPL_MAX_BATCH : b;
    r->batch = (size_t)scored < b ? scored : (int)b;
    r->chunk = malloc((size_t)r->n_ctx * sizeof(int32_t));
    r->logits = malloc((size_t)r->batch * V * sizeof(float));
    r->nll = malloc((size_t)r->batch * sizeof(double));
    if (!r->chunk || !r->logits || !r->nll)
        return no_memory();
    return CLI_OK;
}

// -log softmax(z)[tok] as llama.cpp's log_softmax(n_vocab, logits, tok)
// computes it (float max, double sum of float expf terms).
static double token_nll(const float *z, int V, int tok)
{
    float max = z[0];
    for (int i = 1; i < V; i++)
        if (max < z[i])
            max = z[i];
    double sum = 0.0;
    for (int i = 0; i < V; i++)
        sum += (double)expf(z[i] - max);
    return -((double)(z[tok] - max) - log(sum));
}

// One chunk from an empty cache; its scores added to *nll and *nll2.
static int run_chunk(ppl_run *r, size_t start, double *nll, double *nll2)
{
    int N = r->n_ctx, first = N / 2, V = (int)r->V;
    size_t cap = (size_t)r->batch * r->V;
    memcpy(r->chunk, r->ids + start, (size_t)N * sizeof(int32_t));
    if (r->add_bos)
        r->chunk[0] = mhsa_model_bos(r->m);
    mhsa_seq_reset(r->seq);
    for (int p = 0; p < first; p += r->batch) {
        int n = first - p < r->batch ? first - p : r->batch;
        if (mhsa_seq_eval(r->seq, r->chunk + p, (size_t)n, MHSA_LOGITS_LAST,
                          r->logits, cap) != MHSA_OK)
            return gen_fail("perplexity");
    }
    for (int p = first; p < N - 1; p += r->batch) {
        int n = N - 1 - p < r->batch ? N - 1 - p : r->batch;
        if (mhsa_seq_eval(r->seq, r->chunk + p, (size_t)n, MHSA_LOGITS_ALL,
                          r->logits, cap) != MHSA_OK)
            return gen_fail("perplexity");
        const float *z = r->logits;
        const int32_t *next = r->chunk + p + 1;
        double *v = r->nll;
#pragma omp parallel for schedule(static)
        for (int k = 0; k < n; k++)
            v[k] = token_nll(z + (size_t)k * (size_t)V, V, next[k]);
        for (int k = 0; k < n; k++) {
            *nll += v[k];
            *nll2 += v[k] * v[k];
        }
    }
    return CLI_OK;
}

static int score(ppl_run *r)
{
    int N = r->n_ctx, first = N / 2;
    size_t n_chunk = r->n_ids / (size_t)N, count = 0;
    fprintf(stderr, "mhsa-generate: %s: %zu tokens, %zu chunks of %d, "
            "each scored on its last %d\n", gen_prompt_flag(r->a), r->n_ids,
            n_chunk, N, N - first - 1);
    double nll = 0.0, nll2 = 0.0, t0 = gen_now_s();
    for (size_t c = 0; c < n_chunk; c++) {
        if (run_chunk(r, c * (size_t)N, &nll, &nll2) != CLI_OK) {
            fprintf(stderr, "\n");
            return CLI_FAIL;
        }
        count += (size_t)(N - first - 1);
        fprintf(stderr, "[%zu]%.4f,", c + 1, exp(nll / (double)count));
        fflush(stderr);
    }
    double t = gen_now_s() - t0;
    fprintf(stderr, "\n");
    double mean = nll / (double)count, ppl = exp(mean);
    double var = nll2 / (double)count - mean * mean;
    if (var > 0.0 && count > 1)
        fprintf(stderr, "Final estimate: PPL = %.4f +/- %.5f\n", ppl,
                sqrt(var / (double)(count - 1)) * ppl);
    else
        fprintf(stderr, "Final estimate: PPL = %.4f\n", ppl);
    size_t run = n_chunk * (size_t)(N - 1);
    fprintf(stderr, "mhsa-generate: %zu chunks (%zu tokens run, %zu scored)"
            " in %.2f s (%.1f tokens/s); %d thread%s, isa %s\n", n_chunk,
            run, count, t, (double)run / (t + 1e-12), omp_get_max_threads(),
            omp_get_max_threads() == 1 ? "" : "s",
            mhsa_isa_name(mhsa_active_isa()));
    printf("perplexity: %.4f\n", ppl);
    fflush(stdout);
    return CLI_OK;
}

int mhsa_generate_perplexity(const gen_args *a)
{
    ppl_run r;
    memset(&r, 0, sizeof r);
    r.a = a;
    int rc = setup(&r);
    if (rc == CLI_OK)
        rc = score(&r);
    run_free(&r);
    return rc;
}
