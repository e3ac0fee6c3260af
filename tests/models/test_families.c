// test_families.c — the Qwen2 and Llama 3 rows of the Llama runner and
// their tokenizers against llama.cpp (commit c392e50): the small files of
// tests/family_files.c (random weights, d_model 64, GQA, 2 layers; Qwen2's
// Q/K/V biases and NEOX rope, Llama 3's rope_freqs and untied head), the
// logits of every position of family_ids, and the ids of family_texts
// (digit runs, contractions, Unicode, whitespace runs, newlines, special
// tokens) with the "qwen2" and "llama-bpe" pre-tokenizers. The reference
// is tests/data/llama/family_refs.txt (tools/llama-ref/
// make_family_refs.sh), so llama.cpp is not needed here.
//
// Bounds: F32 weights, in the f32 mode and in file mode, on every ISA
// this machine runs: max |mhsa - llama.cpp| <= 1e-5 of the largest
// |logit| (both compute in fp32, in other orders: what remains is fp32
// rounding). Q8_0 weights in file mode (both quantize the activations to
// int8 per 32 values, as ggml does): 1e-3 of it, as a last-bit difference
// before a quantization step moves the int8 value.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "family_files.h"
#include "models/gguf/gguf.h"
#include "models/llama/llama.h"
#include "models/tokenizer/tokenizer.h"
#include "util.h"

enum { T = FAMILY_N_IDS, MAX_V = 512, MAX_IDS = 256 };

// One model's reference logits (T, V).
typedef struct ref_logits {
    int V;
    float *x;
} ref_logits;

static ref_logits refs[N_FAMILIES][2];   // [family][q8]
static int32_t ref_ids[N_FAMILIES][64][MAX_IDS];
static int ref_n[N_FAMILIES][64];

static family family_of(const char *name)
{
    for (int f = 0; f < N_FAMILIES; f++)
        if (!strcmp(name, family_name((family)f)))
            return (family)f;
    ck_abort_msg("family_refs.txt: unknown model %s", name);
    return N_FAMILIES;
}

static void read_refs(void)
{
    static int done;
    if (done)
        return;
    const char *path = data_path("llama/family_refs.txt");
    FILE *fp = fopen(path, "r");
    ck_assert_msg(fp != NULL, "%s", path);
    static char line[1 << 16];
    for (int f = 0; f < N_FAMILIES; f++)
        for (size_t i = 0; i < 64; i++)
            ref_n[f][i] = -1;
    while (fgets(line, sizeof line, fp)) {
        char name[32], type[16];
        int t, v;
        unsigned idx;
        int off;
        if (sscanf(line, "logits %31s %15s %d %d", name, type, &t, &v) ==
            4) {
            family f = family_of(name);
            int q8 = !strcmp(type, "q8_0");
            ck_assert_int_eq(t, T);
            ref_logits *r = &refs[f][q8];
            r->V = v;
            r->x = malloc((size_t)T * (size_t)v * sizeof(float));
            for (int i = 0; i < T * v; i++)
                ck_assert_int_eq(fscanf(fp, "%f", &r->x[i]), 1);
        } else if (sscanf(line, "tokens %31s %u:%n", name, &idx, &off) ==
                   2) {
            family f = family_of(name);
            ck_assert_uint_lt(idx, 64);
            int n = 0;
            char *p = line + off, *end;
            for (long id; (id = strtol(p, &end, 10)), end != p; p = end)
                ref_ids[f][idx][n++] = (int32_t)id;
            ref_n[f][idx] = n;
        }
    }
    fclose(fp);
    done = 1;
}

static void model_path(char *buf, size_t n, family f, int q8)
{
    const char *d = getenv("TMPDIR");
    snprintf(buf, n, "%s/mhsa-family-%s-%d-%ld.gguf", d && d[0] ? d : "/tmp",
             family_name(f), q8, (long)getpid());
}

