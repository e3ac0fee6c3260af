// test_train_dp_cli.c — mhsa-train's data-parallel options in one process
// (the single-process transport; .ci/test-mpi.sh runs the same under
// mpirun): bad values exit 2 with one line, --help lists them, a run cut in
// two by a checkpoint and --resume writes the same final checkpoint as one
// uninterrupted run, --grad-groups 1 through the trainer saves the plain
// loop's weights, and a checkpoint of another run is refused. The GPT
// (--task text) on 2 and 4 ranks as threads (dp_threads.c) writes
// one process's checkpoint, and resumes across rank counts to it.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dp_threads.h"
#include "capture.h"
#include "util.h"

static void tmp_name(char *buf, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/mhsa_dp_cli_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(buf);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

static const struct { const char *args[4]; const char *says; } bad[] = {
    { { "--grad-groups", "0" }, "--grad-groups 0 is out of range" },
    { { "--grad-groups", "x" }, "--grad-groups: 'x' is not an integer" },
    { { "--grad-groups", "5" }, "--grad-groups 5 does not divide --batch 32" },
    { { "--checkpoint-every", "5" }, "needs --checkpoint FILE" },
    { { "--checkpoint=" }, "--checkpoint needs a file name" },
    { { "--resume" }, "--resume needs a value" },
    { { "--verify-every", "0" }, "--verify-every 0 is out of range" },
};

START_TEST(bad_values_exit_2_with_one_line)
{
    const char *argv[6] = { "mhsa-train" };
    int argc = 1;
    for (int i = 0; i < 4 && bad[_i].args[i]; i++)
        argv[argc++] = bad[_i].args[i];
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, argc, argv), 2);
    ck_assert_str_eq(out, "");
    ck_assert_msg(strstr(err, bad[_i].says) != NULL, "'%s' not in: %s",
                  bad[_i].says, err);
    int lines = 0;
    for (const char *p = err; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, 1);
    free(out);
    free(err);
}
END_TEST

START_TEST(help_documents_the_options)
{
    const char *argv[] = { "mhsa-train", "--help" };
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 2, argv), 0);
    static const char *const flags[] = {
        "--grad-groups", "--checkpoint", "--checkpoint-every", "--resume",
        "--verify-every", "mpirun",
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        ck_assert_msg(strstr(out, flags[i]), "--help lacks %s", flags[i]);
    free(out);
    free(err);
}
END_TEST

#if MHSA_TEST_SAFETENSORS
static int run_quiet(int argc, const char **argv, char **err)
{
    char *out;
    int rc = run_captured(mhsa_train_cli, &out, err, argc, argv);
    free(out);
    return rc;
}

static void same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    ck_assert_msg(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a,
                  b);
    free(x);
    free(y);
}

// 20 steps in one go vs 10 steps, a checkpoint, and --resume for the rest:
// the same final checkpoint, byte for byte, and the resumed run's loss CSV
// goes on from step 11.
START_TEST(resume_gives_the_uninterrupted_checkpoint)
{
    char whole[256], half[256], resumed[256], csv[256];
    tmp_name(whole, sizeof whole);
    tmp_name(half, sizeof half);
    tmp_name(resumed, sizeof resumed);
    tmp_name(csv, sizeof csv);
    char *err;
    const char *a1[] = { "mhsa-train", "--epochs", "2", "--steps-per-epoch",
                         "10", "--grad-groups", "4", "--clip", "1",
                         "--checkpoint", whole };
    ck_assert_int_eq(run_quiet(11, a1, &err), 0);
    ck_assert_ptr_nonnull(strstr(err, "batch 32, adamw lr 0.003, 4 groups on "
                                 "1 rank (self)"));
    ck_assert_ptr_nonnull(strstr(err, "deterministic reduction"));
    free(err);
    const char *a2[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "10", "--grad-groups", "4", "--clip", "1",
                         "--checkpoint", half, "--checkpoint-every", "3" };
    ck_assert_int_eq(run_quiet(13, a2, &err), 0);
    free(err);
    const char *a3[] = { "mhsa-train", "--epochs", "2", "--steps-per-epoch",
                         "10", "--grad-groups", "4", "--clip", "1",
                         "--resume", half, "--checkpoint", resumed,
                         "--loss-csv", csv };
    ck_assert_int_eq(run_quiet(15, a3, &err), 0);
    ck_assert_ptr_nonnull(strstr(err, "resumed from"));
    ck_assert_ptr_nonnull(strstr(err, "at step 10"));
    free(err);
    same_file(whole, resumed);
    char *c = slurp(csv, NULL);
    ck_assert_msg(strncmp(c, "step,loss\n11,", 13) == 0, "csv: %.40s", c);
    ck_assert_ptr_nonnull(strstr(c, "\n20,"));
    free(c);

    // A checkpoint of another batch size cannot continue this run.
    const char *a4[] = { "mhsa-train", "--batch", "16", "--resume", half };
    ck_assert_int_eq(run_quiet(5, a4, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "made with --batch 32, this run has "
                                 "--batch 16"));
    free(err);
    // Nor one with other attention (same shapes, other computation).
    const char *a6[] = { "mhsa-train", "--window", "4", "--resume", half };
    ck_assert_int_eq(run_quiet(5, a6, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--kv-heads/--rope/--window "
                                 "kv_heads=0 rope=0/0/0 window=0, this run "
                                 "has"));
    free(err);
    // Nor one of another model shape (a message naming the tensor).
    const char *a5[] = { "mhsa-train", "--d-model", "16", "--resume", half };
    ck_assert_int_eq(run_quiet(5, a5, &err), 1);
    ck_assert_ptr_nonnull(strstr(err, "--resume"));
    ck_assert_ptr_nonnull(strstr(err, "expected shape"));
    free(err);
    remove(whole);
    remove(half);
    remove(resumed);
    remove(csv);
}
END_TEST

