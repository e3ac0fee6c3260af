// generate.c — mhsa-generate: load a GPT checkpoint (mhsa-train --task text
// --save, or tools/gpt_peer.py --save), prefill the prompt, then decode one
// byte at a time through the KV cache of every layer
// (mhsa_gpt_forward_cached -> mhsa_forward_cached), sampling with a
// temperature and top-k from a seeded splitmix64 stream.
//
// The text goes to stdout as it is made; the timings (prefill and decode
// tokens/s, model time only) to stderr. The logits are the same bits on any
// thread count, so the same seed gives the same text.
//
// A context longer than the model's block: when the cache is full, the
// last half block of text is prefilled again into an empty cache (learned
// positions stop at block_size), and decoding goes on from there; that
// refill counts as decoding time.
//
// Exit status: 0 done, 1 a failure while running, 2 bad flags or model.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "generate.h"
#include "train/train_internal.h"

static void print_gen_help(FILE *f)
{
    fprintf(f,
"usage: mhsa-generate --model FILE [options]\n"
"Samples text from a GPT checkpoint (mhsa-train --task text --save) or a\n"
"Llama-architecture GGUF model (llama.cpp's format): prefills the prompt,\n"
"then decodes token by token through the KV cache.\n"
"\n"
"  --model FILE        a checkpoint (.safetensors) or a GGUF model\n"
"  --prompt TEXT       text to continue (default: a newline)\n"
"  -n N                bytes to generate (200)\n"
"  --temperature T     0: always the likeliest byte; higher: more varied\n"
"                      (0.8)\n"
"  --top-k K           sample among the K likeliest bytes; 0: all (40)\n"
"  --seed S            seed of the sampling; same seed, same text (1)\n"
"  --threads N         OpenMP threads (default: OMP_NUM_THREADS or all)\n"
"  --isa auto|scalar|avx2|avx512|neon  kernels to use (auto)\n"
"  --weight-dtype f32|f16|bf16  storage of the weight matrices (f32): the\n"
"                      file's weights (a GGUF's dequantized) rounded to 16\n"
"                      bits, half the bytes read per token; the norms and\n"
"                      biases stay f32\n"
"GGUF models only:\n"
"  --kv-dtype f32|f16|bf16  storage of the KV cache (f32)\n"
"  --ctx N             cache positions (default: prompt + -n tokens)\n"
"  --ids               print the prompt's and the new token ids\n"
"                      (prompt_ids: ... / new_ids: ...) instead of text\n"
"  --bench             time a 512-token prefill and 64 decoded tokens\n"
"                      (as llama-bench's pp512 and tg64) and the time to\n"
"                      first token of a 16-token prompt\n"
"  --no-parse-special  special tokens' text in the prompt (such as\n"
"                      <|im_start|>) is plain text, not the token\n"
"  --special           print control tokens' text (as llama-cli --special)\n"
"  --help              this text\n"
"\n"
"The prompt and the text go to stdout; prefill and decode tokens/s to\n"
"stderr. Exit status: 0 done, 1 runtime failure, 2 bad option or model.\n");
}

static int usage(FILE *err, const char *msg, const char *what)
{
    fprintf(err, "mhsa-generate: %s%s\n", msg, what);
    return CLI_USAGE;
}

