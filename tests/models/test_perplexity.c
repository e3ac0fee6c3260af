// test_perplexity.c — mhsa-generate --perplexity against values computed
// by hand. The models (written with tests/gguf_writer.c) make the logits
// known in closed form:
//
// - one layer whose Q, K and MLP weights are zero, a vocabulary of 256 byte
//   tokens, BOS (256) and EOS (257), width D = 324 = 18^2, RMSNorm eps FLT_MIN
//   (1 + eps rounds to 1);
// - token t embeds as 18 e_t, so every RMSNorm of it is 18 e_t exactly
//   (sum of squares 324, mean 1);
// - the head maps 18 e_t to the logit L = 18 w for token t + 1 and 0 for
//   all others: a byte followed by its successor scores
//   log(e^L + 257) - L, any other pair log(e^L + 257). With w = 0 the
//   logits are all 0: the perplexity is the vocabulary size, 258;
// - with b != 0, the attention carries BOS: V reads the BOS coordinate,
//   the zero Q and K make the weights uniform, so position i of a chunk
//   whose first token is BOS gets beta = 18 b / (i + 1) in a coordinate
//   Z that no token uses, and the final RMSNorm scales the logit to
//   L / sqrt(1 + beta^2 / 324). Without BOS, beta = 0.
//
// The text "qazmnopxkcfgqea" (tokens 1..15 after BOS) has successor pairs
// at tokens 5, 6, 7 (m n o p) and 12 (f g). Which of them count depends on
// the chunking: --ctx 8 scores tokens 5, 6, 7 | 13, 14, 15 (3 of 6
// successors), --ctx 4 tokens 3 | 7 | 11 | 15 (1 of 4), --ctx 5 tokens
// 3, 4 | 8, 9 | 13, 14 (0 of 6; token 15 is in no chunk).
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "generate.h"
#include "gguf_writer.h"
#include "models/gguf/gguf.h"
#include "models/tokenizer/unicode.h"
#include "tmpdir.h"
#include "util.h"

enum { D = 324, H = 2, KV = 1, DH = 162, F = 8, CTX = 64, ID_BOS = 256,
       ID_EOS = 257, V = 258, Z = 258 };

static const char TEXT[] = "qazmnopxkcfgqea";   // 15 bytes
static const float W = 0.4375f;                 // L = 18 W = 7.875