// --grad-groups 1 through the trainer (forced by --checkpoint) saves the
// same weights as the plain loop; --grad-groups 2 trains about as well.
START_TEST(one_group_saves_the_plain_loops_weights)
{
    char plain[256], viadp[256], ck[256];
    tmp_name(plain, sizeof plain);
    tmp_name(viadp, sizeof viadp);
    tmp_name(ck, sizeof ck);
    char *out, *err;
    const char *a1[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "15", "--save", plain };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 7, a1), 0);
    const char *fl = strstr(out, "final loss: ");
    ck_assert_ptr_nonnull(fl);
    double l1 = atof(fl + 12);
    free(out);
    free(err);
    const char *a2[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "15", "--save", viadp, "--checkpoint", ck };
    ck_assert_int_eq(run_quiet(9, a2, &err), 0);
    free(err);
    same_file(plain, viadp);
    const char *a3[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "15", "--grad-groups", "2" };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 7, a3), 0);
    fl = strstr(out, "final loss: ");
    ck_assert_ptr_nonnull(fl);
    ck_assert_double_eq_tol(atof(fl + 12), l1, 0.02 * l1);
    free(out);
    free(err);
    remove(plain);
    remove(viadp);
    remove(ck);
}
END_TEST

// ---- the GPT (--task text) on ranks as threads -------------------------------

// A small corpus of sentences from a few words, 8 KB.
static void write_corpus(const char *path)
{
    static const char *const words[] = {
        "the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to",
    };
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    rng r = { 5 };
    size_t n = 0;
    while (n < 8000) {
        int len = rng_int(&r, 3, 8);
        for (int i = 0; i < len; i++)
            n += (size_t)fprintf(f, "%s%s", i ? " " : "",
                                 words[rng_int(&r, 0, 9)]);
        n += (size_t)fprintf(f, ".\n");
    }
    fclose(f);
}

typedef struct rank_cli {
    int argc;
    const char **argv;
    int rc;
} rank_cli;

static void rank_main(mhsa_dp_comm *c, void *arg)
{
    rank_cli *x = arg;
    x->rc = mhsa_train_cli_comm(x->argc, (char **)x->argv, c);
}

// The command on P thread ranks with stderr captured (malloc'd); every
// rank must return the same status, which is returned.
static int run_ranks(int P, int argc, const char **argv, char **err)
{
    char fe[256];
    tmp_name(fe, sizeof fe);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    int devnull = open("/dev/null", O_WRONLY), e = open(fe, O_WRONLY);
    dup2(devnull, 1);
    dup2(e, 2);
    rank_cli x[4];
    void *args[4];
    for (int r = 0; r < P; r++) {
        x[r] = (rank_cli){ argc, argv, -1 };
        args[r] = &x[r];
    }
    dp_threads_run(P, 1, rank_main, args);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(devnull);
    close(e);
    close(so);
    close(se);
    *err = slurp(fe, NULL);
    remove(fe);
    for (int r = 1; r < P; r++)
        ck_assert_msg(x[r].rc == x[0].rc, "rank %d returned %d, rank 0 %d",
                      r, x[r].rc, x[0].rc);
    return x[0].rc;
}

#define NARGS(a) ((int)(sizeof a / sizeof a[0]))

