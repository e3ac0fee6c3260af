// test_generate_cli.c — mhsa-generate's refusals and inputs, run in-process
// (check forks each test): a FIFO as --model or --file is refused without
// blocking (an alarm turns a hang into a failure); a file that is neither
// GGUF nor safetensors says so; a prompt that is not UTF-8 is a usage
// error naming --prompt and the byte; -n 0 processes the prompt only; an
// OpenMP thread count past 1024 is lowered with a warning; --temperature,
// --seed and control bytes in values get messages that say what the rule
// is; the prompt comes from --file or stdin (--prompt -), whole, up to
// 64 MiB. The sampler picks the same token as the plain selection sort it
// replaced, on random logits with ties. The model is a small F32 Llama
// with a byte-level BPE vocabulary, written with tests/gguf_writer.c.
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "generate.h"
#include "gguf_writer.h"
#include "models/gguf/gguf.h"
#include "models/tokenizer/unicode.h"
#include "tmpdir.h"
#include "train/train_internal.h"
#include "nn/sample.h"
#include "util.h"

// ---- a small GGUF model with a tokenizer ------------------------------------

// 256 byte tokens, then BOS and EOS; one layer; context CTX.
enum { D = 16, H = 2, KV = 1, DH = 8, F = 32, L = 1, CTX = 64,
       ID_BOS = 256, ID_EOS = 257, V = 258 };

