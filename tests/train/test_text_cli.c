// test_text_cli.c — `mhsa-train --task text` and `mhsa-generate`, run
// in-process (check forks each test, so every run gets a fresh process; no
// exec, so this also runs under qemu-user): bad flags, data and checkpoints
// exit 2 with one line and write nothing; a small run trains and reports;
// a run stopped and resumed gives a checkpoint byte for byte equal to the
// uninterrupted one, and so do 1, 2 and 3 threads; --eval repeats the final
// validation loss; mhsa-generate gives the same text on any thread count,
// --weight-dtype f16|bf16 loads a checkpoint into 16-bit weights (the text
// of a model whose matrices were rounded first, about half the bytes), and
// its sampler draws from the right distribution.
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "generate.h"
#include "kernels/half.h"
#include "text.h"
#include "capture.h"
#include "nn/sample.h"
#include "util.h"
#include "tmpdir.h"

// ---- a temporary folder of this test's files -----------------------------

// Removes the temporary folder and what is in it (after every test).
static void teardown(void)
{
    static const char *const names[] = {
        "corpus.txt", "empty.txt", "short.txt",
        "block.st", "loss.csv", "a.st", "b.st", "c.st", "t1.st", "t2.st",
        "t3.st", "gen.st", "other.txt", "c1.st", "c2.st", "c32.st",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(tpath(names[i]));
    ck_assert_msg(tpath_remove() == 0, "a test left a file behind");
}

// A small corpus with structure to learn: sentences built from a few
// words, 6 KB.
static const char *corpus(void)
{
    const char *p = tpath("corpus.txt");
    if (access(p, F_OK) == 0)
        return p;
    static const char *const words[] = {
        "the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to",
        "big", "red", "house", "in", "sun",
    };
    FILE *f = fopen(p, "w");
    rng r = { 77 };
    size_t n = 0;
    while (n < 6000) {
        int len = rng_int(&r, 3, 8);
        for (int i = 0; i < len; i++)
            n += (size_t)fprintf(f, "%s%s", i ? " " : "",
                                 words[rng_int(&r, 0, 14)]);
        n += (size_t)fprintf(f, ".\n");
    }
    fclose(f);
    return p;
}

// The small model every training test uses (fast under qemu too).
#define SMALL "--layers", "1", "--embd", "16", "--heads", "2", "--block", \
              "16", "--batch", "4", "--eval-every", "8", "--val-tokens", "64"

static const char *last_line(const char *s)
{
    const char *end = s + strlen(s);
    if (end > s && end[-1] == '\n')
        end--;
    while (end > s && end[-1] != '\n')
        end--;
    return end;
}

// ---- bad input ----------------------------------------------------------------------

// "@DATA" is replaced by the corpus, "@EMPTY" by an empty file, "@SHORT" by
// a 20-byte file, "@BLOCK" by a weight file that is not a GPT checkpoint.
static const struct { const char *args[8]; const char *says; } bad[] = {
    { { "--data", "/nonexistent/text" }, "cannot open" },
    { { "--data", "@EMPTY" }, "empty" },
    { { "--data", "@SHORT", "--block", "16" }, "too short for one block" },
    { { "--data", "@DATA", "--heads", "3" }, "--heads 3 does not divide" },
    { { "--preset", "huge" }, "unknown preset 'huge'" },
    { { "--steps", "5", "--epochs", "1" }, "give one of them" },
    { { "--resume", "x.st", "--layers", "2" }, "--layers cannot be combined" },
    { { "--eval", "/nonexistent/m.st", "--data", "@DATA" }, "--eval" },
    { { "--resume", "@BLOCK", "--data", "@DATA" }, "mhsa.gpt.vocab" },
    { { "--lr", "0" }, "--lr 0 must be > 0" },
    { { "--bogus" }, "--bogus: unknown option" },
    { { "--rope=3" }, "--rope 3 must be even" },
    { { "--rope", "64" }, "--rope 64 is larger than the head size 32" },
    { { "--layers" }, "--layers needs a value" },
    { { "--embd", "12", "--heads", "4", "--rope" }, "--rope needs an even" },
    { { "--data", "@DATA", "--save", "/nonexistent/dir/m.st" },
      "cannot write" },
    { { "--val-fraction", "0.7" }, "below 0.5" },
    { { "--isa", "sparc" }, "unknown ISA 'sparc'" },
    { { "--compute", "f16" }, "--compute: unknown 'f16'" },
};

static const char *fill(const char *a)
{
    if (!strcmp(a, "@DATA"))
        return corpus();
    if (!strcmp(a, "@EMPTY")) {
        const char *p = tpath("empty.txt");
        fclose(fopen(p, "w"));
        return p;
    }
    if (!strcmp(a, "@SHORT")) {
        const char *p = tpath("short.txt");
        FILE *f = fopen(p, "w");
        fputs("twenty bytes of text", f);
        fclose(f);
        return p;
    }
    if (!strcmp(a, "@BLOCK")) {
        const char *p = tpath("block.st");
        mhsa_block *blk = NULL;
        mhsa_config c = { 8, 2, 4, 1, 1 };
        ck_assert_int_eq(mhsa_block_create(&c, &blk), MHSA_OK);
        mhsa_status s = mhsa_block_save_safetensors(blk, p, "");
        mhsa_block_destroy(blk);
        ck_assert_int_eq(s, MHSA_OK);
        return p;
    }
    return a;
}

START_TEST(text_bad_input_exits_2)
{
    const char *argv[16] = { "mhsa-train", "--task", "text" };
    int argc = 3;
    for (int i = 0; i < 8 && bad[_i].args[i]; i++)
        argv[argc++] = fill(bad[_i].args[i]);
#ifndef MHSA_TEST_SAFETENSORS
    for (int i = 3; i < argc; i++)
        if (strstr(argv[i], ".st")) {
            printf("skip: built without safetensors\n");
            return;
        }
#endif
    char *out, *err;
    int rc = run_captured(mhsa_train_cli, &out, &err, argc, argv);
    ck_assert_msg(rc == 2, "exit %d for case %d: %s", rc, _i, err);
    ck_assert_str_eq(out, "");
    ck_assert_msg(count_lines(err) == 1, "not one line: %s", err);
    ck_assert_msg(!strncmp(err, "mhsa-train: ", 12), "got: %s", err);
    ck_assert_msg(strstr(err, bad[_i].says) != NULL, "'%s' not in: %s",
                  bad[_i].says, err);
    free(out);
    free(err);
}
END_TEST

START_TEST(text_help_documents_every_flag)
{
    const char *argv[] = { "mhsa-train", "--task", "text", "--help" };
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 4, argv), 0);
    const char *flags[] = {
        "--data", "--val-fraction", "--preset", "--layers", "--embd",
        "--heads", "--block", "--rope", "--no-proj", "--tie", "--batch",
        "--steps", "--epochs", "--lr", "--min-lr", "--warmup",
        "--weight-decay", "--beta2", "--clip", "--seed", "--eval-every",
        "--val-tokens", "--save", "--save-every", "--save-init",
        "--stop-after", "--resume", "--eval", "--threads", "--isa",
        "--loss-csv", "--heatmap-png", "fortunes",
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        ck_assert_msg(strstr(out, flags[i]), "--help lacks %s", flags[i]);
    free(out);
    free(err);
    // The toy tasks' help points to it.
    const char *argv2[] = { "mhsa-train", "--help" };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 2, argv2), 0);
    ck_assert_ptr_nonnull(strstr(out, "--task text --help"));
    free(out);
    free(err);
}
END_TEST

