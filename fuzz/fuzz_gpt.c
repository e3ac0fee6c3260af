// fuzz_gpt.c — libFuzzer target: the GPT's command line and checkpoints.
// The first byte picks what the rest is:
//   even: mhsa-generate's arguments (tools/mhsa-generate, parse_gen_args)
//         as NUL-separated argv. The result is OK or USAGE; USAGE writes
//         one message "mhsa-generate: ..." and OK writes nothing; an
//         accepted command line satisfies every rule the help text states.
//   odd:  a GPT checkpoint (mhsa_gpt_save's safetensors with the
//         "mhsa.gpt.*" metadata). mhsa_gpt_read_config returns OK or
//         FORMAT/IO with a message. A configuration that is valid and small
//         (sizes capped so memory stays tiny) becomes a model that loads
//         the file with and without the optimiser state, and a model of
//         one other field that must refuse it: a failed load leaves the
//         parameters, moments and step unchanged; a successful one gives a
//         model that runs a forward and survives save, read_config and load
//         again bit for bit.
// Nothing may crash, leak or read outside the file's bytes.
// Seeds: fuzz/make_seeds.py (arguments) and make_gpt_seeds.c (checkpoints
// written by mhsa_gpt_save).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "generate.h"
#include "mhsa_train.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

// ---- mhsa-generate's arguments ----------------------------------------------

enum { MAX_ARGS = 24 };

static int in_buf(const char *p, const char *buf, size_t size)
{
    return p >= buf && p <= buf + size;
}

static void fuzz_gen_args(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (size)
        memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "mhsa-generate";
    for (size_t i = 0; i <= size && argc <= MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    char *msg = NULL;
    size_t msg_len = 0;
    FILE *err = open_memstream(&msg, &msg_len);
    CHECK(err);
    gen_args a;
    int rc = parse_gen_args(argc, argv, &a, err);
    CHECK(fclose(err) == 0);
    CHECK(rc == CLI_OK || rc == CLI_USAGE);
    if (rc == CLI_USAGE) {
        static const char pre[] = "mhsa-generate: ";
        CHECK(msg_len > sizeof pre && !strncmp(msg, pre, sizeof pre - 1) &&
              msg[msg_len - 1] == '\n');
    } else {
        CHECK(msg_len == 0);
    }
    if (rc == CLI_OK && !a.help) {
        // --model FILE is required and names a file; the prompt is the
        // default newline or one of the arguments.
        CHECK(a.model && *a.model && in_buf(a.model, buf, size));
        CHECK(a.prompt && (!strcmp(a.prompt, "\n") ||
                           in_buf(a.prompt, buf, size)));
        CHECK(a.n >= 0 && a.n <= (1 << 30));
        CHECK(isfinite(a.temperature) && a.temperature >= 0.0f);
        CHECK(a.top_k >= 0 && a.top_k <= (1 << 24));
        CHECK(a.threads >= 0 && a.threads <= 1024);
        CHECK(a.isa == MHSA_ISA_AUTO || a.isa == MHSA_ISA_SCALAR ||
              a.isa == MHSA_ISA_AVX2 || a.isa == MHSA_ISA_AVX512 ||
              a.isa == MHSA_ISA_NEON);
    }
    free(msg);
    free(buf);
}

// ---- checkpoints ------------------------------------------------------------

static char path[256], path2[256];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/mhsa_fuzz_gpt_%ld.safetensors",
             dir && *dir && strlen(dir) < 128 ? dir : "/tmp",
             (long)getpid());
    snprintf(path2, sizeof path2, "%s.saved", path);
    return 0;
}

// A model worth creating: a configuration mhsa_gpt_create may accept or
// refuse, but with sizes small enough that a model costs a few hundred KB
// (a 4 KB input holds far fewer parameters anyway).
static int small(const mhsa_gpt_config *c)
{
    return c->vocab <= 300 && c->n_layer <= 3 && c->n_embd <= 24 &&
           c->n_head <= 24 && c->block_size <= 24 && c->rope_dim <= 24;
}

// The model's whole state, to compare before and after a load.
typedef struct state {
    size_t n;
    float *p, *m, *v;
    int64_t step;
} state;

static state snapshot(mhsa_gpt *g)
{
    state s = { .n = mhsa_gpt_n_params(g), .step = mhsa_gpt_get_step(g) };
    size_t bytes = (s.n ? s.n : 1) * sizeof(float);
    s.p = malloc(bytes);
    s.m = malloc(bytes);
    s.v = malloc(bytes);
    CHECK(s.p && s.m && s.v);
    memcpy(s.p, mhsa_gpt_params(g), s.n * sizeof(float));
    memcpy(s.m, mhsa_gpt_moment1(g), s.n * sizeof(float));
    memcpy(s.v, mhsa_gpt_moment2(g), s.n * sizeof(float));
    return s;
}

static void restore(mhsa_gpt *g, const state *s)
{
    memcpy(mhsa_gpt_params(g), s->p, s->n * sizeof(float));
    memcpy(mhsa_gpt_moment1(g), s->m, s->n * sizeof(float));
    memcpy(mhsa_gpt_moment2(g), s->v, s->n * sizeof(float));
    CHECK(mhsa_gpt_set_step(g, s->step) == MHSA_OK);
}

// Bitwise: NaN payloads included.
static int same(mhsa_gpt *g, const state *s, int params, int optim)
{
    size_t b = s->n * sizeof(float);
    return (!params || !memcmp(mhsa_gpt_params(g), s->p, b)) &&
           (!optim || (!memcmp(mhsa_gpt_moment1(g), s->m, b) &&
                       !memcmp(mhsa_gpt_moment2(g), s->v, b) &&
                       mhsa_gpt_get_step(g) == s->step));
}

