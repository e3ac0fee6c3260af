// serve.c — continuous batching over a fixed pool of KV-cache slots, the
// way a server keeps many requests decoding at once.
//
//   serve [--d-model D] [--heads H] [--kv-heads HKV] [--rope R]
//         [--window W] [--dtype f32|f16|bf16] [--slots S] [--requests N]
//         [--prompt MIN..MAX] [--output MIN..MAX] [--chunk C]
//         [--arrival GAP] [--seed SEED] [--check]
//
// Requests (a prompt of random length, then a random number of tokens to
// generate) arrive in a queue. ONE KV cache with max_batch = S holds S
// slots; slot s is sequence s of every call. Each step:
//   1. every free slot takes the next request that has arrived;
//   2. one mhsa_forward_cached_ex call advances every busy slot: a slot
//      still reading its prompt appends the next chunk of it (n_new[s] up
//      to C), a generating slot appends its one newest token (n_new[s] =
//      1), a free slot nothing (n_new[s] = 0), so prefill and decode share
//      the call (chunked prefill);
//   3. a request that has its tokens gives its slot back with
//      mhsa_kv_cache_reset_seq, and the next request reuses it.
// The prompt's last row yields the first generated token, as in a language
// model; each later token costs one decode step. Tokens are looked up in a
// random embedding table (one attention block stands in for the model,
// and the "sampled" token ids come from a hash, so runs are reproducible).
//
// Everything is allocated before the loop; the loop allocates nothing
// (the test build, linked with count_allocs.c, counts every allocation
// the program and the library make during it and fails if there is one).
// --check then replays every request alone through a fresh cache of the
// same dtype (and, for F32, through one full causal mhsa_forward) and
// compares its outputs: a sequence's results must not depend on the
// slot, the batch around it, or the requests the slot served before.
//
// Printed: tokens/s (prompt, generated, all), per-step latency p50/p99/max,
// slot occupancy, and how many of the rows the calls computed were tokens
// (x_new is (B, t_new, D) with t_new the longest n_new of the step).
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "mhsa.h"

#define EXAMPLE_NAME "serve"
#include "example_util.h"

#ifdef SERVE_COUNT_ALLOCS
size_t count_allocs_calls(void);   // count_allocs.c: allocations so far
#endif

enum { VOCAB = 1024 };   // rows of the embedding table

typedef struct options {
    int D, H, Hkv, rope, window;
    mhsa_dtype dtype;
    int slots, requests, chunk;
    int prompt_min, prompt_max, out_min, out_max;
    double arrival;      // mean steps between arrivals; 0: all at step 0
    uint64_t seed;
    int check;
} options;

typedef struct request {
    int prompt, output;  // tokens of the prompt; tokens to generate
    long arrival;        // step at which it joins the queue
    size_t y_off;        // --check: its first output row in the record
} request;

typedef struct slot {
    int req;             // request served, -1 when free
    int pos;             // tokens cached (= position of the next token)
    int generated;       // tokens generated so far
} slot;

// ---- command line -----------------------------------------------------------

static void usage(FILE *f)
{
    fprintf(f,
        "usage: serve [--d-model D] [--heads H] [--kv-heads HKV] [--rope R]\n"
        "             [--window W] [--dtype f32|f16|bf16] [--slots S]\n"
        "             [--requests N] [--prompt MIN..MAX] [--output MIN..MAX]\n"
        "             [--chunk C] [--arrival GAP] [--seed SEED] [--check]\n");
}

// Bad input: one line naming the flag, exit status 2.
static void bad(const char *flag, const char *val, const char *want)
{
    fprintf(stderr, "serve: %s: '%s' %s\n", flag, val, want);
    exit(2);
}

static int parse_int(const char *flag, const char *s, int lo, int hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) {
        char want[64];
        snprintf(want, sizeof want, "is not an integer in %d..%d", lo, hi);
        bad(flag, s, want);
    }
    return (int)v;
}

// "MIN..MAX" or "N" (= N..N), within lo..hi.
static void parse_range(const char *flag, const char *s, int lo, int hi,
                        int *min, int *max)
{
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end != s && strncmp(end, "..", 2) == 0) {
        const char *t = end + 2;
        b = strtol(t, &end, 10);
        if (end == t)
            end = (char *)s;   // no number after ".."
    }
    if (end == s || *end || a < lo || b > hi || a > b) {
        char want[80];
        snprintf(want, sizeof want,
                 "is not a range MIN..MAX with %d <= MIN <= MAX <= %d", lo,
                 hi);
        bad(flag, s, want);
    }
    *min = (int)a;
    *max = (int)b;
}