// ---- training ---------------------------------------------------------------------

static double val_of(const char *out)
{
    const char *l = last_line(out);
    ck_assert_msg(!strncmp(l, "val loss: ", 10), "last line: %s", l);
    return atof(l + 10);
}

START_TEST(text_trains_and_reports)
{
    const char *csv = tpath("loss.csv");
    const char *argv[] = { "mhsa-train", "--task", "text", "--data",
                           corpus(), SMALL, "--steps", "24", "--lr", "1e-2",
                           "--loss-csv", csv };
    char *out, *err;
    int argc = (int)(sizeof argv / sizeof argv[0]);
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, argc, argv), 0);
    ck_assert_ptr_nonnull(strstr(err, "tok/s"));
    ck_assert_ptr_nonnull(strstr(err, "ETA"));
    ck_assert_ptr_nonnull(strstr(err, "step     24/24"));
    ck_assert_ptr_nonnull(strstr(out, "loss per step"));
    ck_assert_ptr_nonnull(strstr(out, "head 1"));
    double v = val_of(out);
    ck_assert_msg(v < 3.5, "val loss %g after 24 steps (chance: 5.55)", v);
    char *c = slurp(csv, NULL);
    ck_assert_int_eq(count_lines(c), 25);
    ck_assert(!strncmp(c, "step,loss,val_loss\n1,", 21));
    free(c);
    free(out);
    free(err);
}
END_TEST

