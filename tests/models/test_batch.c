// test_batch.c — mhsa_batch_eval (include/mhsa_model.h) on the small Qwen2
// and Llama 3 files of tests/family_files.c, with F32 matrices (the items
// run one after another) and Q8_0 ones (one shared forward): every item's
// logits, at every step of a schedule where sequences start at different
// steps (a prompt's prefill joining others' decoding), in a shuffled order,
// on 1, 2 and 3 threads, are the bits mhsa_seq_eval gives the same
// sequence alone; steps whose rows exceed a model's context are split
// into forwards with the same bits; and every refusal leaves every
// sequence unchanged.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "family_files.h"
#include "mhsa_model.h"
#include "util.h"

enum { MAX_V = 512, NSEQ = 5, GEN = 5, MAX_PROMPT = 13 };

static const char *path_of(family f, int q8)
{
    const char *p = family_temp_file(f, q8, NULL);
    ck_assert_ptr_nonnull(p);
    return p;
}

static mhsa_model *load(family f, int q8, int context)
{
    mhsa_model_params p = {.context = context};
    mhsa_model *m = NULL;
    mhsa_status st = mhsa_model_load(path_of(f, q8), &p, &m);
    ck_assert_msg(st == MHSA_OK, "%s", mhsa_last_error());
    return m;
}

static int argmax(const float *z, size_t V)
{
    size_t best = 0;
    for (size_t j = 1; j < V; j++)
        if (z[j] > z[best])
            best = j;
    return (int)best;
}

// A sequence of the schedule: its prompt, the step it starts at, whether
// its prefill asks for every row's logits, and what it gives alone: the
// prefill's logits (rows), then those of each greedy step.
typedef struct plan {
    int32_t prompt[MAX_PROMPT];
    size_t n;
    int start;
    int all;
    float *alone;   // (n or 1) + GEN rows of V
    size_t rows;    // of alone
} plan;

static void run_alone(mhsa_model *m, plan *p, size_t V)
{
    mhsa_seq *s;
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &s), MHSA_OK);
    size_t first = p->all ? p->n : 1;
    p->rows = first + GEN;
    p->alone = malloc(p->rows * V * sizeof(float));
    ck_assert(p->alone);
    ck_assert_int_eq(mhsa_seq_eval(s, p->prompt, p->n,
                                   p->all ? MHSA_LOGITS_ALL
                                          : MHSA_LOGITS_LAST,
                                   p->alone, first * V), MHSA_OK);
    float *last = p->alone + (first - 1) * V;
    for (int g = 0; g < GEN; g++) {
        int32_t t = argmax(last, V);
        float *out = p->alone + (first + (size_t)g) * V;
        ck_assert_int_eq(mhsa_seq_eval(s, &t, 1, MHSA_LOGITS_LAST, out, V),
                         MHSA_OK);
        last = out;
    }
    mhsa_seq_destroy(s);
}

// The schedule through mhsa_batch_eval on nt threads: at each step the
// sequences that start then join with their prompts, the started ones
// advance by their greedy token, in an order shuffled by r. Every item's
// logits must be the plan's alone.
static void run_batched(mhsa_model *m, plan *pl, int np, size_t V, rng *r,
                        int nt, const char *what)
{
    mhsa_seq *s[NSEQ];
    int done[NSEQ] = { 0 };   // steps taken: 0 = not started
    static float out[NSEQ][MAX_PROMPT * MAX_V];
    int32_t next[NSEQ];
    for (int i = 0; i < np; i++)
        ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &s[i]), MHSA_OK);
    omp_set_num_threads(nt);
    for (int t = 0;; t++) {
        mhsa_batch_item it[NSEQ];
        int who[NSEQ], k = 0;
        for (int i = 0; i < np; i++) {
            if (pl[i].start > t || done[i] > GEN)
                continue;
            if (done[i] == 0)
                it[k] = (mhsa_batch_item){ s[i], pl[i].prompt, pl[i].n,
                                           pl[i].all ? MHSA_LOGITS_ALL
                                                     : MHSA_LOGITS_LAST,
                                           out[i], MAX_PROMPT * MAX_V };
            else
                it[k] = (mhsa_batch_item){ s[i], &next[i], 1,
                                           MHSA_LOGITS_LAST, out[i], V };
            who[k++] = i;
        }
        if (k == 0)
            break;
        for (int a = k - 1; a > 0; a--) {   // shuffle the items
            int b = rng_int(r, 0, a);
            mhsa_batch_item ti = it[a];
            int tw = who[a];
            it[a] = it[b];
            who[a] = who[b];
            it[b] = ti;
            who[b] = tw;
        }
        mhsa_status st = mhsa_batch_eval(m, it, (size_t)k);
        ck_assert_msg(st == MHSA_OK, "%s: %s", what, mhsa_last_error());
        for (int j = 0; j < k; j++) {
            int i = who[j];
            size_t first = pl[i].all ? pl[i].n : 1;
            size_t row = done[i] == 0 ? 0 : first + (size_t)done[i] - 1;
            size_t rows = done[i] == 0 ? first : 1;
            ck_assert_msg(!memcmp(out[i], pl[i].alone + row * V,
                                  rows * V * sizeof(float)),
                          "%s, %d threads: sequence %d step %d differs "
                          "from alone (%d items in the step)", what, nt, i,
                          done[i], k);
            next[i] = argmax(out[i] + (rows - 1) * V, V);
            done[i]++;
        }
    }
    for (int i = 0; i < np; i++) {
        ck_assert_int_eq(mhsa_seq_len(s[i]), (int)pl[i].n + GEN);
        mhsa_seq_destroy(s[i]);
    }
    omp_set_num_threads(2);
}