static void drop(state *s)
{
    free(s->p);
    free(s->m);
    free(s->v);
}

// A model of config c with parameters, moments and step that no load
// could produce by accident (so that "unchanged" means something).
static mhsa_gpt *make(const mhsa_gpt_config *c)
{
    mhsa_gpt *g = NULL;
    CHECK(mhsa_gpt_create(c, &g) == MHSA_OK);
    CHECK(mhsa_gpt_init_random(g, 11) == MHSA_OK);
    size_t n = mhsa_gpt_n_params(g);
    for (size_t i = 0; i < n; i++) {
        mhsa_gpt_moment1(g)[i] = 0.25f + (float)(i % 7);
        mhsa_gpt_moment2(g)[i] = 0.5f + (float)(i % 5);
    }
    CHECK(mhsa_gpt_set_step(g, 12345) == MHSA_OK);
    return g;
}

static int cfg_equal(const mhsa_gpt_config *a, const mhsa_gpt_config *b)
{
    return a->vocab == b->vocab && a->n_layer == b->n_layer &&
           a->n_embd == b->n_embd && a->n_head == b->n_head &&
           a->block_size == b->block_size && a->rope_dim == b->rope_dim &&
           a->tie_embeddings == b->tie_embeddings &&
           a->no_proj == b->no_proj && a->max_batch == b->max_batch;
}

static int load_error(mhsa_status st)
{
    return (st == MHSA_ERR_FORMAT || st == MHSA_ERR_IO) &&
           *mhsa_last_error();
}

// A loaded model runs (whatever its values, NaN included) and its saved
// checkpoint reads back to the same configuration and bits.
static void check_loaded(mhsa_gpt *g, const mhsa_gpt_config *c)
{
    int T = c->block_size < 3 ? c->block_size : 3;
    int32_t tok[3];
    for (int t = 0; t < T; t++)
        tok[t] = (int32_t)((t * 5 + 1) % c->vocab);
    CHECK(mhsa_gpt_forward(g, tok, NULL, 1, T, 0.0, NULL) == MHSA_OK);

    static const mhsa_meta meta[2] = { { "source", "fuzz_gpt" },
                                       { "note", "\"quoted\" \\ \n" } };
    CHECK(mhsa_gpt_save(g, path2, 1, meta, 2) == MHSA_OK);
    mhsa_gpt_config c2;
    CHECK(mhsa_gpt_read_config(path2, &c2) == MHSA_OK);
    CHECK(cfg_equal(c, &c2));
    mhsa_gpt *g2 = make(&c2);
    CHECK(mhsa_gpt_load(g2, path2, 1) == MHSA_OK);
    state s = snapshot(g);
    CHECK(same(g2, &s, 1, 1));
    drop(&s);
    mhsa_gpt_destroy(g2);
    unlink(path2);
}

// Loads into g (with or without the optimiser state) from its own start
// state s: on failure nothing changed, on success the moments and step
// changed only with optim.
static void load_into(mhsa_gpt *g, const mhsa_gpt_config *c, const state *s,
                      int optim)
{
    restore(g, s);
    mhsa_status st = mhsa_gpt_load(g, path, optim);
    if (st != MHSA_OK) {
        CHECK(load_error(st));
        CHECK(same(g, s, 1, 1));
        return;
    }
    if (!optim)
        CHECK(same(g, s, 0, 1));
    check_loaded(g, c);
}

// The configuration c with one field changed (which: sel), still valid.
static mhsa_gpt_config other(const mhsa_gpt_config *c, unsigned sel)
{
    mhsa_gpt_config o = *c;
    switch (sel % 5) {
    case 0: o.vocab += 1; break;
    case 1: o.n_layer += 1; break;
    case 2: o.block_size += 1; break;
    case 3: o.tie_embeddings ^= 1; break;
    default: o.no_proj ^= 1; break;
    }
    return o;
}

static void fuzz_checkpoint(unsigned sel, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f);
    CHECK(fwrite(data, 1, size, f) == size);
    CHECK(fclose(f) == 0);

    mhsa_gpt_config c;
    mhsa_status st = mhsa_gpt_read_config(path, &c);
    CHECK(st == MHSA_OK || load_error(st));
    if (st == MHSA_OK) {
        CHECK(c.vocab >= 0 && c.n_layer >= 0 && c.n_embd >= 0 &&
              c.n_head >= 0 && c.block_size >= 0 && c.rope_dim >= 0 &&
              c.tie_embeddings >= 0 && c.no_proj >= 0 && c.max_batch == 1);
    }
    mhsa_gpt *g = NULL;
    if (st == MHSA_OK && small(&c)) {
        st = mhsa_gpt_create(&c, &g);
        CHECK(st == MHSA_OK || st == MHSA_ERR_INVALID_ARG ||
              st == MHSA_ERR_SHAPE);
    }
    if (g) {
        mhsa_gpt_destroy(g);
        g = make(&c);
        state s = snapshot(g);
        load_into(g, &c, &s, 1);
        load_into(g, &c, &s, 0);
        drop(&s);
        mhsa_gpt_destroy(g);

        // A model of another configuration refuses the file.
        mhsa_gpt_config o = other(&c, sel);
        g = make(&o);
        s = snapshot(g);
        st = mhsa_gpt_load(g, path, (int)(sel >> 4) & 1);
        CHECK(st == MHSA_ERR_FORMAT && *mhsa_last_error());
        CHECK(same(g, &s, 1, 1));
        drop(&s);
        mhsa_gpt_destroy(g);
    }
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_checkpoint(data[0] >> 1, data + 1, size - 1);
    else
        fuzz_gen_args(data + 1, size - 1);
    return 0;
}