// Writes the model (once per test process) and returns its path.
static const char *model(void)
{
    const char *p = tpath("m.gguf");
    if (access(p, F_OK) == 0)
        return p;
    static float data[V * D];
    rng r = {4242};
    fill_uniform(&r, data, V * D, -0.5f, 0.5f);
    static const struct { const char *name; int rows, cols; } mats[] = {
        {"attn_q", D, D}, {"attn_k", KV * DH, D}, {"attn_v", KV * DH, D},
        {"attn_output", D, D}, {"ffn_gate", F, D}, {"ffn_up", F, D},
        {"ffn_down", D, F},
    };
    enum { N_MATS = sizeof mats / sizeof mats[0] };
    static char names[N_MATS][48];
    gw_tensor t[4 + N_MATS];
    size_t nt = 0;
    t[nt++] = (gw_tensor){"token_embd.weight", 2, {D, V}, MHSA_GGML_F32,
                          data, (size_t)V * D * 4};
    t[nt++] = (gw_tensor){"output_norm.weight", 1, {D}, MHSA_GGML_F32, data,
                          D * 4};
    t[nt++] = (gw_tensor){"blk.0.attn_norm.weight", 1, {D}, MHSA_GGML_F32,
                          data, D * 4};
    t[nt++] = (gw_tensor){"blk.0.ffn_norm.weight", 1, {D}, MHSA_GGML_F32,
                          data, D * 4};
    for (int i = 0; i < N_MATS; i++) {
        snprintf(names[i], 48, "blk.0.%s.weight", mats[i].name);
        t[nt++] = (gw_tensor){names[i], 2, {(uint64_t)mats[i].cols,
                                            (uint64_t)mats[i].rows},
                              MHSA_GGML_F32, data,
                              (size_t)mats[i].rows * mats[i].cols * 4};
    }
    gw w = {0};
    gw_header(&w, 3, nt, 15);
    gw_llama_shape(&w, L, CTX, D, F, H, KV, 1e-5f);
    gw_key(&w, "tokenizer.ggml.model", MHSA_GGUF_STRING);
    gw_str(&w, "gpt2");
    gw_key(&w, "tokenizer.ggml.pre", MHSA_GGUF_STRING);
    gw_str(&w, "smollm");
    gw_key(&w, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
    gw_arr(&w, MHSA_GGUF_STRING, V);
    for (int b = 0; b < 256; b++) {
        unsigned char u[4];
        size_t n = mhsa__utf8_put(mhsa__byte_to_cp((unsigned char)b), u);
        gw_strn(&w, (const char *)u, n);
    }
    gw_str(&w, "<|begin|>");
    gw_str(&w, "<|endoftext|>");
    gw_key(&w, "tokenizer.ggml.merges", MHSA_GGUF_ARRAY);
    gw_arr(&w, MHSA_GGUF_STRING, 1);
    gw_str(&w, "h e");
    gw_key_u32(&w, "tokenizer.ggml.bos_token_id", ID_BOS);
    gw_key_u32(&w, "tokenizer.ggml.eos_token_id", ID_EOS);
    gw_key(&w, "tokenizer.ggml.add_bos_token", MHSA_GGUF_BOOL);
    gw_u8(&w, 1);
    gw_tensors(&w, t, nt, 32);
    ck_assert_int_eq(gw_save(&w, p), 0);
    gw_free(&w);
    return p;
}

static void teardown(void)
{
    tpath_remove();
}

// Runs mhsa-generate on argv (NULL-terminated); expects exit status want
// and, when says is not NULL, a single line on stderr holding it. Returns
// stdout (malloc'd; free it).
static char *run(int want, const char *says, const char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    char *out, *err;
    int rc = run_captured(mhsa_generate_cli, &out, &err, argc, argv);
    ck_assert_msg(rc == want, "exit %d, expected %d; stderr: %s", rc, want,
                  err);
    if (says) {
        ck_assert_msg(strstr(err, says), "'%s' not in: %s", says, err);
        if (want == 2) {
            ck_assert_msg(count_lines(err) == 1, "not one line: %s", err);
            ck_assert_msg(!strncmp(err, "mhsa-generate: ", 15), "%s", err);
            ck_assert_str_eq(out, "");
        }
    }
    free(err);
    return out;
}

// ---- files that are not models or prompts ------------------------------------

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "blocked on a FIFO: the test's alarm\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

// A FIFO without a writer: opening it for reading blocks unless the open
// is non-blocking; the alarm fails the test instead of hanging it.
START_TEST(fifo_is_refused_without_blocking)
{
    const char *fifo = tpath("fifo");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    signal(SIGALRM, on_alarm);
    alarm(20);
    const char *a1[] = {"mhsa-generate", "--model", fifo, NULL};
    free(run(2, "is not a regular file (a FIFO)", a1));
    const char *a2[] = {"mhsa-generate", "--model", model(), "--file", fifo,
                        NULL};
    free(run(2, "is not a regular file (a FIFO)", a2));
    const char *a3[] = {"mhsa-generate", "--model", tpath_dir(), NULL};
    free(run(2, "is not a regular file (a directory)", a3));
    alarm(0);
}
END_TEST

START_TEST(not_a_model_says_so)
{
    const char *p = tpath("text.txt");
    FILE *f = fopen(p, "w");
    fputs("this is a text file, not a model\n", f);
    fclose(f);
    const char *a[] = {"mhsa-generate", "--model", p, NULL};
    free(run(2, "neither a GGUF file (magic 'GGUF') nor a safetensors", a));
    // Too short for either.
    f = fopen(p, "w");
    fputs("GG", f);
    fclose(f);
    free(run(2, "neither a GGUF file", a));
    const char *b[] = {"mhsa-generate", "--model", "/nonexistent/m.gguf",
                       NULL};
    free(run(2, "cannot open", b));
}
END_TEST

// ---- the prompt -------------------------------------------------------------

// Bytes that are not UTF-8 are refused by the tokenizer, and the command
// says which flag and which byte.
START_TEST(invalid_utf8_prompt_is_a_usage_error)
{
    static const struct { const char *prompt, *says; } c[] = {
        {"\xff\xfe\xfd", "offset 0 (0xff)"},
        {"ok \xc0\xaf", "offset 3 (0xc0)"},
        {"trunc \xe2\x82", "offset 6 (0xe2)"},
        {"sur \xed\xa0\x80", "offset 4 (0xed)"},
        {"big \xf5\x80\x80\x80", "offset 4 (0xf5)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const char *a[] = {"mhsa-generate", "--model", model(), "--prompt",
                           c[i].prompt, "-n", "2", NULL};
        char *err, *out;
        int rc = run_captured(mhsa_generate_cli, &out, &err, 7, a);
        ck_assert_msg(rc == 2, "case %zu: exit %d: %s", i, rc, err);
        ck_assert_msg(!strncmp(err, "mhsa-generate: --prompt: ", 25) &&
                      strstr(err, "not valid UTF-8") &&
                      strstr(err, c[i].says) && count_lines(err) == 1,
                      "case %zu: %s", i, err);
        ck_assert_str_eq(out, "");
        free(out);
        free(err);
    }
    // Valid UTF-8 still runs.
    const char *a[] = {"mhsa-generate", "--model", model(), "--prompt",
                       "caf\xc3\xa9 \xf0\x9f\x98\x80", "-n", "2", NULL};
    free(run(0, NULL, a));
}
END_TEST

// -n 0: the prompt is processed, nothing is generated.
START_TEST(zero_new_tokens_is_valid)
{
    const char *a[] = {"mhsa-generate", "--model", model(), "--prompt",
                       "hello", "-n", "0", NULL};
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_generate_cli, &out, &err, 7, a), 0);
    ck_assert_str_eq(out, "hello\n");
    ck_assert_msg(strstr(err, "prefill 6 tokens") &&
                  strstr(err, "decode 0 tokens"), "%s", err);
    free(out);
    free(err);
    const char *b[] = {"mhsa-generate", "--model", model(), "--prompt",
                       "hello", "-n", "0", "--ids", NULL};
    out = run(0, NULL, b);
    ck_assert_str_eq(out, "prompt_ids: 256 104 101 108 108 111\n"
                          "new_ids:\n");
    free(out);
    // The context's bound names the prompt and -n, and --ctx.
    const char *c[] = {"mhsa-generate", "--model", model(), "--prompt",
                       "hello", "-n", "3", "--ctx", "6", NULL};
    free(run(2, "--ctx 6 is too small: --prompt is 6 tokens, and -n needs "
             "room for one more", c));
    const char *d[] = {"mhsa-generate", "--model", model(), "--prompt",
                       "hello", "-n", "0", "--ctx", "6", NULL};
    free(run(0, NULL, d));
}
END_TEST