static void make_plans(plan *pl, int np, const int *len, const int *start,
                       size_t V, rng *r)
{
    for (int i = 0; i < np; i++) {
        pl[i].n = (size_t)len[i];
        pl[i].start = start[i];
        pl[i].all = i == 1;
        for (int j = 0; j < len[i]; j++)
            pl[i].prompt[j] = rng_int(r, 0, (int)V - 1);
    }
}

static void check_schedule(int context, const int *len, const int *start,
                           int np)
{
    for (int q8 = 0; q8 < 2; q8++)
        for (int f = 0; f < N_FAMILIES; f++) {
            mhsa_model *m = load((family)f, q8, context);
            size_t V = (size_t)mhsa_model_n_vocab(m);
            ck_assert_uint_le(V, MAX_V);
            rng r = { 11 + (uint64_t)f };
            plan pl[NSEQ];
            make_plans(pl, np, len, start, V, &r);
            for (int i = 0; i < np; i++)
                run_alone(m, &pl[i], V);
            char what[96];
            snprintf(what, sizeof what, "%s %s context %d",
                     family_name((family)f), q8 ? "Q8_0" : "F32", context);
            for (int nt = 1; nt <= (test_quick() ? 2 : 3); nt++)
                run_batched(m, pl, np, V, &r, nt, what);
            for (int i = 0; i < np; i++)
                free(pl[i].alone);
            mhsa_model_free(m);
        }
}

START_TEST(items_equal_alone)
{
    static const int len[NSEQ] = { 11, 7, 1, 13, 4 };
    static const int start[NSEQ] = { 0, 0, 1, 3, 3 };
    check_schedule(32, len, start, NSEQ);
}
END_TEST

// A context of 16 positions: the activation buffers hold 16 rows, so a
// step of 9 + 8 + 5 prompt rows runs as several forwards.
START_TEST(steps_beyond_the_buffers_split)
{
    static const int len[3] = { 9, 8, 5 };
    static const int start[3] = { 0, 0, 0 };
    check_schedule(16, len, start, 3);
}
END_TEST

// A prompt given in pieces of two or more rows gives the bits of the
// prompt in one call, with quantized matrices (each product row alone; the
// attention's tiles start at fixed key positions). Pieces of one row are
// not covered: they take the decoding kernel, which splits the keys into
// chunks and sums in another order.
START_TEST(prompt_pieces_equal_one_call)
{
    enum { P = 29 };
    static float whole[P * MAX_V], parts[P * MAX_V];
    for (int f = 0; f < N_FAMILIES; f++) {
        mhsa_model *m = load((family)f, 1, 32);
        size_t V = (size_t)mhsa_model_n_vocab(m);
        rng r = { 5 + (uint64_t)f };
        int32_t prompt[P];
        for (int j = 0; j < P; j++)
            prompt[j] = rng_int(&r, 0, (int)V - 1);
        mhsa_seq *s;
        ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &s), MHSA_OK);
        ck_assert_int_eq(mhsa_seq_eval(s, prompt, P, MHSA_LOGITS_ALL, whole,
                                       P * V), MHSA_OK);
        for (int rep = 0; rep < 6; rep++) {
            mhsa_seq_reset(s);
            for (int at = 0; at < P;) {
                int left = P - at, n = rep == 0 ? 2 : rng_int(&r, 2, 9);
                if (n > left || left - n == 1)   // no piece of one row
                    n = left;
                ck_assert_int_eq(mhsa_seq_eval(s, prompt + at, (size_t)n,
                                               MHSA_LOGITS_ALL,
                                               parts + (size_t)at * V,
                                               (size_t)n * V), MHSA_OK);
                at += n;
            }
            ck_assert_msg(!memcmp(whole, parts, P * V * sizeof(float)),
                          "%s: a prompt in pieces differs from one call",
                          family_name((family)f));
        }
        mhsa_seq_destroy(s);
        mhsa_model_free(m);
    }
}
END_TEST

