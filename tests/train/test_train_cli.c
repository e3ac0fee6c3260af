// test_train_cli.c — the mhsa-train command, run in-process through
// mhsa_train_cli() (check forks each test, so every run gets a fresh
// process): bad flags exit 2 with one line naming the flag, --help, the
// default run's output and final loss, the PNG decoded back with stb_image,
// the loss CSV, and --save / --load.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "capture.h"
#include "util.h"

#if MHSA_HAVE_STB
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#pragma GCC diagnostic pop
#endif

// A fresh temporary file name (the file exists, empty); the suffix is only
// for people reading a leftover file name, so it goes before the X's.
static void tmp_name(char *buf, size_t n, const char *suffix)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/mhsa_train%s_XXXXXX", dir && *dir ? dir : "/tmp",
             suffix + 1);
    int fd = mkstemp(buf);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

// Each bad command line with a word its one-line message must contain.
static const struct { const char *args[6]; const char *says; } bad[] = {
    { { "--heads", "5" }, "--heads 5 does not divide --d-model 32" },
    { { "--heads", "3", "--d-model", "16" }, "--heads 3" },
    { { "--bogus" }, "--bogus: unknown option" },
    { { "--heads" }, "--heads needs a value" },
    { { "--heads", "four" }, "'four' is not an integer" },
    { { "--heads", "0" }, "--heads 0 is out of range" },
    { { "--seq-len", "1e3" }, "--seq-len" },
    { { "--vocab=1" }, "--vocab 1 is out of range" },
    { { "--lr", "-0.1" }, "--lr -0.1 must be > 0" },
    { { "--lr", "nan" }, "--lr" },
    { { "--task", "sorting" }, "unknown task 'sorting'" },
    { { "--optim", "lion" }, "unknown optimiser 'lion'" },
    { { "--isa", "sparc" }, "unknown ISA 'sparc'" },
    { { "--task", "induction", "--seq-len", "1" }, "--seq-len 1" },
    { { "--seed", "-3" }, "--seed" },
    { { "--batch", "99999999999999999999" }, "--batch" },
    { { "--heatmap-png=" }, "--heatmap-png needs a file name" },
    { { "stray" }, "stray: unexpected argument" },
    { { "--kv-heads", "3" }, "--kv-heads 3 does not divide --heads 4" },
    { { "--kv-heads", "0" }, "--kv-heads 0 is out of range" },
    { { "--kv-heads", "two" }, "--kv-heads: 'two' is not an integer" },
    { { "--rope", "5" }, "--rope 5 must be even" },
    { { "--rope", "0" }, "--rope 0 is out of range" },
    { { "--rope", "10" }, "--rope 10 is larger than the head size 8" },
    { { "--rope", "6", "--heads", "8" }, "--rope 6 is larger than the head "
      "size 4 (--d-model 32 / --heads 8)" },
    { { "--rope-theta", "500000" }, "--rope-theta 500000 needs --rope" },
    { { "--rope", "4", "--rope-theta", "-1" }, "--rope-theta -1 must be > 0" },
    { { "--rope", "4", "--rope-theta=inf" }, "--rope-theta: 'inf' is not a "
      "finite number" },
    { { "--rope-interleaved" }, "--rope-interleaved needs --rope" },
    { { "--rope", "4", "--rope-interleaved=1" }, "--rope-interleaved takes "
      "no value (got '1')" },
    { { "--window", "0" }, "--window 0 is out of range" },
    { { "--window", "-2" }, "--window -2 is out of range" },
    { { "--window" }, "--window needs a value" },
};

START_TEST(bad_flags_exit_2_with_one_line)
{
    const char *argv[8] = { "mhsa-train" };
    int argc = 1;
    for (int i = 0; i < 6 && bad[_i].args[i]; i++)
        argv[argc++] = bad[_i].args[i];
    char *out, *err;
    int rc = run_captured(mhsa_train_cli, &out, &err, argc, argv);
    ck_assert_int_eq(rc, 2);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(count_lines(err), 1);
    ck_assert_msg(strncmp(err, "mhsa-train: ", 12) == 0, "got: %s", err);
    ck_assert_msg(strstr(err, bad[_i].says) != NULL, "'%s' not in: %s",
                  bad[_i].says, err);
    free(out);
    free(err);
}
END_TEST

START_TEST(help_documents_every_flag)
{
    const char *argv[] = { "mhsa-train", "--help" };
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 2, argv), 0);
    const char *flags[] = {
        "--task", "--heads", "--d-model", "--seq-len", "--vocab", "--epochs",
        "--steps-per-epoch", "--batch", "--optim", "--lr", "--weight-decay",
        "--clip", "--seed", "--threads", "--isa", "--heatmap-png",
        "--loss-csv", "--save", "--load", "--help", "--kv-heads", "--rope",
        "--rope-theta", "--rope-interleaved", "--window",
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        ck_assert_msg(strstr(out, flags[i]), "--help lacks %s", flags[i]);
    free(out);
    free(err);
}
END_TEST