// The ids of a run (--ids, greedy) with the prompt given by the flags.
static char *ids_of(const char *flag, const char *value)
{
    const char *a[] = {"mhsa-generate", "--model", model(), flag, value,
                       "-n", "4", "--temperature", "0", "--ids", NULL};
    return run(0, NULL, a);
}

// --file and --prompt - give the same run as --prompt TEXT; stdin may be
// a pipe. A prompt of 300 KB (more than a command line holds) is read
// whole: its token count is in the message about the context.
START_TEST(prompt_from_file_and_stdin)
{
    static const char text[] = "hello world, \xc3\xa9t\xc3\xa9\n";
    const char *p = tpath("prompt.txt");
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    char *want = ids_of("--prompt", text);
    ck_assert_ptr_nonnull(strstr(want, "prompt_ids: 256 "));
    char *got = ids_of("--file", p);
    ck_assert_str_eq(got, want);
    free(got);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(write(fds[1], text, strlen(text)),
                     (ssize_t)strlen(text));
    close(fds[1]);
    ck_assert_int_eq(dup2(fds[0], 0), 0);
    close(fds[0]);
    got = ids_of("--prompt", "-");
    ck_assert_str_eq(got, want);
    free(got);
    free(want);

    f = fopen(p, "w");
    for (int i = 0; i < 300000; i++)
        fputc('a' + i % 26, f);
    fclose(f);
    const char *a[] = {"mhsa-generate", "--model", model(), "--file", p,
                       NULL};
    char says[128];
    snprintf(says, sizeof says, "prompt.txt is 300001 tokens, and -n "
             "needs room for one more; the model's context is %d", CTX);
    free(run(2, says, a));

    // Past 64 MiB: refused by its size, before reading (a sparse file).
    int fd = open(p, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, ((off_t)64 << 20) + 1), 0);
    close(fd);
    free(run(2, "67108865 bytes is more than the 67108864 (64 MiB)", a));
    const char *b[] = {"mhsa-generate", "--model", model(), "--file", p,
                       "--prompt", "x", NULL};
    free(run(2, "--prompt and --file: give one of them", b));
}
END_TEST

// ---- values -----------------------------------------------------------------

// One parse: the status and, for a refusal, the message.
static int parse(const char *flag, const char *value, char *msg, size_t cap)
{
    char *argv[] = {"mhsa-generate", "--model", "m.gguf", (char *)flag,
                    (char *)value, NULL};
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    gen_args a;
    int rc = parse_gen_args(5, argv, &a, f);
    rewind(f);
    size_t n = fread(msg, 1, cap - 1, f);
    msg[n] = '\0';
    fclose(f);
    return rc;
}