// The model described above, as the file `name`; returns its path.
static const char *write_model(const char *name, int add_bos, float w,
                               float b)
{
    const char *p = tpath(name);
    static float emb[V * D], head[V * D], ones[D], zero[D * D], v[KV * DH * D],
                 o[D * H * DH];
    memset(emb, 0, sizeof emb);
    memset(head, 0, sizeof head);
    memset(v, 0, sizeof v);
    memset(o, 0, sizeof o);
    for (int t = 0; t < V; t++)
        emb[t * D + t] = 18.0f;
    for (int t = 0; t + 1 < 256; t++)   // bytes: t predicts t + 1
        head[(t + 1) * D + t] = w;
    for (int d = 0; d < D; d++)
        ones[d] = 1.0f;
    v[ID_BOS] = 1.0f;                   // V's coordinate 0 reads BOS
    o[Z * (H * DH) + 0] = b;            // head 0's coordinate 0 into Z
    static const struct { const char *name; int rows, cols; } mats[] = {
        {"attn_q", D, D}, {"attn_k", KV * DH, D}, {"attn_v", KV * DH, D},
        {"attn_output", D, H * DH}, {"ffn_gate", F, D}, {"ffn_up", F, D},
        {"ffn_down", D, F},
    };
    enum { N_MATS = sizeof mats / sizeof mats[0] };
    char names[N_MATS][48];
    gw_tensor t[5 + N_MATS];
    size_t nt = 0;
    t[nt++] = (gw_tensor){"token_embd.weight", 2, {D, V}, MHSA_GGML_F32, emb,
                          sizeof emb};
    t[nt++] = (gw_tensor){"output.weight", 2, {D, V}, MHSA_GGML_F32, head,
                          sizeof head};
    t[nt++] = (gw_tensor){"output_norm.weight", 1, {D}, MHSA_GGML_F32, ones,
                          sizeof ones};
    t[nt++] = (gw_tensor){"blk.0.attn_norm.weight", 1, {D}, MHSA_GGML_F32,
                          ones, sizeof ones};
    t[nt++] = (gw_tensor){"blk.0.ffn_norm.weight", 1, {D}, MHSA_GGML_F32,
                          ones, sizeof ones};
    for (int i = 0; i < N_MATS; i++) {
        snprintf(names[i], sizeof names[i], "blk.0.%s.weight", mats[i].name);
        const float *data = !strcmp(mats[i].name, "attn_v") ? v
                          : !strcmp(mats[i].name, "attn_output") ? o : zero;
        t[nt++] = (gw_tensor){names[i], 2, {(uint64_t)mats[i].cols,
                                            (uint64_t)mats[i].rows},
                              MHSA_GGML_F32, data,
                              (size_t)mats[i].rows * mats[i].cols * 4};
    }
    gw g = {0};
    gw_header(&g, 3, nt, 15);
    // eps FLT_MIN: the least the loader takes (1 + eps is 1).
    gw_llama_shape(&g, 1, CTX, D, F, H, KV, FLT_MIN);
    gw_key(&g, "tokenizer.ggml.model", MHSA_GGUF_STRING);
    gw_str(&g, "gpt2");
    gw_key(&g, "tokenizer.ggml.pre", MHSA_GGUF_STRING);
    gw_str(&g, "smollm");
    gw_key(&g, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
    gw_arr(&g, MHSA_GGUF_STRING, V);
    for (int c = 0; c < 256; c++) {
        unsigned char u[4];
        size_t n = mhsa__utf8_put(mhsa__byte_to_cp((unsigned char)c), u);
        gw_strn(&g, (const char *)u, n);
    }
    gw_str(&g, "<|begin|>");
    gw_str(&g, "<|endoftext|>");
    gw_key(&g, "tokenizer.ggml.merges", MHSA_GGUF_ARRAY);
    gw_arr(&g, MHSA_GGUF_STRING, 1);
    gw_str(&g, "h e");
    gw_key_u32(&g, "tokenizer.ggml.bos_token_id", ID_BOS);
    gw_key_u32(&g, "tokenizer.ggml.eos_token_id", ID_EOS);
    gw_key(&g, "tokenizer.ggml.add_bos_token", MHSA_GGUF_BOOL);
    gw_u8(&g, (uint8_t)add_bos);
    gw_tensors(&g, t, nt, 32);
    ck_assert_int_eq(gw_save(&g, p), 0);
    gw_free(&g);
    return p;
}

static const char *write_text(const char *name, const char *text)
{
    const char *p = tpath(name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
    return p;
}

static void teardown(void)
{
    tpath_remove();
}

// mhsa-generate --model model --perplexity text [--ctx ctx] [extra...]:
// exit status want; *err (when not NULL) gets stderr. Returns stdout.
static char *ppl_run(int want, const char *model, const char *text,
                     const char *ctx, const char *extra, const char *extra2,
                     char **err_out)
{
    const char *argv[12];
    int argc = 0;
    argv[argc++] = "mhsa-generate";
    argv[argc++] = "--model";
    argv[argc++] = model;
    argv[argc++] = "--perplexity";
    argv[argc++] = text;
    if (ctx) {
        argv[argc++] = "--ctx";
        argv[argc++] = ctx;
    }
    if (extra)
        argv[argc++] = extra;
    if (extra2)
        argv[argc++] = extra2;
    argv[argc] = NULL;
    char *out, *err;
    int rc = run_captured(mhsa_generate_cli, &out, &err, argc, argv);
    ck_assert_msg(rc == want, "exit %d, expected %d; stderr: %s", rc, want,
                  err);
    if (err_out)
        *err_out = err;
    else
        free(err);
    return out;
}

// A refusal: exit 2, one line on stderr holding `says`, nothing on stdout.
static void refused(const char *model, const char *text, const char *ctx,
                    const char *extra, const char *extra2, const char *says)
{
    char *err;
    char *out = ppl_run(2, model, text, ctx, extra, extra2, &err);
    ck_assert_msg(strstr(err, says), "'%s' not in: %s", says, err);
    ck_assert_msg(count_lines(err) == 1 && !strncmp(err, "mhsa-generate: ",
                                                    15), "%s", err);
    ck_assert_str_eq(out, "");
    free(out);
    free(err);
}

// The value of stdout, which must be the one line "perplexity: X.XXXX".
static double printed(const char *out)
{
    double x = 0.0;
    int n = 0;
    ck_assert_msg(sscanf(out, "perplexity: %lf%n", &x, &n) == 1, "%s", out);
    ck_assert_msg(!strcmp(out + n, "\n") && n > 5 && out[n - 5] == '.',
                  "not one line of 4 decimals: '%s'", out);
    return x;
}

// The perplexity of scored predictions i = 0..n-1 made at positions
// pos[i] of their chunk, hit[i] = 1 where the target is the successor; beta
// from BOS at the chunk's start (bos_b = b) or none (bos_b = 0).
static double expect(int n, const int *pos, const int *hit, double bos_b)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        double beta = bos_b * 18.0 / (pos[i] + 1);
        double L = 18.0 * (double)W / sqrt(1.0 + beta * beta / D);
        sum += log(exp(L) + (V - 1)) - (hit[i] ? L : 0.0);
    }
    return exp(sum / n);
}