// A small GPT (fast under qemu too), 8 steps.
#define TEXT_ARGS(data) "mhsa-train", "--task", "text", "--layers", "1", \
    "--embd", "16", "--heads", "2", "--block", "16", "--batch", "8", \
    "--data", data, "--steps", "8", "--eval-every", "8", "--val-tokens", \
    "64"

START_TEST(text_on_every_rank_count_gives_one_processes_checkpoint)
{
    char data[256], one[256], g1[256], two[256], four[256], cut[256],
         res2[256], res1[256];
    char *names[] = { data, one, g1, two, four, cut, res2, res1 };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        tmp_name(names[i], 256);
    write_corpus(data);
    char *err;
    const char *a1[] = { TEXT_ARGS(data), "--grad-groups", "4", "--save",
                         one };
    ck_assert_int_eq(run_quiet(NARGS(a1), a1, &err), 0);
    ck_assert_ptr_nonnull(strstr(err, "4 groups on 1 rank (self)"));
    free(err);
    const char *a2[] = { TEXT_ARGS(data), "--grad-groups", "4", "--save",
                         two };
    ck_assert_int_eq(run_ranks(2, NARGS(a2), a2, &err), 0);
    ck_assert_msg(strstr(err, "4 groups on 2 ranks (threads)") != NULL,
                  "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "deterministic reduction"));
    free(err);
    same_file(one, two);
    const char *a4[] = { TEXT_ARGS(data), "--grad-groups", "4", "--save",
                         four };
    ck_assert_int_eq(run_ranks(4, NARGS(a4), a4, &err), 0);
    free(err);
    same_file(one, four);

    // The groups are summed by the tree: G = 1 (the plain loop) rounds
    // otherwise, so the comparisons above can fail.
    const char *b1[] = { TEXT_ARGS(data), "--save", g1 };
    ck_assert_int_eq(run_quiet(NARGS(b1), b1, &err), 0);
    free(err);
    size_t na, nb;
    char *x = slurp(one, &na), *y = slurp(g1, &nb);
    ck_assert_uint_gt(na, 4096);   // a checkpoint, not an empty file
    ck_assert(na != nb || memcmp(x, y, na) != 0);
    free(x);
    free(y);

    // Cut after step 3 on 4 ranks; resumed on 2 ranks and in one process
    // (G from the checkpoint): the uninterrupted run's file.
    const char *c4[] = { TEXT_ARGS(data), "--grad-groups", "4",
                         "--stop-after", "3", "--save", cut };
    ck_assert_int_eq(run_ranks(4, NARGS(c4), c4, &err), 0);
    free(err);
    const char *r2[] = { "mhsa-train", "--task", "text", "--data", data,
                         "--resume", cut, "--save", res2 };
    ck_assert_int_eq(run_ranks(2, NARGS(r2), r2, &err), 0);
    ck_assert_msg(strstr(err, "4 groups on 2 ranks") && strstr(err,
                  "(resumed)"), "%s", err);
    free(err);
    same_file(one, res2);
    const char *r1[] = { "mhsa-train", "--task", "text", "--data", data,
                         "--resume", cut, "--save", res1 };
    ck_assert_int_eq(run_quiet(NARGS(r1), r1, &err), 0);
    free(err);
    same_file(one, res1);

    // Groups that do not fit the ranks or the batch: exit 2 on every rank.
    const char *e1[] = { TEXT_ARGS(data), "--grad-groups", "3" };
    ck_assert_int_eq(run_ranks(2, NARGS(e1), e1, &err), 2);
    ck_assert_msg(strstr(err, "--grad-groups 3 does not divide --batch 8"),
                  "%s", err);
    free(err);
    const char *e2[] = { TEXT_ARGS(data), "--batch", "6", "--grad-groups",
                         "3" };
    ck_assert_int_eq(run_ranks(2, NARGS(e2), e2, &err), 2);
    ck_assert_msg(strstr(err, "--grad-groups 3 is not a multiple of the 2 "
                         "ranks"), "%s", err);
    free(err);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        remove(names[i]);
}
END_TEST
#endif

static Suite *suite(void)
{
    Suite *s = suite_create("train_dp_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_loop_test(tc, bad_values_exit_2_with_one_line, 0,
                        (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, help_documents_the_options);
#if MHSA_TEST_SAFETENSORS
    tcase_add_test(tc, resume_gives_the_uninterrupted_checkpoint);
    tcase_add_test(tc, one_group_saves_the_plain_loops_weights);
    tcase_add_test(tc, text_on_every_rank_count_gives_one_processes_checkpoint);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