START_TEST(values_say_the_rule)
{
    static const struct { const char *flag, *value, *says; } c[] = {
        // A subnormal temperature is finite, and taken.
        {"--temperature", "1e-45", NULL},
        {"--temperature", "1e-50", "--temperature 1e-50 rounds to 0 as a "
                                   "float"},
        {"--temperature", "1e39", "larger than a float holds"},
        {"--temperature", "nan", "'nan' is not a finite number"},
        {"--temperature", "-0.5", "--temperature -0.5 must be >= 0"},
        {"--seed", "18446744073709551615", NULL},
        {"--seed", "18446744073709551616", "--seed 18446744073709551616 is "
                                           "out of range [0, 2^64-1]"},
        {"--seed", "-1", "--seed -1 is out of range [0, 2^64-1]"},
        {"--seed", "12x", "--seed: '12x' is not an integer"},
        // Control bytes are shown escaped, never sent to the terminal.
        {"--top-k", "\x1b[31mred", "--top-k: '\\x1b[31mred' is not an "
                                   "integer"},
        {"--isa", "a\rb\\", "unknown ISA 'a\\x0db\\x5c'"},
        {"--threads", "1025", "--threads 1025 is out of range (1..1024)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char msg[512];
        int rc = parse(c[i].flag, c[i].value, msg, sizeof msg);
        if (!c[i].says) {
            ck_assert_msg(rc == 0, "%s %s: %s", c[i].flag, c[i].value, msg);
            continue;
        }
        ck_assert_msg(rc == 2 && strstr(msg, c[i].says) &&
                      count_lines(msg) == 1, "%s: %s", c[i].says, msg);
        for (const char *s = msg; *s; s++)
            ck_assert_msg((unsigned char)*s >= 0x20 || *s == '\n',
                          "a control byte in: %s", msg);
    }
    char *argv[] = {"mhsa-generate", "--model", "m.gguf", "--temperature",
                    "1e-45", "--seed", "18446744073709551615", NULL};
    gen_args a;
    ck_assert_int_eq(parse_gen_args(7, argv, &a, stderr), 0);
    ck_assert(a.temperature > 0.0f && a.temperature < 1e-44f);
    ck_assert(a.seed == UINT64_MAX);
    // The model's name is escaped too.
    const char *m[] = {"mhsa-generate", "--model", "/nonexistent/\x1b]0;x\a",
                       NULL};
    free(run(2, "/nonexistent/\\x1b]0;x\\x07: cannot open", m));
}
END_TEST

// A tiny temperature runs (greedy but for ties).
START_TEST(subnormal_temperature_runs)
{
    const char *a[] = {"mhsa-generate", "--model", model(), "--prompt",
                       "hello", "-n", "3", "--ids", "--temperature", "1e-45",
                       NULL};
    const char *g[] = {"mhsa-generate", "--model", model(), "--prompt",
                       "hello", "-n", "3", "--ids", "--temperature", "0",
                       NULL};
    char *x = run(0, NULL, a), *y = run(0, NULL, g);
    ck_assert_str_eq(x, y);
    free(x);
    free(y);
}
END_TEST

// OpenMP's own count past the bound (as OMP_NUM_THREADS=100000 sets it):
// lowered to 1024 with a warning, and the run goes on.
START_TEST(too_many_openmp_threads_are_lowered)
{
    omp_set_num_threads(100000);
    const char *a[] = {"mhsa-generate", "--model", model(), "--prompt", "hi",
                       "-n", "2", NULL};
    char *out, *err;
    int rc = run_captured(mhsa_generate_cli, &out, &err, 7, a);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "OpenMP would run 100000 threads "
                         "(OMP_NUM_THREADS); using 1024") &&
                  strstr(err, "1024 threads"), "%s", err);
    free(out);
    free(err);
}
END_TEST

// ---- the sampler ------------------------------------------------------------