#ifdef MHSA_TEST_SAFETENSORS
// Runs mhsa-train --task text on the corpus with the small model for 16
// steps plus the extra arguments; returns its stdout.
static char *train_small(const char *const *extra, int n_extra)
{
    const char *argv[40] = { "mhsa-train", "--task", "text", "--data",
                             corpus(), SMALL, "--steps", "16" };
    int argc = 0;
    while (argv[argc])
        argc++;
    for (int i = 0; i < n_extra; i++)
        argv[argc++] = extra[i];
    char *out, *err;
    int rc = run_captured(mhsa_train_cli, &out, &err, argc, argv);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    free(err);
    return out;
}

static void assert_same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    ck_assert_msg(na == nb && !memcmp(x, y, na), "%s and %s differ", a, b);
    free(x);
    free(y);
}

// Stopped after 8 steps and resumed: the final checkpoint is byte for byte
// the one of the run that never stopped; --eval prints the same val loss.
START_TEST(text_resume_is_bit_for_bit)
{
    const char *a = tpath("a.st"), *b = tpath("b.st"), *c = tpath("c.st");
    const char *ea[] = { "--save", a };
    char *out_a = train_small(ea, 2);
    const char *eb[] = { "--save", b, "--stop-after", "8" };
    free(train_small(eb, 4));
    const char *argv[] = { "mhsa-train", "--task", "text", "--data",
                           corpus(), "--resume", b, "--save", c,
                           "--eval-every", "8", "--val-tokens", "64" };
    char *out, *err;
    int rc = run_captured(mhsa_train_cli, &out, &err, 13, argv);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_ptr_nonnull(strstr(err, "(resumed)"));
    assert_same_file(a, c);
    ck_assert_str_eq(last_line(out), last_line(out_a));
    free(out);
    free(err);
    const char *ev[] = { "mhsa-train", "--task", "text", "--data", corpus(),
                         "--batch", "4", "--eval", a };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 9, ev), 0);
    ck_assert_str_eq(out, last_line(out_a));
    free(out);
    free(err);
    // Resuming on other data is refused.
    const char *other = tpath("other.txt");
    FILE *f = fopen(other, "w");
    for (int i = 0; i < 300; i++)
        fputs("other text. ", f);
    fclose(f);
    const char *ro[] = { "mhsa-train", "--task", "text", "--data", other,
                         "--resume", b };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 7, ro), 2);
    ck_assert_ptr_nonnull(strstr(err, "other data"));
    free(out);
    free(err);
    free(out_a);
}
END_TEST

// The same run on 1, 2 and 3 threads: byte-identical checkpoints.
// --compute bf16: the same checkpoint bits on 1 and 2 threads, and not
// the fp32 run's (the products are rounded).
START_TEST(text_compute_bf16)
{
    const char *p[3] = { tpath("c1.st"), tpath("c2.st"), tpath("c32.st") };
    for (int t = 0; t < 3; t++) {
        const char *e[] = { "--save", p[t], "--threads", t == 1 ? "2" : "1",
                            "--compute", t == 2 ? "f32" : "bf16" };
        free(train_small(e, 6));
    }
    assert_same_file(p[0], p[1]);
    FILE *a = fopen(p[0], "rb"), *b = fopen(p[2], "rb");
    ck_assert(a && b);
    int same = 1, ca, cb;
    do {
        ca = fgetc(a);
        cb = fgetc(b);
        same &= ca == cb;
    } while (ca != EOF && cb != EOF);
    fclose(a);
    fclose(b);
    ck_assert_msg(!same, "--compute bf16 wrote the fp32 run's checkpoint");
}
END_TEST

