// train_args.h — the options of mhsa-train's synthetic tasks and their
// parser (args.c); the data-parallel ones are dp_args.h's.
#ifndef MHSA_TRAIN_TRAIN_ARGS_H
#define MHSA_TRAIN_TRAIN_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "args_util.h"
#include "dp_args.h"
#include "mhsa_train.h"

typedef struct train_args {
    mhsa_task task;
    int heads, d_model, seq_len, vocab;
    int epochs, steps, batch, threads;
    float lr, weight_decay, clip;
    mhsa_optim_kind optim;
    uint64_t seed;
    mhsa_isa isa;
    const char *heatmap_png, *loss_csv, *save, *load;
    int help;
    int kv_heads, rope_dim, rope_interleaved, window;  // 0: off / default
    int compute;                 // --compute: MHSA_F32 or MHSA_BF16
    float rope_theta;
    dp_args dp;   // data-parallel options (dp_args.c)
} train_args;

// Parses argv into *a (defaults first). Returns CLI_OK, or CLI_USAGE after
// writing one line naming the bad flag or value to err. "--help" sets
// a->help and returns CLI_OK.
int  parse_args(int argc, char **argv, train_args *a, FILE *err);
void print_help(FILE *f);

#endif