// The sampler before it was made O(V log k): a partial selection sort of
// the k largest (by value, then index), then the same draw.
static int reference_sample(const float *logits, int V, float temperature,
                            int top_k, uint64_t *rng, int *order)
{
    if (temperature <= 0.0f) {
        int best = 0;
        for (int j = 1; j < V; j++)
            if (logits[j] > logits[best])
                best = j;
        return best;
    }
    int k = top_k > 0 && top_k < V ? top_k : V;
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

// Random logits (few distinct values, so ties are many; some -inf and
// -0.0 / +0.0), temperatures and k (0, 1, V, past V and between): the same
// token and the same rng state as the reference.
START_TEST(sampler_matches_selection_sort)
{
    enum { MAXV = 300 };
    static float z[MAXV];
    static int o1[MAXV], o2[MAXV];
    rng r = {31337};
    for (int trial = 0; trial < 4000; trial++) {
        int V = rng_int(&r, 1, MAXV);
        int distinct = rng_int(&r, 1, 40);
        for (int j = 0; j < V; j++) {
            int q = rng_int(&r, 0, distinct);
            z[j] = q == 0 ? -INFINITY
                 : q == 1 ? (rng_int(&r, 0, 1) ? -0.0f : 0.0f)
                 : (float)(q - distinct / 2) * 0.37f;
        }
        static const float temps[] = {0.0f, 1e-45f, 0.05f, 0.8f, 1.0f, 7.0f};
        float T = temps[rng_int(&r, 0, 5)];
        int ks[] = {0, 1, 2, V - 1, V, V + 5, rng_int(&r, 1, V)};
        int k = ks[rng_int(&r, 0, 6)];
        uint64_t s1 = rng_u64(&r), s2 = s1;
        int a = mhsa__sample_token(z, V, T, k, 1.0f, 0.0f, &s1, o1);
        int b = reference_sample(z, V, T, k, &s2, o2);
        ck_assert_msg(a == b && s1 == s2, "trial %d: V %d T %g k %d: %d, "
                      "reference %d", trial, V, (double)T, k, a, b);
    }
}
END_TEST

// --top-k 0 over a large vocabulary: sampling among all V logits must
// cost O(V log V), not the O(V^2) of a selection sort (which would take
// about 700 s here, 1.5 s per token at SmolLM2's 49152). The test case's
// timeout (120 s, against about 1 s) is the check; the result must be
// a valid id, the order sorted, and its head the largest logit.
START_TEST(top_k_zero_over_a_million_logits_is_fast)
{
    enum { BIGV = 1 << 20 };
    float *z = malloc(BIGV * sizeof *z);
    int *order = malloc(BIGV * sizeof *order);
    ck_assert(z && order);
    rng r = {7};
    int best = 0;
    for (int j = 0; j < BIGV; j++) {
        z[j] = (float)rng_uniform(&r, -10.0f, 10.0f);
        best = z[j] > z[best] ? j : best;
    }
    uint64_t s = 99;
    int t = mhsa__sample_token(z, BIGV, 0.8f, 0, 1.0f, 0.0f, &s, order);
    ck_assert(t >= 0 && t < BIGV);
    ck_assert_int_eq(order[0], best);
    for (int j = 1; j < BIGV; j++)
        ck_assert(z[order[j - 1]] >= z[order[j]]);
    free(z);
    free(order);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("generate_cli");
    TCase *tc = tcase_create("generate_cli");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, fifo_is_refused_without_blocking);
    tcase_add_test(tc, not_a_model_says_so);
    tcase_add_test(tc, invalid_utf8_prompt_is_a_usage_error);
    tcase_add_test(tc, zero_new_tokens_is_valid);
    tcase_add_test(tc, prompt_from_file_and_stdin);
    tcase_add_test(tc, values_say_the_rule);
    tcase_add_test(tc, subnormal_temperature_runs);
    tcase_add_test(tc, too_many_openmp_threads_are_lowered);
    tcase_add_test(tc, sampler_matches_selection_sort);
    suite_add_tcase(s, tc);
    TCase *big = tcase_create("sampler_cost");
    tcase_set_timeout(big, 120);
    tcase_set_tags(big, "slow");   // (not under valgrind or qemu)
    tcase_add_test(big, top_k_zero_over_a_million_logits_is_fast);
    suite_add_tcase(s, big);
    return s;
}

int main(void) { return run_suite(suite()); }