static double final_loss(const char *out)
{
    const char *p = strstr(out, "final loss: ");
    ck_assert_ptr_nonnull(p);
    // It is the last line.
    ck_assert_ptr_null(strchr(strchr(p, '\n') + 1, '\n'));
    return atof(p + 12);
}

// The demo as a newcomer runs it: defaults learn repeat, stderr has a line
// per epoch (not a terminal here), stdout the plot, the heatmaps and the
// final loss.
START_TEST(default_run_learns_repeat)
{
    const char *argv[] = { "mhsa-train" };
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 1, argv), 0);
    ck_assert_ptr_nonnull(strstr(err, "epoch 1/3"));
    ck_assert_ptr_nonnull(strstr(err, "epoch 3/3"));
    ck_assert_ptr_nonnull(strstr(err, "tokens/s"));
    ck_assert_ptr_nonnull(strstr(out, "loss per step"));
    ck_assert_ptr_nonnull(strstr(out, "head 3"));
    double l = final_loss(out);
    ck_assert_msg(l < 1.0, "final loss %g", l);
    free(out);
    free(err);
}
END_TEST

// The attention flags reach train_args (and from there the block's
// config, in cli.c's setup); 0 stays "off".
START_TEST(attention_flags_parse)
{
    const char *argv[] = { "mhsa-train", "--heads", "8", "--kv-heads=2",
                           "--rope", "4", "--rope-theta", "500000",
                           "--rope-interleaved", "--window", "7" };
    train_args a;
    FILE *err = tmpfile();
    ck_assert_int_eq(parse_args(11, (char **)argv, &a, err), CLI_OK);
    ck_assert_int_eq(a.kv_heads, 2);
    ck_assert_int_eq(a.rope_dim, 4);
    ck_assert(a.rope_theta == 500000.0f);
    ck_assert_int_eq(a.rope_interleaved, 1);
    ck_assert_int_eq(a.window, 7);
    ck_assert_int_eq(parse_args(1, (char **)argv, &a, err), CLI_OK);
    ck_assert(a.kv_heads == 0 && a.rope_dim == 0 && a.rope_theta == 0.0f &&
              a.rope_interleaved == 0 && a.window == 0);
    ck_assert_int_eq(ftell(err), 0);
    fclose(err);
}
END_TEST

// --kv-heads equal to --heads is plain multi-head attention: the same
// training, the same bits, as without the flag.
START_TEST(kv_heads_equal_to_heads_changes_nothing)
{
    const char *a1[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "5", "--kv-heads", "4" };
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 7, a1), 0);
    double l1 = final_loss(out);
    free(out);
    free(err);
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 5, a1), 0);
    ck_assert_double_eq(final_loss(out), l1);
    free(out);
    free(err);
}
END_TEST

START_TEST(png_decodes_with_the_right_size)
{
    char png[256], csv[256];
    tmp_name(png, sizeof png, ".png");
    tmp_name(csv, sizeof csv, ".csv");
    const char *argv[] = { "mhsa-train", "--heads", "8", "--epochs", "1",
                           "--steps-per-epoch", "5", "--heatmap-png", png,
                           "--loss-csv", csv };
    char *out, *err;
    int rc = run_captured(mhsa_train_cli, &out, &err, 11, argv);
    if (!png_available()) {
        printf("skip: built without stb_image_write\n");
        ck_assert_int_eq(rc, 1);
        ck_assert_ptr_nonnull(strstr(err, "--heatmap-png"));
        remove(png);
        remove(csv);
        return;
    }
    ck_assert_int_eq(rc, 0);
    char *c = slurp(csv, NULL);
    ck_assert_int_eq(count_lines(c), 6);   // header + 5 steps
    ck_assert(strncmp(c, "step,loss\n1,", 12) == 0);
    free(c);
#if MHSA_HAVE_STB
    int w = 0, h = 0, n = 0;
    unsigned char *img = stbi_load(png, &w, &h, &n, 3);
    ck_assert_msg(img != NULL, "stb_image cannot decode %s", png);
    png_layout L = heatmap_layout(8, 12);
    ck_assert_int_eq(w, L.width);
    ck_assert_int_eq(h, L.height);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(L.cols, 4);
    ck_assert_int_eq(L.rows, 2);
    // In every panel query 0 can only see key 0 (weight exactly 1), and the
    // top-right cell is masked.
    unsigned char one[3];
    heatmap_colour(1.0f, one);
    for (int hd = 0; hd < 8; hd++) {
        int x0 = L.panel_x0 + (hd % L.cols) * L.step_x;
        int y0 = L.panel_y0 + (hd / L.cols) * L.step_y;
        const unsigned char *p = img + ((size_t)(y0 + L.cell / 2) * w + x0 +
                                        L.cell / 2) * 3;
        ck_assert_mem_eq(p, one, 3);
        p = img + ((size_t)(y0 + L.cell / 2) * w + x0 + 11 * L.cell +
                   L.cell / 2) * 3;
        ck_assert_mem_eq(p, heatmap_masked_rgb, 3);
    }
    stbi_image_free(img);
#endif
    remove(png);
    remove(csv);
    free(out);
    free(err);
}
END_TEST