static int parse_gen_args_as(int argc, char **argv, gen_args *a, FILE *err)
{
    memset(a, 0, sizeof *a);
    a->prompt = "\n";
    a->n = 200;
    a->top_k = 40;
    a->temperature = 0.8f;
    a->seed = 1;
    a->isa = MHSA_ISA_AUTO;
    a->kv_dtype = MHSA_F32;
    a->weight_dtype = MHSA_F32;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            a->help = 1;
            return CLI_OK;
        }
        static const char *const flags[] = {
            "--ids", "--bench", "--no-parse-special", "--special",
        };
        int *const flag_of[] = {
            &a->ids, &a->bench, &a->no_parse_special, &a->special,
        };
        int is_flag = 0;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            if (!strcmp(arg, flags[k]))
                *flag_of[k] = is_flag = 1;
        if (is_flag) {
            a->gguf_only = 1;
            continue;
        }
        char flag[32];
        const char *eq = strncmp(arg, "--", 2) ? NULL : strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof flag || arg[0] != '-')
            return usage(err, arg, ": unexpected argument (see --help)");
        memcpy(flag, arg, len);
        flag[len] = '\0';
        static const char *const known[] = {
            "--model", "--prompt", "-n", "--temperature", "--top-k",
            "--seed", "--threads", "--isa", "--kv-dtype", "--weight-dtype",
            "--ctx",
        };
        int found = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            found |= !strcmp(flag, known[k]);
        if (!found)
            return usage(err, flag, ": unknown option (see --help)");
        const char *val;
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return usage(err, flag, " needs a value");
        int rc = CLI_OK;
        if (!strcmp(flag, "--model")) {
            if (!*val)
                return usage(err, flag, " needs a file name");
            a->model = val;
        } else if (!strcmp(flag, "--prompt")) {
            a->prompt = val;
        } else if (!strcmp(flag, "-n")) {
            rc = args_int(err, flag, val, 0, 1 << 30, &a->n);
        } else if (!strcmp(flag, "--temperature")) {
            rc = args_float(err, flag, val, 1, &a->temperature);
        } else if (!strcmp(flag, "--top-k")) {
            rc = args_int(err, flag, val, 0, 1 << 24, &a->top_k);
        } else if (!strcmp(flag, "--seed")) {
            rc = args_u64(err, flag, val, &a->seed);
        } else if (!strcmp(flag, "--threads")) {
            rc = args_int(err, flag, val, 1, 1024, &a->threads);
        } else if (!strcmp(flag, "--ctx")) {
            rc = args_int(err, flag, val, 1, 1 << 24, &a->ctx);
            a->gguf_only = 1;
        } else if (!strcmp(flag, "--kv-dtype") ||
                   !strcmp(flag, "--weight-dtype")) {
            a->gguf_only |= flag[2] == 'k';
            mhsa_dtype *dt = flag[2] == 'k' ? &a->kv_dtype : &a->weight_dtype;
            if (!strcmp(val, "f32"))
                *dt = MHSA_F32;
            else if (!strcmp(val, "f16"))
                *dt = MHSA_F16;
            else if (!strcmp(val, "bf16"))
                *dt = MHSA_BF16;
            else
                return usage(err, flag[2] == 'k'
                             ? "--kv-dtype must be f32, f16 or bf16, not "
                             : "--weight-dtype must be f32, f16 or bf16, "
                               "not ", val);
        } else {
            rc = args_isa(err, flag, val, &a->isa);
        }
        if (rc != CLI_OK)
            return rc;
    }
    if (!a->model)
        return usage(err, "--model FILE is required", "");
    return CLI_OK;
}

// ---- sampling ---------------------------------------------------------------

int parse_gen_args(int argc, char **argv, gen_args *a, FILE *err)
{
    // The shared value parsers name the program in their messages; a test
    // may run mhsa-train in the same process afterwards.
    const char *prog = args_prog;
    args_prog = "mhsa-generate";
    int rc = parse_gen_args_as(argc, argv, a, err);
    args_prog = prog;
    return rc;
}

int sample_token(const float *logits, int V, float temperature, int top_k,
                 uint64_t *rng, int *order)
{
    if (temperature <= 0.0f) {
        int best = 0;
        for (int j = 1; j < V; j++)
            if (logits[j] > logits[best])
                best = j;
        return best;
    }
    int k = top_k > 0 && top_k < V ? top_k : V;
    // The k largest, by value then index (a partial selection sort: V is a
    // byte vocabulary, and k is small).
    for (int j = 0; j < V; j++)
        order[j] = j;
    for (int i = 0; i < k; i++) {
        int m = i;
        for (int j = i + 1; j < V; j++)
            if (logits[order[j]] > logits[order[m]] ||
                (logits[order[j]] == logits[order[m]] && order[j] < order[m]))
                m = j;
        int t = order[i];
        order[i] = order[m];
        order[m] = t;
    }
    double top = (double)logits[order[0]] / temperature, sum = 0.0;
    for (int i = 0; i < k; i++)
        sum += exp((double)logits[order[i]] / temperature - top);
    double u = (double)(mhsa__splitmix64(rng) >> 11) * 0x1.0p-53 * sum;
    double c = 0.0;
    for (int i = 0; i < k; i++) {
        c += exp((double)logits[order[i]] / temperature - top);
        if (u < c)
            return order[i];
    }
    return order[k - 1];
}

// ---- the run ----------------------------------------------------------------

