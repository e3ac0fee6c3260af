// dp_args.h — mhsa-train's data-parallel options (dp_args.c): gradient
// groups, checkpoints and resume, the periodic weight check.
#ifndef MHSA_TRAIN_DP_ARGS_H
#define MHSA_TRAIN_DP_ARGS_H

#include <stdio.h>

typedef struct dp_args {
    int grad_groups;          // --grad-groups G (1)
    const char *checkpoint;   // --checkpoint FILE
    int checkpoint_every;     // --checkpoint-every N (0: at the end only)
    const char *resume;       // --resume FILE
    int verify_every;         // --verify-every N (100)
} dp_args;

void dp_args_defaults(dp_args *d);
// 1 when flag ("--grad-groups", ...) is one of the options above.
int  dp_args_known(const char *flag);
// Parses one option's value; CLI_OK, or CLI_USAGE after one line on err.
int  dp_args_parse(const char *flag, const char *val, dp_args *d,
                   FILE *err);
// After all options: the groups must divide the batch. CLI_OK or CLI_USAGE.
int  dp_args_check(const dp_args *d, int batch, FILE *err);
void dp_args_help(FILE *f);

#endif