START_TEST(text_same_bits_on_any_thread_count)
{
    const char *p[3] = { tpath("t1.st"), tpath("t2.st"), tpath("t3.st") };
    for (int t = 0; t < 3; t++) {
        char threads[4];
        snprintf(threads, sizeof threads, "%d", t + 1);
        const char *e[] = { "--save", p[t], "--threads", threads, "--embd",
                            "32", "--batch", "8" };
        free(train_small(e, 8));
    }
    assert_same_file(p[0], p[1]);
    assert_same_file(p[0], p[2]);
}
END_TEST

// ---- mhsa-generate ------------------------------------------------------------------

// A checkpoint to generate from (trained once per process).
static const char *model(void)
{
    const char *p = tpath("gen.st");
    if (access(p, F_OK) != 0) {
        const char *e[] = { "--save", p, "--lr", "1e-2" };
        free(train_small(e, 4));
    }
    return p;
}

// The same seed gives the same text on 1, 2 and 3 threads, also past the
// block (16 bytes, so the context slides); stderr has both timings.
START_TEST(generate_same_text_on_any_thread_count)
{
    char *first = NULL;
    for (int t = 1; t <= 3; t++) {
        char threads[4];
        snprintf(threads, sizeof threads, "%d", t);
        const char *argv[] = { "mhsa-generate", "--model", model(),
                               "--prompt", "the cat", "-n", "60", "--seed",
                               "7", "--threads", threads };
        char *out, *err;
        ck_assert_int_eq(run_captured(mhsa_generate_cli, &out, &err, 11, argv), 0);
        ck_assert(!strncmp(out, "the cat", 7));
        ck_assert_uint_eq(strlen(out), 7 + 60 + 1);
        ck_assert_ptr_nonnull(strstr(err, "prefill 7 tokens"));
        ck_assert_ptr_nonnull(strstr(err, "decode 59 tokens"));
        ck_assert_ptr_nonnull(strstr(err, "tokens/s"));
        if (!first)
            first = out;
        else {
            ck_assert_str_eq(out, first);
            free(out);
        }
        free(err);
    }
    // Greedy decoding and a long prompt (longer than the block) work too.
    const char *g[] = { "mhsa-generate", "--model", model(), "--prompt",
                        "a dog ran to the big red house in the sun and",
                        "-n", "5", "--temperature", "0" };
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_generate_cli, &out, &err, 9, g), 0);
    ck_assert_ptr_nonnull(strstr(err, "prefill 16 tokens"));
    free(out);
    free(err);
    free(first);
}
END_TEST