double gen_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int gen_fail(const char *what)
{
    fprintf(stderr, "mhsa-generate: %s: %s\n", what, mhsa_last_error());
    return CLI_FAIL;
}

typedef struct gen_run {
    gen_args a;
    mhsa_gpt *g;
    mhsa_gpt_cache *cache;
    int32_t *ctx;             // the whole text: prompt then generated
    float *logits;            // (V)
    int *order;               // (V) scratch of sample_token
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
    size_t np = strlen(r->a.prompt), n = np;
    if (np == 0) {
        r->ctx[0] = '\n';
        n = 1;
    }
    for (size_t i = 0; i < np; i++)
        r->ctx[i] = (unsigned char)r->a.prompt[i];
    for (size_t i = 0; i < n; i++)
        if (r->ctx[i] >= c->vocab) {
            fprintf(stderr, "mhsa-generate: --prompt byte %d is outside the "
                    "model's vocabulary of %d\n", (int)r->ctx[i], c->vocab);
            return CLI_USAGE;
        }
    fwrite(r->a.prompt, 1, np, stdout);
    fflush(stdout);
    // A prompt longer than the block: its last block is the context.
    size_t from = n > (size_t)block ? n - (size_t)block : 0;
    double t0 = gen_now_s();
    if (prefill(r, from, n) != CLI_OK)
        return CLI_FAIL;
    double t_prefill = gen_now_s() - t0, t_decode = 0.0;
    size_t pre = n - from;
    uint64_t rng = r->a.seed;
    for (int i = 0; i < r->a.n; i++) {
        int tok = sample_token(r->logits, c->vocab, r->a.temperature,
                               r->a.top_k, &rng, r->order);
        r->ctx[n++] = tok;
        putchar(tok);
        if (tok == '\n')
            fflush(stdout);
        if (i + 1 == r->a.n)
            break;
        double t1 = gen_now_s();
        int rc;
        if (mhsa_gpt_cache_len(r->cache) < block)
            rc = mhsa_gpt_forward_cached(r->g, r->cache, r->ctx + n - 1, 1,
                                         r->logits) == MHSA_OK ? CLI_OK
                                                               : gen_fail("decode");
        else
            rc = prefill(r, n - (size_t)(block / 2 > 0 ? block / 2 : 1), n);
        t_decode += gen_now_s() - t1;
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
            r->a.weight_dtype == MHSA_F32 ? "f32"
            : r->a.weight_dtype == MHSA_F16 ? "f16" : "bf16");
    return CLI_OK;
}

static int setup(gen_run *r)
{
    gen_args *a = &r->a;
    if (a->threads > 0)
        omp_set_num_threads(a->threads);
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
    c.weight_dtype = (int)a->weight_dtype;
    if (mhsa_gpt_create(&c, &r->g) != MHSA_OK ||
        mhsa_gpt_load(r->g, a->model, 0) != MHSA_OK) {
        fprintf(stderr, "mhsa-generate: --model %s\n", mhsa_last_error());
        return CLI_USAGE;
    }
    if (mhsa_gpt_cache_create(r->g, c.block_size, &r->cache) != MHSA_OK)
        return gen_fail("creating the cache");
    size_t total = strlen(a->prompt) + (size_t)a->n + 1;
    r->ctx = malloc(total * sizeof(int32_t));
    r->logits = malloc((size_t)c.vocab * sizeof(float));
    r->order = malloc((size_t)c.vocab * sizeof(int));
    if (!r->ctx || !r->logits || !r->order) {
        fprintf(stderr, "mhsa-generate: out of memory\n");
        return CLI_FAIL;
    }
    return CLI_OK;
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
    if (rc == CLI_OK && mhsa_is_gguf(r.a.model))
        return mhsa_generate_gguf(&r.a);
    if (rc == CLI_OK && r.a.gguf_only) {
        fprintf(stderr, "mhsa-generate: --kv-dtype, --ctx, --ids, --bench, "
                "--no-parse-special and --special are for GGUF models; %s is a GPT checkpoint\n", r.a.model);
        rc = CLI_USAGE;
    }
    if (rc == CLI_OK)
        rc = setup(&r);
    if (rc == CLI_OK)
        rc = generate(&r);
    mhsa_gpt_cache_destroy(r.cache);
    mhsa_gpt_destroy(r.g);
    free(r.ctx);
    free(r.logits);
    free(r.order);
    return rc;
}
