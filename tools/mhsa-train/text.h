// text.h — `mhsa-train --task text`: a GPT (mhsa_gpt) trained on bytes of
// real text, with checkpoints that resume bit for bit. Its own flags
// (text_args.c) and run (text_cli.c); mhsa_train_cli hands a command line
// with --task text over to text_train_cli_comm. Under mpirun (or with
// --grad-groups G > 1) the run is data parallel: the trainer of
// mhsa_train.h on the GPT (mhsa_dp_gpt_bind), the same bits on any number of
// ranks, and the same checkpoints as one process writes.
#ifndef MHSA_TRAIN_TEXT_H
#define MHSA_TRAIN_TEXT_H

#include <stdint.h>
#include <stdio.h>

#include "mhsa_train.h"

// Flags that fix the model or the schedule: a resumed run takes them from
// its checkpoint, so giving one with --resume (or --eval) is an error.
enum {
    TF_LAYERS = 1 << 0, TF_EMBD = 1 << 1, TF_HEADS = 1 << 2,
    TF_BLOCK = 1 << 3, TF_BATCH = 1 << 4, TF_STEPS = 1 << 5,
    TF_EPOCHS = 1 << 6, TF_LR = 1 << 7, TF_MIN_LR = 1 << 8,
    TF_WARMUP = 1 << 9, TF_WD = 1 << 10, TF_CLIP = 1 << 11,
    TF_BETA2 = 1 << 12, TF_ROPE = 1 << 13, TF_NO_PROJ = 1 << 14,
    TF_TIE = 1 << 15, TF_PRESET = 1 << 16, TF_SEED = 1 << 17,
    TF_VAL_FRACTION = 1 << 18,
};

typedef struct text_args {
    const char *data;            // file or folder; NULL: the fortune files
    int layers, embd, heads, block, batch;
    int steps, epochs;           // steps from epochs when --epochs is given
    float lr, min_lr, weight_decay, clip, beta2, val_fraction;
    int warmup;                  // -1: 5% of the steps, at most 100
    int rope;                    // 0 none, else rotated features per head
    int no_proj, tie;
    int compute;                 // --compute: MHSA_F32 or MHSA_BF16
    int eval_every, val_tokens, save_every;
    int stop_after;              // 0, or stop after this step (to resume)
    int grad_groups;             // 0: not given (1, or the checkpoint's)
    int verify_every;            // steps between weight checks (100)
    uint64_t seed;
    int threads;
    mhsa_isa isa;
    const char *save, *resume, *eval, *loss_csv, *heatmap_png;
    const char *save_init;       // the checkpoint before the first step
    unsigned given;              // TF_* of the flags on the command line
    int help;
} text_args;

// 1 when argv asks for --task text (then text_train_cli owns the line).
int  wants_text_task(int argc, char **argv);
// Parses argv (defaults first, then --preset, then the flags); CLI_OK or
// CLI_USAGE after one line naming the problem on err.
int  parse_text_args(int argc, char **argv, text_args *a, FILE *err);
void print_text_help(FILE *f);
// The folder of Debian's fortunes package, or NULL when it is absent.
const char *default_corpus(void);

int text_train_cli(int argc, char **argv);
// The same as one rank of a data-parallel job over c (rank 0 alone prints).
int text_train_cli_comm(int argc, char **argv, mhsa_dp_comm *c);

#endif