// The same with every position's beta 0: by hits and count only.
static double expect_hits(int n, int hits)
{
    double L = 18.0 * (double)W;
    return exp((n * log(exp(L) + (V - 1)) - hits * L) / n);
}

static void check_value(const char *out, double want, double rel)
{
    double got = printed(out);
    // 4 decimals: the print's rounding, and float's on the logits (rel).
    ck_assert_msg(fabs(got - want) <= 6e-5 + rel * want,
                  "printed %s, expected %.6f", out, want);
}

// All logits 0: the perplexity is the vocabulary size, in any chunking.
START_TEST(uniform_logits_give_the_vocabulary_size)
{
    const char *m = write_model("u.gguf", 1, 0.0f, 0.0f);
    const char *t = write_text("t.txt", TEXT);
    static const char *const ctx[] = {"8", "4", "5", "3"};
    for (int i = 0; i < 4; i++) {
        char *err;
        char *out = ppl_run(0, m, t, ctx[i], NULL, NULL, &err);
        ck_assert_str_eq(out, "perplexity: 258.0000\n");
        ck_assert_msg(strstr(err, "[1]258.0000,[2]258.0000,") &&
                      strstr(err, "Final estimate: PPL = 258.0000"), "%s",
                      err);
        free(out);
        free(err);
    }
}
END_TEST

// --ctx sets the chunks: how many, and which tokens count.
START_TEST(ctx_sets_the_chunks_and_the_scored_tokens)
{
    const char *m = write_model("m.gguf", 1, W, 0.0f);
    const char *t = write_text("t.txt", TEXT);
    static const struct { const char *ctx, *chunks; int n, hits; } c[] = {
        {"8", "16 tokens, 2 chunks of 8, each scored on its last 3", 6, 3},
        {"4", "16 tokens, 4 chunks of 4, each scored on its last 1", 4, 1},
        {"5", "16 tokens, 3 chunks of 5, each scored on its last 2", 6, 0},
    };
    double seen[3];
    for (int i = 0; i < 3; i++) {
        char *err;
        char *out = ppl_run(0, m, t, c[i].ctx, NULL, NULL, &err);
        ck_assert_msg(strstr(err, c[i].chunks), "%s", err);
        seen[i] = expect_hits(c[i].n, c[i].hits);
        check_value(out, seen[i], 1e-9);
        free(out);
        free(err);
    }
    ck_assert(fabs(seen[0] - seen[1]) > 1.0 && fabs(seen[1] - seen[2]) > 1.0);
    // The running estimate after each chunk (--ctx 4: token 3 is not a
    // successor, token 7 is).
    char *err;
    char *out = ppl_run(0, m, t, "4", NULL, NULL, &err);
    char want[128];
    snprintf(want, sizeof want, "[1]%.4f,[2]%.4f,[3]%.4f,[4]%.4f,\n",
             expect_hits(1, 0), expect_hits(2, 1), expect_hits(3, 1),
             expect_hits(4, 1));
    ck_assert_msg(strstr(err, want), "'%s' not in: %s", want, err);
    free(out);
    free(err);
}
END_TEST

// Every chunk starts with BOS where the model adds it: the attention sees
// it in both chunks (the second chunk's first token, 'x', is replaced).
// The same bits on 1 and 2 threads.
START_TEST(bos_starts_every_chunk)
{
    const float b = 2.0f;
    const char *m = write_model("b.gguf", 1, W, b);
    const char *t = write_text("t.txt", TEXT);
    static const int pos[6] = {4, 5, 6, 4, 5, 6}, hit[6] = {1, 1, 1, 0, 0, 0};
    double want = expect(6, pos, hit, b);
    // Were the second chunk not started with BOS, its beta would be 0.
    double first_only = exp((3 * log(expect(3, pos, hit, b)) +
                             3 * log(expect(3, pos + 3, hit + 3, 0.0))) / 6);
    ck_assert(fabs(want - first_only) > 0.1);
    ck_assert(fabs(want - expect_hits(6, 3)) > 0.1);
    char *one = ppl_run(0, m, t, "8", "--threads", "1", NULL);
    char *two = ppl_run(0, m, t, "8", "--threads", "2", NULL);
    check_value(one, want, 3e-6);
    ck_assert_str_eq(one, two);
    free(one);
    free(two);
}
END_TEST