START_TEST(generate_bad_input_exits_2)
{
    static const struct { const char *args[4]; const char *says; } cases[] = {
        { { "--prompt", "x" }, "--model FILE is required" },
        { { "--model", "/nonexistent/m.st" }, "cannot open" },
        { { "--model", "@M", "-n", "-1" }, "-n -1 is out of range" },
        { { "--model", "@M", "--temperature", "-1" }, "--temperature" },
        { { "--model", "@M", "--top-k", "x" }, "--top-k" },
        { { "--bogus" }, "--bogus: unknown option" },
        { { "--model" }, "--model needs a value" },
        { { "--model", "@M", "--weight-dtype", "f8" },
          "--weight-dtype must be file, f32, f16 or bf16, not f8" },
        { { "--model", "@M", "--weight-dtype", "file" },
          "are for GGUF models" },
        { { "--model", "@M", "--kv-dtype", "f16" }, "are for GGUF models" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *argv[8] = { "mhsa-generate" };
        int argc = 1;
        for (int i = 0; i < 4 && cases[c].args[i]; i++)
            argv[argc++] = strcmp(cases[c].args[i], "@M") ? cases[c].args[i]
                                                          : model();
        char *out, *err;
        ck_assert_int_eq(run_captured(mhsa_generate_cli, &out, &err, argc, argv), 2);
        ck_assert_str_eq(out, "");
        ck_assert_msg(count_lines(err) == 1, "not one line: %s", err);
        ck_assert_msg(!strncmp(err, "mhsa-generate: ", 15), "got: %s", err);
        ck_assert_msg(strstr(err, cases[c].says), "'%s' not in: %s",
                      cases[c].says, err);
        free(out);
        free(err);
    }
}
END_TEST
#endif

#ifdef MHSA_TEST_SAFETENSORS
// The greedy text of the checkpoint loaded into an F32 model whose matrices
// (rank-2 tensors) were rounded to dt first (dt F32: as loaded), decoded
// as mhsa-generate does within one block: prompt then n bytes, into text.
static void reference_text(const char *path, mhsa_dtype dt,
                           const char *prompt, int n, char *text)
{
    mhsa_gpt_config c;
    ck_assert_int_eq(mhsa_gpt_read_config(path, &c), MHSA_OK);
    mhsa_gpt *g = NULL;
    ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_load(g, path, 0), MHSA_OK);
    for (int i = 0; dt != MHSA_F32 && i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        ck_assert_int_eq(mhsa_gpt_get_tensor(g, i, &t), MHSA_OK);
        for (size_t j = 0; t.rank == 2 && j < t.numel; j++)
            t.data[j] = dt == MHSA_F16
                            ? mhsa_f16_to_f32(mhsa_f32_to_f16(t.data[j]))
                            : mhsa_bf16_to_f32(mhsa_f32_to_bf16(t.data[j]));
    }
    mhsa_gpt_cache *cache = NULL;
    ck_assert_int_eq(mhsa_gpt_cache_create(g, c.block_size, &cache),
                     MHSA_OK);
    size_t np = strlen(prompt);
    ck_assert_int_le((int)np + n, c.block_size);
    int32_t ids[64];
    for (size_t i = 0; i < np; i++)
        ids[i] = (unsigned char)prompt[i];
    float logits[256];
    int order[256];
    uint64_t rng_state = 1;
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, ids, (int)np, logits),
                     MHSA_OK);
    memcpy(text, prompt, np);
    for (int i = 0; i < n; i++) {
        int32_t tok = mhsa__sample_token(logits, c.vocab, 0.0f, 0, 1.0f,
                                         0.0f, &rng_state, order);
        text[np + (size_t)i] = (char)tok;
        if (i + 1 < n)
            ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, &tok, 1,
                                                     logits), MHSA_OK);
    }
    text[np + (size_t)n] = '\n';
    text[np + (size_t)n + 1] = '\0';
    mhsa_gpt_cache_destroy(cache);
    mhsa_gpt_destroy(g);
}

// --weight-dtype on a GPT checkpoint: each type's greedy text is the
// rounded model's, and the weights' bytes (on stderr) about halve.
START_TEST(generate_weight_dtype)
{
    static const char *const names[] = { "f32", "f16", "bf16" };
    static const mhsa_dtype dts[] = { MHSA_F32, MHSA_F16, MHSA_BF16 };
    double kb[3];
    for (int d = 0; d < 3; d++) {
        const char *argv[] = { "mhsa-generate", "--model", model(),
                               "--prompt", "the c", "-n", "10",
                               "--temperature", "0", "--weight-dtype",
                               names[d] };
        char *out, *err;
        ck_assert_int_eq(run_captured(mhsa_generate_cli, &out, &err, 11,
                                      argv), 0);
        char want[64];
        reference_text(model(), dts[d], "the c", 10, want);
        ck_assert_str_eq(out, want);
        const char *w = strstr(err, "weights ");
        char unit[8] = "", type[8] = "";
        ck_assert_msg(w && sscanf(w, "weights %lf %7s %7s", &kb[d], unit,
                                  type) == 3, "no weights in: %s", err);
        ck_assert_str_eq(unit, "kB");
        ck_assert_str_eq(type, names[d]);
        free(out);
        free(err);
    }
    for (int d = 1; d < 3; d++)
        ck_assert_msg(kb[d] > 0.5 * kb[0] && kb[d] < 0.56 * kb[0],
                      "%s: %g kB, f32 %g kB", names[d], kb[d], kb[0]);
}
END_TEST
#endif