// An int as text, for messages about a value already parsed.
static const char *argv_value(int v)
{
    static char buf[16];
    snprintf(buf, sizeof buf, "%d", v);
    return buf;
}

static options parse(int argc, char **argv)
{
    options o = { 512, 8, 0, 0, 0, MHSA_F32, 8, 64, 64,
                  16, 1024, 16, 256, 0.0, 1, 0 };
    static const struct option longs[] = {
        { "d-model", required_argument, NULL, 'd' },
        { "heads", required_argument, NULL, 'H' },
        { "kv-heads", required_argument, NULL, 'k' },
        { "rope", required_argument, NULL, 'r' },
        { "window", required_argument, NULL, 'w' },
        { "dtype", required_argument, NULL, 't' },
        { "slots", required_argument, NULL, 's' },
        { "requests", required_argument, NULL, 'n' },
        { "prompt", required_argument, NULL, 'p' },
        { "output", required_argument, NULL, 'o' },
        { "chunk", required_argument, NULL, 'c' },
        { "arrival", required_argument, NULL, 'a' },
        { "seed", required_argument, NULL, 'S' },
        { "check", no_argument, NULL, 'C' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    opterr = 0;   // our own one-line messages
    int opt, idx;
    while ((opt = getopt_long(argc, argv, ":d:H:h", longs, &idx)) != -1) {
        const char *flag = argv[optind - 1];
        switch (opt) {
        case 'd': o.D = parse_int("--d-model", optarg, 1, 1 << 16); break;
        case 'H': o.H = parse_int("--heads", optarg, 1, 1 << 12); break;
        case 'k': o.Hkv = parse_int("--kv-heads", optarg, 1, 1 << 12); break;
        case 'r': o.rope = parse_int("--rope", optarg, 0, 1 << 16); break;
        case 'w': o.window = parse_int("--window", optarg, 0, 1 << 30); break;
        case 's': o.slots = parse_int("--slots", optarg, 1, 4096); break;
        case 'n': o.requests = parse_int("--requests", optarg, 1, 1 << 24);
                  break;
        case 'c': o.chunk = parse_int("--chunk", optarg, 1, 1 << 20); break;
        case 'p': parse_range("--prompt", optarg, 1, 1 << 20, &o.prompt_min,
                              &o.prompt_max);
                  break;
        case 'o': parse_range("--output", optarg, 1, 1 << 20, &o.out_min,
                              &o.out_max);
                  break;
        case 't':
            if (strcmp(optarg, "f32") == 0)
                o.dtype = MHSA_F32;
            else if (strcmp(optarg, "f16") == 0)
                o.dtype = MHSA_F16;
            else if (strcmp(optarg, "bf16") == 0)
                o.dtype = MHSA_BF16;
            else
                bad("--dtype", optarg, "is not f32, f16 or bf16");
            break;
        case 'a': {
            char *end;
            o.arrival = strtod(optarg, &end);
            if (end == optarg || *end || !(o.arrival >= 0.0) ||
                o.arrival > 1e6)
                bad("--arrival", optarg, "is not a number in 0..1e6");
            break;
        }
        case 'S': {
            char *end;
            o.seed = strtoull(optarg, &end, 10);
            if (end == optarg || *end || optarg[0] == '-')
                bad("--seed", optarg, "is not an unsigned integer");
            break;
        }
        case 'C': o.check = 1; break;
        case 'h': usage(stdout); exit(0);
        case ':':
            fprintf(stderr, "serve: %s needs a value\n", flag);
            exit(2);
        default:
            fprintf(stderr, "serve: unknown flag %s\n", flag);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "serve: unexpected argument '%s'\n", argv[optind]);
        exit(2);
    }
    // The shape rules of mhsa_config, checked here to name the flag.
    char want[96];
    if (o.D % o.H) {
        snprintf(want, sizeof want, "does not divide --d-model %d", o.D);
        bad("--heads", argv_value(o.H), want);
    }
    if (o.Hkv == 0)
        o.Hkv = o.H;
    if (o.H % o.Hkv) {
        snprintf(want, sizeof want, "does not divide --heads %d", o.H);
        bad("--kv-heads", argv_value(o.Hkv), want);
    }
    if (o.rope % 2 || o.rope > o.D / o.H) {
        snprintf(want, sizeof want, "is not even and <= the head size %d",
                 o.D / o.H);
        bad("--rope", argv_value(o.rope), want);
    }
    return o;
}

// ---- deterministic randomness ----------------------------------------------

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Uniform in lo..hi.
static int draw(uint64_t *s, int lo, int hi)
{
    return lo + (int)(splitmix64(s) % (uint64_t)(hi - lo + 1));
}

// The token at position pos of request r: prompt tokens and "sampled"
// ones alike come from a hash, so a solo replay feeds the same tokens.
static const float *token(const float *embed, int D, uint64_t seed, int r,
                          int pos)
{
    uint64_t s = seed ^ ((uint64_t)r << 32) ^ (uint64_t)pos;
    return embed + (size_t)(splitmix64(&s) % VOCAB) * (size_t)D;
}

// ---- timing and statistics --------------------------------------------------

static const char *dtype_name(mhsa_dtype dt)
{
    return dt == MHSA_F16 ? "f16" : dt == MHSA_BF16 ? "bf16" : "f32";
}

// max |a - b| / max(1, max |b|), the API's relative error; NaN counts.
static double rel_err(const float *a, const float *b, size_t n)
{
    double num = 0.0, den = 1.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        num = d > num || d != d ? d : num;
        den = fabs((double)b[i]) > den ? fabs((double)b[i]) : den;
    }
    return num / den;
}

// ---- --check: every request alone -------------------------------------------

// Replays request r alone, prompt in one call then token by token, through
// slot 0 of a one-sequence cache of the same dtype; returns the relative
// error of the batched run's rows `got` against it (and, for an F32
// cache, the larger of that and the error against one causal forward
// over the whole sequence).
static double check_request(const mhsa_block *blk, mhsa_workspace *ws,
                            mhsa_kv_cache *solo, const float *embed,
                            const options *o, const request *rq, int r,
                            const float *got, float *x, float *y)
{
    size_t D = (size_t)o->D;
    int n = rq->prompt + rq->output - 1;   // tokens fed to the model
    for (int p = 0; p < n; p++)
        memcpy(x + (size_t)p * D, token(embed, o->D, o->seed, r, p),
               D * sizeof *x);
    CHECK(mhsa_kv_cache_reset_seq(solo, 0));
    mhsa_cached_args a = { x, 1, rq->prompt, NULL, y };
    CHECK(mhsa_forward_cached_ex(blk, ws, solo, &a));
    for (int p = rq->prompt; p < n; p++) {
        mhsa_cached_args d = { x + (size_t)p * D, 1, 1, NULL,
                               y + (size_t)p * D };
        CHECK(mhsa_forward_cached_ex(blk, ws, solo, &d));
    }
    double err = rel_err(got, y, (size_t)n * D);
    if (o->dtype == MHSA_F32) {
        CHECK(mhsa_forward(blk, ws, x, 1, n, NULL, y, NULL));
        double e = rel_err(got, y, (size_t)n * D);
        err = e > err || e != e ? e : err;
    }
    return err;
}

int main(int argc, char **argv)
{
    options o = parse(argc, argv);
    size_t D = (size_t)o.D, S = (size_t)o.slots;
    int capacity = o.prompt_max + o.out_max - 1;

    // ---- everything the loop needs, made up front ----
    mhsa_config cfg = {0};
    cfg.d_model = o.D;
    cfg.n_heads = o.H;
    cfg.max_seq_len = capacity;
    cfg.causal = 1;
    cfg.bias = 1;
    cfg.n_kv_heads = o.Hkv;
    cfg.rope_dim = o.rope;
    cfg.window = o.window;
    mhsa_block *blk = NULL;
    CHECK(mhsa_block_create(&cfg, &blk));
    CHECK(mhsa_block_init_random(blk, o.seed));
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *cache = NULL;
    mhsa_kv_config kc = { o.slots, capacity, o.dtype };
    CHECK(mhsa_workspace_create(blk, o.slots, &ws));
    CHECK(mhsa_kv_cache_create_ex(blk, &kc, &cache));

    size_t R = (size_t)o.requests, t_max = (size_t)o.chunk;
    request *req = calloc(R, sizeof *req);
    slot *sl = calloc(S, sizeof *sl);
    int *n_new = calloc(S, sizeof *n_new);
    float *embed = malloc((size_t)VOCAB * D * sizeof *embed);
    float *x = malloc(S * t_max * D * sizeof *x);
    float *y = malloc(S * t_max * D * sizeof *y);
    if (!req || !sl || !n_new || !embed || !x || !y) {
        fprintf(stderr, "serve: out of memory\n");
        return 1;
    }
    uint64_t rng = o.seed;
    for (size_t i = 0; i < (size_t)VOCAB * D; i++)
        embed[i] = (float)(splitmix64(&rng) >> 40) / (float)(1 << 23) - 1.0f;
    long prompt_tokens = 0, gen_tokens = 0;
    size_t record_rows = 0;
    double clock = 0.0;
    for (size_t r = 0; r < R; r++) {
        req[r].prompt = draw(&rng, o.prompt_min, o.prompt_max);
        req[r].output = draw(&rng, o.out_min, o.out_max);
        // Exponential gaps of mean --arrival steps (a Poisson stream).
        if (o.arrival > 0.0)
            clock += -o.arrival *
                     log(1.0 - (double)(splitmix64(&rng) >> 11) * 0x1p-53);
        req[r].arrival = (long)clock;
        req[r].y_off = record_rows;
        record_rows += (size_t)(req[r].prompt + req[r].output - 1);
        prompt_tokens += req[r].prompt;
        gen_tokens += req[r].output;
    }
    // Every step advances at least one token of some request.
    size_t max_steps = (size_t)(prompt_tokens + gen_tokens);
    double *lat = malloc(max_steps * sizeof *lat);
    float *record = o.check ? malloc(record_rows * D * sizeof *record) : NULL;
    if (!lat || (o.check && !record)) {
        fprintf(stderr, "serve: out of memory\n");
        return 1;
    }
    for (size_t s = 0; s < S; s++)
        sl[s].req = -1;

    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    size_t kv_per_token = mhsa_kv_cache_bytes(cache) / S / (size_t)capacity;
    printf("mhsa %s, ISA %s, %d thread%s; D=%d H=%d Hkv=%d rope=%d "
           "window=%d, %s cache\n", mhsa_version(),
           mhsa_isa_name(mhsa_active_isa()), threads, threads > 1 ? "s" : "",
           o.D, o.H, o.Hkv, o.rope, o.window, dtype_name(o.dtype));
    printf("%d slots of %d positions: KV cache %.1f MiB (%zu B per token), "
           "workspace %.1f MiB\n", o.slots, capacity,
           (double)mhsa_kv_cache_bytes(cache) / (1 << 20), kv_per_token,
           (double)mhsa_workspace_bytes(ws) / (1 << 20));
    printf("%d requests: prompts %d..%d, outputs %d..%d tokens, prefill "
           "chunk %d, arrivals every %.1f steps\n", o.requests, o.prompt_min,
           o.prompt_max, o.out_min, o.out_max, o.chunk, o.arrival);
    fflush(stdout);

    // ---- the serving loop: no allocation from here to its end ----
#ifdef SERVE_COUNT_ALLOCS
    size_t allocs0 = count_allocs_calls();
#endif
    size_t next = 0, done = 0;
    long step = 0, n_steps = 0;
    double busy_slots = 0.0, rows_used = 0.0, rows_computed = 0.0;
    double t_start = now_s();
    while (done < R) {
        double t0 = now_s();
        // 1. Free slots take the requests that have arrived, in order.
        for (size_t s = 0; s < S && next < R; s++)
            if (sl[s].req < 0 && req[next].arrival <= step) {
                sl[s].req = (int)next++;
                sl[s].pos = 0;
                sl[s].generated = 0;
            }
        // 2. What each slot appends: a prompt chunk, one token, or nothing.
        int B = 0, t_new = 0, busy = 0;
        for (size_t s = 0; s < S; s++) {
            int n = 0;
            if (sl[s].req >= 0) {
                const request *q = &req[sl[s].req];
                n = sl[s].pos < q->prompt ? q->prompt - sl[s].pos : 1;
                n = n < o.chunk ? n : o.chunk;
                B = (int)s + 1;
                busy++;
            }
            n_new[s] = n;
            t_new = n > t_new ? n : t_new;
        }
        if (!busy) {   // nothing to do until the next request arrives
            step = req[next].arrival;
            continue;
        }
        for (int s = 0; s < B; s++)
            for (int i = 0; i < n_new[s]; i++)
                memcpy(x + ((size_t)s * t_new + i) * D,
                       token(embed, o.D, o.seed, sl[s].req, sl[s].pos + i),
                       D * sizeof *x);
        mhsa_cached_args a = { x, B, t_new, n_new, y };
        CHECK(mhsa_forward_cached_ex(blk, ws, cache, &a));
        // 3. Advance; a finished request frees its slot for the next one.
        for (int s = 0; s < B; s++) {
            int n = n_new[s];
            if (!n)
                continue;
            const request *q = &req[sl[s].req];
            if (record)
                memcpy(record + (q->y_off + (size_t)sl[s].pos) * D,
                       y + (size_t)s * t_new * D, (size_t)n * D * sizeof *y);
            sl[s].pos += n;
            if (sl[s].pos >= q->prompt)   // the last prompt row, or a token
                sl[s].generated++;        // yields the next token
            if (sl[s].generated == q->output) {
                CHECK(mhsa_kv_cache_reset_seq(cache, s));
                sl[s].req = -1;
                done++;
            }
        }
        busy_slots += busy;
        for (int s = 0; s < B; s++)
            rows_used += n_new[s];
        rows_computed += (double)B * t_new;
        lat[n_steps++] = now_s() - t0;
        step++;
    }
    double elapsed = now_s() - t_start;
#ifdef SERVE_COUNT_ALLOCS
    size_t loop_allocs = count_allocs_calls() - allocs0;
#endif

    // ---- report ----
    qsort(lat, (size_t)n_steps, sizeof *lat, cmp_double);
    printf("%ld steps: p50 %.2f ms, p99 %.2f ms, max %.2f ms per step; "
           "slot occupancy %.1f %%\n", n_steps,
           1e3 * percentile(lat, n_steps, 50),
           1e3 * percentile(lat, n_steps, 99), 1e3 * lat[n_steps - 1],
           100.0 * busy_slots / ((double)n_steps * (double)S));
    printf("%ld prompt + %ld generated tokens in %.3f s: %.0f tokens/s "
           "(prompt %.0f/s, generated %.0f/s)\n", prompt_tokens, gen_tokens,
           elapsed, (double)(prompt_tokens + gen_tokens) / elapsed,
           (double)prompt_tokens / elapsed, (double)gen_tokens / elapsed);
    printf("rows of x_new that were tokens: %.1f %% (B x t_new rows "
           "computed per step)\n", 100.0 * rows_used / rows_computed);
    int status = 0;
#ifdef SERVE_COUNT_ALLOCS
    printf("allocations during the loop: %zu\n", loop_allocs);
    if (loop_allocs != 0)
        status = 1;
#endif

    if (o.check) {
        // One-sequence cache, and buffers for the longest request.
        mhsa_kv_cache *solo = NULL;
        mhsa_kv_config one = { 1, capacity, o.dtype };
        CHECK(mhsa_kv_cache_create_ex(blk, &one, &solo));
        float *cx = malloc((size_t)capacity * D * sizeof *cx);
        float *cy = malloc((size_t)capacity * D * sizeof *cy);
        if (!cx || !cy) {
            fprintf(stderr, "serve: out of memory\n");
            return 1;
        }
        double worst = 0.0;
        int worst_r = 0;
        for (size_t r = 0; r < R; r++) {
            double e = check_request(blk, ws, solo, embed, &o, &req[r],
                                     (int)r, record + req[r].y_off * D, cx,
                                     cy);
            if (e > worst || e != e) {
                worst = e;
                worst_r = (int)r;
            }
        }
        int ok = worst <= 1e-4;
        printf("check: every request vs its solo run%s: max rel err %.2e "
               "(request %d) %s\n",
               o.dtype == MHSA_F32 ? " and one full forward" : "", worst,
               worst_r, ok ? "(ok)" : "(MISMATCH)");
        if (!ok)
            status = 1;
        free(cx);
        free(cy);
        mhsa_kv_cache_destroy(solo);
    }

    free(record);
    free(lat);
    free(req);
    free(sl);
    free(n_new);
    free(embed);
    free(x);
    free(y);
    mhsa_kv_cache_destroy(cache);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    return status;
}