START_TEST(unwritable_png_fails_cleanly)
{
    if (!png_available())
        return;
    const char *argv[] = { "mhsa-train", "--epochs", "1",
                           "--steps-per-epoch", "2", "--heatmap-png",
                           "no/such/dir/x.png" };
    char *out, *err;
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 7, argv), 1);
    ck_assert_ptr_nonnull(strstr(err, "cannot write 'no/such/dir/x.png'"));
    free(out);
    free(err);
}
END_TEST

// --save then --load: a run that loads the saved model and trains with a
// learning rate too small to change any fp32 weight (1e-30) reports the
// same final loss, bit for bit in its printed form.
START_TEST(save_then_load_round_trips)
{
    char st[256];
    tmp_name(st, sizeof st, ".safetensors");
    const char *a1[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "20", "--save", st };
    char *out, *err;
    int rc = run_captured(mhsa_train_cli, &out, &err, 7, a1);
    if (rc == 1 && strstr(err, "--save")) {
        printf("skip: built without safetensors support: %s", err);
        remove(st);
        return;
    }
    ck_assert_msg(rc == 0, "%s", err);
    double l1 = final_loss(out);
    free(out);
    free(err);
    const char *a2[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "1", "--lr", "1e-30", "--load", st };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 9, a2), 0);
    ck_assert_double_eq(final_loss(out), l1);
    free(out);
    free(err);
    // A model of another shape does not load: exit 1 with the reason.
    const char *a3[] = { "mhsa-train", "--d-model", "16", "--load", st };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 5, a3), 1);
    ck_assert_ptr_nonnull(strstr(err, "--load"));
    free(out);
    free(err);
    remove(st);
}
END_TEST

// With the attention flags the model trains (differently from the
// default), --save / --load round trip its grouped-query shapes, and a
// model saved with other K/V heads does not load.
START_TEST(attention_flags_train_save_load)
{
    char st[256];
    tmp_name(st, sizeof st, ".safetensors");
    const char *a1[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "20", "--kv-heads", "2", "--rope", "8",
                         "--rope-theta", "500", "--rope-interleaved",
                         "--window", "4", "--save", st };
    char *out, *err;
    int rc = run_captured(mhsa_train_cli, &out, &err, (int)(sizeof a1 / sizeof *a1), a1);
    if (rc == 1 && strstr(err, "--save")) {
        printf("skip: built without safetensors support: %s", err);
        remove(st);
        return;
    }
    ck_assert_msg(rc == 0, "%s", err);
    double l1 = final_loss(out);
    free(out);
    free(err);
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 5, a1), 0);   // the same, plain
    ck_assert(final_loss(out) != l1);
    free(out);
    free(err);
    const char *a2[] = { "mhsa-train", "--epochs", "1", "--steps-per-epoch",
                         "1", "--lr", "1e-30", "--kv-heads", "2", "--rope",
                         "8", "--rope-theta", "500", "--rope-interleaved",
                         "--window", "4", "--load", st };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, (int)(sizeof a2 / sizeof *a2), a2),
                     0);
    ck_assert_double_eq(final_loss(out), l1);
    free(out);
    free(err);
    const char *a3[] = { "mhsa-train", "--kv-heads", "1", "--load", st };
    ck_assert_int_eq(run_captured(mhsa_train_cli, &out, &err, 5, a3), 1);
    ck_assert_ptr_nonnull(strstr(err, "--load"));
    ck_assert_ptr_nonnull(strstr(err, "attn.in_proj_weight"));
    free(out);
    free(err);
    remove(st);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("train_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_loop_test(tc, bad_flags_exit_2_with_one_line, 0,
                        (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, help_documents_every_flag);
    tcase_add_test(tc, attention_flags_parse);
    tcase_add_test(tc, kv_heads_equal_to_heads_changes_nothing);
    tcase_add_test(tc, png_decodes_with_the_right_size);
    tcase_add_test(tc, unwritable_png_fails_cleanly);
    tcase_add_test(tc, save_then_load_round_trips);
    tcase_add_test(tc, attention_flags_train_save_load);
    suite_add_tcase(s, tc);
    // The demo's learning curve, tagged slow: the qemu runs leave it out
    // (CK_EXCLUDE_TAGS=slow); native and ASan runs take it.
    TCase *tcurve = tcase_create("learning");
    tcase_set_tags(tcurve, "slow");
    tcase_add_test(tcurve, default_run_learns_repeat);
    suite_add_tcase(s, tcurve);
    return s;
}

int main(void) { return run_suite(suite()); }