// A model that adds no BOS: the text's own tokens, none replaced (beta 0
// everywhere), and one token fewer for the length rule.
START_TEST(no_bos_where_the_model_adds_none)
{
    const char *m = write_model("n.gguf", 0, W, 2.0f);
    char text[32];
    snprintf(text, sizeof text, "Q%s", TEXT);   // 'Q' then TEXT: 16 tokens
    char *err;
    char *out = ppl_run(0, m, write_text("q.txt", text), "8", NULL, NULL,
                        &err);
    ck_assert_msg(strstr(err, "16 tokens, 2 chunks of 8"), "%s", err);
    check_value(out, expect_hits(6, 3), 1e-9);
    free(out);
    free(err);
    refused(m, write_text("t.txt", TEXT), "8", NULL, NULL,
            "the text is 15 tokens; a context of 8 needs at least 16 (2 "
            "chunks)");
}
END_TEST

// The file's last newline is dropped, as llama-perplexity -f drops it;
// only one.
START_TEST(final_newline_is_dropped)
{
    const char *m = write_model("n.gguf", 0, W, 0.0f);
    char text[32];
    snprintf(text, sizeof text, "%s\n", TEXT);
    refused(m, write_text("t.txt", text), "8", NULL, NULL,
            "the text is 15 tokens");
    snprintf(text, sizeof text, "Q%s\n\n", TEXT);
    char *err;
    char *out = ppl_run(0, m, write_text("q.txt", text), "8", NULL, NULL,
                        &err);
    ck_assert_msg(strstr(err, "17 tokens, 2 chunks of 8"), "%s", err);
    check_value(out, expect_hits(6, 3), 1e-9);
    free(out);
    free(err);
}
END_TEST

// Special tokens' text is plain text, as llama-perplexity tokenizes it:
// "<|endoftext|>abc" is 16 byte tokens, not EOS and 3.
START_TEST(special_tokens_text_is_plain)
{
    const char *m = write_model("u.gguf", 1, 0.0f, 0.0f);
    const char *t = write_text("s.txt", "<|endoftext|>abc");
    char *err;
    char *out = ppl_run(0, m, t, "8", NULL, NULL, &err);
    ck_assert_msg(strstr(err, "17 tokens, 2 chunks of 8"), "%s", err);
    ck_assert_str_eq(out, "perplexity: 258.0000\n");
    free(out);
    free(err);
}
END_TEST

START_TEST(refusals_say_why)
{
    const char *m = write_model("m.gguf", 1, W, 0.0f);
    const char *t = write_text("t.txt", TEXT);
    char says[160];
    // The default chunk is the model's context (64 < 512).
    refused(m, t, NULL, NULL, NULL, "the text is 16 tokens; a context of 64 "
            "(the default --ctx) needs at least 128 (2 chunks)");
    refused(m, t, "9", NULL, NULL, "the text is 16 tokens; a context of 9 "
            "needs at least 18");
    snprintf(says, sizeof says, "--ctx %d is more than the model's context "
             "of %d positions", CTX + 1, CTX);
    char ctx[16];
    snprintf(ctx, sizeof ctx, "%d", CTX + 1);
    refused(m, t, ctx, NULL, NULL, says);
    refused(m, t, "2", NULL, NULL, "--ctx 2 is too small for --perplexity");
    refused(m, "/nonexistent/t.txt", "8", NULL, NULL,
            "--perplexity /nonexistent/t.txt: cannot open");
    refused(m, tpath_dir(), "8", NULL, NULL,
            "is not a regular file (a directory)");
    refused(m, t, "8", "-n", "5", "--perplexity scores a text and generates "
            "nothing: -n does not apply");
    refused(m, t, "8", "--prompt", "x", "--prompt does not apply");
    refused(m, t, "8", "--ids", NULL, "--ids does not apply");
    refused(m, write_text("bad.txt", "abc\xff"), "8", NULL, NULL,
            "not valid UTF-8");
    // Enough text for the default context: it runs, in chunks of 64.
    char long_text[200];
    for (int i = 0; i < 199; i++)
        long_text[i] = (char)('a' + i % 26);
    long_text[199] = '\0';
    char *err;
    char *out = ppl_run(0, write_model("u.gguf", 1, 0.0f, 0.0f),
                        write_text("l.txt", long_text), NULL, NULL, NULL,
                        &err);
    ck_assert_msg(strstr(err, "200 tokens, 3 chunks of 64"), "%s", err);
    ck_assert_str_eq(out, "perplexity: 258.0000\n");
    free(out);
    free(err);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("perplexity");
    TCase *tc = tcase_create("perplexity");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, uniform_logits_give_the_vocabulary_size);
    tcase_add_test(tc, ctx_sets_the_chunks_and_the_scored_tokens);
    tcase_add_test(tc, bos_starts_every_chunk);
    tcase_add_test(tc, no_bos_where_the_model_adds_none);
    tcase_add_test(tc, final_newline_is_dropped);
    tcase_add_test(tc, special_tokens_text_is_plain);
    tcase_add_test(tc, refusals_say_why);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