// Every ISA mhsa_isa_name knows is a valid --isa for the three parsers
// (mhsa-train, its --task text, mhsa-generate), and an unknown one is not.
START_TEST(every_isa_name_is_accepted)
{
    static const mhsa_isa isas[] = { MHSA_ISA_AUTO, MHSA_ISA_SCALAR,
                                     MHSA_ISA_AVX2, MHSA_ISA_AVX512,
                                     MHSA_ISA_NEON };
    FILE *sink = fopen("/dev/null", "w");
    ck_assert_ptr_nonnull(sink);
    for (size_t k = 0; k <= sizeof isas / sizeof isas[0]; k++) {
        int known = k < sizeof isas / sizeof isas[0];
        const char *name = known ? mhsa_isa_name(isas[k]) : "avx1024";
        char *train[] = { "mhsa-train", "--isa", (char *)name, NULL };
        char *text[] = { "mhsa-train", "--task", "text", "--isa",
                         (char *)name, NULL };
        char *gen[] = { "mhsa-generate", "--model", "m.st", "--isa",
                        (char *)name, NULL };
        train_args ta;
        text_args xa;
        gen_args ga;
        int want = known ? CLI_OK : CLI_USAGE;
        ck_assert_int_eq(parse_args(3, train, &ta, sink), want);
        ck_assert_int_eq(parse_text_args(5, text, &xa, sink), want);
        ck_assert_int_eq(parse_gen_args(5, gen, &ga, sink), want);
        if (known)
            ck_assert(ta.isa == isas[k] && xa.isa == isas[k] &&
                      ga.isa == isas[k]);
    }
    fclose(sink);
}
END_TEST

// The sampler: top-1 and temperature 0 are the argmax (first on ties); a
// two-way softmax with p = 3/4 is drawn about 3/4 of the time; top-k never
// picks outside the k largest.
START_TEST(sampler_distribution)
{
    float z[5] = { 0.0f, logf(3.0f), -1.0f, logf(3.0f), -50.0f };
    int order[5];
    uint64_t s = 3;
    ck_assert_int_eq(mhsa__sample_token(z, 5, 0.0f, 0, 1.0f, 0.0f, &s,
                                        order), 1);
    ck_assert_int_eq(mhsa__sample_token(z, 5, 1.0f, 1, 1.0f, 0.0f, &s,
                                        order), 1);
    int hits = 0, n = 20000;
    for (int i = 0; i < n; i++) {
        int t = mhsa__sample_token(z, 2, 1.0f, 0, 1.0f, 0.0f, &s, order);
        ck_assert(t == 0 || t == 1);
        hits += t == 1;
    }
    ck_assert_double_eq_tol((double)hits / n, 0.75, 0.015);
    for (int i = 0; i < 1000; i++) {
        int t = mhsa__sample_token(z, 5, 5.0f, 3, 1.0f, 0.0f, &s, order);
        ck_assert(t == 0 || t == 1 || t == 3);
    }
    uint64_t a = 9, b = 9;
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(
            mhsa__sample_token(z, 5, 0.8f, 4, 1.0f, 0.0f, &a, order),
            mhsa__sample_token(z, 5, 0.8f, 4, 1.0f, 0.0f, &b, order));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("text_cli");
    TCase *tc = tcase_create("text");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_loop_test(tc, text_bad_input_exits_2, 0,
                        (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, text_help_documents_every_flag);
    tcase_add_test(tc, text_trains_and_reports);
    tcase_add_test(tc, sampler_distribution);
    tcase_add_test(tc, every_isa_name_is_accepted);
#ifdef MHSA_TEST_SAFETENSORS
    tcase_add_test(tc, text_resume_is_bit_for_bit);
    tcase_add_test(tc, text_same_bits_on_any_thread_count);
    tcase_add_test(tc, text_compute_bf16);
    tcase_add_test(tc, generate_same_text_on_any_thread_count);
    tcase_add_test(tc, generate_bad_input_exits_2);
    tcase_add_test(tc, generate_weight_dtype);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