// mhsa's logits of family_ids on family f's file against llama.cpp's,
// within bound of the largest |logit|.
static void check_logits(family f, int q8, int weights, double bound,
                         const char *isa)
{
    read_refs();
    const ref_logits *r = &refs[f][q8];
    ck_assert_msg(r->x != NULL, "no reference for %s", family_name(f));
    char path[512];
    model_path(path, sizeof path, f, q8);
    ck_assert_int_eq(family_write(f, q8, path), 0);
    mhsa_llama *m;
    mhsa_status st = mhsa__llama_load_ex(path, 0, weights, &m);
    unlink(path);
    ck_assert_msg(st == MHSA_OK, "%s", mhsa_last_error());
    ck_assert_int_eq(mhsa__llama_config(m)->vocab, r->V);
    mhsa_llama_cache *c;
    ck_assert_int_eq(mhsa__llama_cache_create(m, MHSA_F32, &c), MHSA_OK);
    static float lg[T * MAX_V];
    ck_assert_int_le(r->V, MAX_V);
    ck_assert_int_eq(mhsa__llama_forward(m, c, family_ids, T, 1, lg),
                     MHSA_OK);
    double scale = 0.0, worst = 0.0;
    int at = 0;
    for (int i = 0; i < T * r->V; i++) {
        scale = fmax(scale, fabs((double)r->x[i]));
        double d = fabs((double)lg[i] - (double)r->x[i]);
        if (d > worst) {
            worst = d;
            at = i;
        }
    }
    printf("%s %s %s (%s): max |diff| %.3g, %.3g of the largest |logit| "
           "%.3g\n", family_name(f), q8 ? "q8_0" : "f32",
           weights == MHSA__WEIGHTS_FILE ? "file mode" : "f32 mode", isa,
           worst, worst / scale, scale);
    ck_assert_msg(worst <= bound * scale, "%s %s (%s): position %d token "
                  "%d: mhsa %.9g, llama.cpp %.9g (bound %.3g x %.3g)",
                  family_name(f), q8 ? "q8_0" : "f32", isa, at / r->V,
                  at % r->V, (double)lg[at], (double)r->x[at], bound, scale);
    mhsa__llama_cache_destroy(c);
    mhsa__llama_destroy(m);
}

// _i: all_isas[_i] (skipped where not built or not supported).
START_TEST(logits_match_llama_cpp)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    const char *isa = mhsa_isa_name(all_isas[_i]);
    for (int f = 0; f < N_FAMILIES; f++) {
        check_logits((family)f, 0, MHSA_F32, 1e-5, isa);
        check_logits((family)f, 0, MHSA__WEIGHTS_FILE, 1e-5, isa);
        check_logits((family)f, 1, MHSA__WEIGHTS_FILE, 1e-3, isa);
    }
}
END_TEST

START_TEST(tokens_match_llama_cpp)
{
    read_refs();
    for (int f = 0; f < N_FAMILIES; f++) {
        char path[512];
        model_path(path, sizeof path, (family)f, 0);
        ck_assert_int_eq(family_write((family)f, 0, path), 0);
        mhsa_gguf_file *g = NULL;
        mhsa_tokenizer *t = NULL;
        ck_assert_int_eq(mhsa__gguf_open(path, &g), MHSA_OK);
        unlink(path);
        ck_assert_msg(mhsa__tok_load(g, &t) == MHSA_OK, "%s",
                      mhsa_last_error());
        for (size_t i = 0; i < family_n_texts; i++) {
            const char *s = family_texts[i];
            static int32_t ids[4 * MAX_IDS];
            size_t n;
            ck_assert_int_eq(mhsa__tok_encode(t, s, strlen(s),
                                              MHSA_TOK_ADD_SPECIAL |
                                              MHSA_TOK_PARSE_SPECIAL, ids,
                                              sizeof ids / sizeof *ids, &n),
                             MHSA_OK);
            ck_assert_msg(ref_n[f][i] >= 0, "no reference ids for %s text "
                          "%zu", family_name((family)f), i);
            int same = n == (size_t)ref_n[f][i] &&
                       !memcmp(ids, ref_ids[f][i], n * sizeof *ids);
            if (!same) {
                fprintf(stderr, "%s text %zu: mhsa", family_name((family)f),
                        i);
                for (size_t k = 0; k < n; k++)
                    fprintf(stderr, " %d", ids[k]);
                fprintf(stderr, "\n  llama.cpp");
                for (int k = 0; k < ref_n[f][i]; k++)
                    fprintf(stderr, " %d", ref_ids[f][i][k]);
                fprintf(stderr, "\n");
            }
            ck_assert_msg(same, "%s: text %zu: ids differ from llama.cpp's",
                          family_name((family)f), i);
        }
        mhsa__tok_free(t);
        mhsa__gguf_close(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("families");
    TCase *tc = tcase_create("families");
    tcase_add_loop_test(tc, logits_match_llama_cpp, 0, N_ISAS);
    tcase_add_test(tc, tokens_match_llama_cpp);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