// The last error names mhsa_batch_eval and says `what`.
static void says(const char *what)
{
    const char *e = mhsa_last_error();
    ck_assert_msg(strstr(e, "mhsa_batch_eval") && strstr(e, what),
                  "wanted \"%s\" in: %s", what, e);
}

START_TEST(refusals_change_nothing)
{
    mhsa_model *m = load(FAMILY_QWEN2, 1, 16), *m2 = load(FAMILY_QWEN2, 1, 16);
    size_t V = (size_t)mhsa_model_n_vocab(m);
    static float la[MAX_V], lb[MAX_V];
    mhsa_seq *a, *b, *c;
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &a), MHSA_OK);
    ck_assert_int_eq(mhsa_seq_create(m, MHSA_F32, &b), MHSA_OK);
    ck_assert_int_eq(mhsa_seq_create(m2, MHSA_F32, &c), MHSA_OK);
    int32_t ta[3] = { 1, 2, 3 }, tb[2] = { 4, 5 }, bad[2] = { 6, (int32_t)V };
    int32_t t17[17];   // valid ids, one more than a sequence holds
    for (int j = 0; j < 17; j++)
        t17[j] = j;
    ck_assert_int_eq(mhsa_batch_eval(m, NULL, 0), MHSA_OK);
    ck_assert_int_eq(mhsa_batch_eval(NULL, NULL, 0), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_batch_eval(m, NULL, 1), MHSA_ERR_INVALID_ARG);
    says("items is NULL");
    mhsa_batch_item good_a = { a, ta, 3, MHSA_LOGITS_LAST, la, V };
    struct {
        mhsa_batch_item second;
        mhsa_status st;
        const char *what;
    } cases[] = {
        { { a, tb, 2, MHSA_LOGITS_LAST, lb, V }, MHSA_ERR_INVALID_ARG,
          "items[0] and items[1] are the same sequence" },
        { { c, tb, 2, MHSA_LOGITS_LAST, lb, V }, MHSA_ERR_INVALID_ARG,
          "items[1]: the sequence is of another model" },
        { { NULL, tb, 2, MHSA_LOGITS_LAST, lb, V }, MHSA_ERR_INVALID_ARG,
          "items[1]: seq is NULL" },
        { { b, NULL, 2, MHSA_LOGITS_LAST, lb, V }, MHSA_ERR_INVALID_ARG,
          "items[1]: tokens is NULL" },
        { { b, tb, 0, MHSA_LOGITS_LAST, lb, V }, MHSA_ERR_INVALID_ARG,
          "items[1]: n = 0" },
        { { b, bad, 2, MHSA_LOGITS_LAST, lb, V }, MHSA_ERR_INVALID_ARG,
          "items[1]: tokens[1]" },
        { { b, tb, 2, (mhsa_logits)7, lb, V }, MHSA_ERR_INVALID_ARG,
          "items[1]: which = 7" },
        { { b, tb, 2, MHSA_LOGITS_ALL, lb, V }, MHSA_ERR_SHAPE,
          "items[1]: logits has room" },
        { { b, tb, 2, MHSA_LOGITS_LAST, lb, V - 1 }, MHSA_ERR_SHAPE,
          "items[1]: logits has room" },
        { { b, t17, 17, MHSA_LOGITS_LAST, lb, V }, MHSA_ERR_SHAPE,
          "items[1]: 0 tokens in the sequence + 17 new" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mhsa_batch_item it[2] = { good_a, cases[i].second };
        ck_assert_int_eq(mhsa_batch_eval(m, it, 2), cases[i].st);
        says(cases[i].what);
        ck_assert_int_eq(mhsa_seq_len(a), 0);
        ck_assert_int_eq(mhsa_seq_len(b), 0);
    }
    // After the refusals a step runs as on new sequences.
    mhsa_batch_item it[2] = { good_a, { b, tb, 2, MHSA_LOGITS_LAST, lb, V } };
    ck_assert_int_eq(mhsa_batch_eval(m, it, 2), MHSA_OK);
    ck_assert_int_eq(mhsa_seq_len(a), 3);
    ck_assert_int_eq(mhsa_seq_len(b), 2);
    static float want[MAX_V];
    ck_assert_int_eq(mhsa_seq_eval(c, tb, 2, MHSA_LOGITS_LAST, want, V),
                     MHSA_OK);
    ck_assert(!memcmp(want, lb, V * sizeof(float)));   // m2 is the same file
    mhsa_seq_destroy(a);
    mhsa_seq_destroy(b);
    mhsa_seq_destroy(c);
    mhsa_model_free(m);
    mhsa_model_free(m2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("batch");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, family_temp_remove);
    tcase_add_test(tc, items_equal_alone);
    tcase_add_test(tc, steps_beyond_the_buffers_split);
    tcase_add_test(tc, prompt_pieces_equal_one_call);
    tcase_add_test(tc, refusals_change_nothing);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
