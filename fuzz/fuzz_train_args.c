// fuzz_train_args.c — libFuzzer target: mhsa-train's argument parsers
// (tools/mhsa-train/args.c, and text_args.c for --task text) on fuzzed argv
// (NUL-separated strings). Each returns OK or USAGE, and an accepted
// command line satisfies every rule the help text states.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "text.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

enum { MAX_ARGS = 24 };
static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!sink)
        sink = fopen("/dev/null", "w");
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "mhsa-train";
    for (size_t i = 0; i <= size && argc <= MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    train_args a;
    int rc = parse_args(argc, argv, &a, sink);
    CHECK(rc == CLI_OK || rc == CLI_USAGE);
    if (rc == CLI_OK && !a.help) {
        CHECK(a.heads >= 1 && a.heads <= 256 && a.d_model >= 1 &&
              a.d_model <= 4096 && a.d_model % a.heads == 0);
        CHECK(a.seq_len >= 1 && a.seq_len <= 1024);
        CHECK(a.task != MHSA_TASK_INDUCTION || a.seq_len >= 2);
        CHECK(a.vocab >= 2 && a.vocab <= 65536);
        CHECK(a.lr > 0.0f && a.weight_decay >= 0.0f && a.clip >= 0.0f);
        CHECK(a.task == MHSA_TASK_REPEAT || a.task == MHSA_TASK_INDUCTION);
        CHECK(a.optim == MHSA_OPTIM_ADAMW || a.optim == MHSA_OPTIM_SGD);
        CHECK(a.epochs >= 1 && a.steps >= 1 && a.batch >= 1 &&
              a.batch <= 4096);
    }
    text_args t;
    rc = parse_text_args(argc, argv, &t, sink);
    CHECK(rc == CLI_OK || rc == CLI_USAGE);
    if (rc == CLI_OK && !t.help) {
        CHECK(t.layers >= 1 && t.embd >= 1 && t.heads >= 1 &&
              t.embd % t.heads == 0 && t.block >= 1 && t.batch >= 1);
        CHECK(t.rope >= 0 && t.rope % 2 == 0 &&
              t.rope <= t.embd / t.heads);
        CHECK(t.lr > 0.0f && t.min_lr >= 0.0f && t.min_lr <= t.lr);
        CHECK(t.val_fraction > 0.0f && t.val_fraction < 0.5f);
        CHECK(t.beta2 >= 0.0f && t.beta2 < 1.0f && t.clip >= 0.0f);
        CHECK(t.steps >= 1 && !(t.resume && t.eval));
        CHECK(!(t.resume || t.eval) ||
              !(t.given & ~(unsigned)(TF_BATCH | TF_VAL_FRACTION)));
    }
    free(buf);
    return 0;
}
