// dp_cli.h — mhsa-train's data-parallel options (dp_args.c) and the
// synthetic tasks' data-parallel training (dp_cli.c, on the model-agnostic
// loop of dp_run.c and the trainer of src/train/dp/dp.h).
//
// A run goes through the data-parallel trainer when it has more than one
// rank (mpirun -np P), more than one gradient group, or a checkpoint to
// write or resume; otherwise cli.c's plain loop runs, as before (with
// --grad-groups 1 both give the same bits).
#ifndef MHSA_TRAIN_DP_CLI_H
#define MHSA_TRAIN_DP_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "mhsa_train.h"
#include "train/dp/dp_comm.h"

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

struct train_args;

// 1 when the run needs the data-parallel trainer (see above).
int dp_cli_wanted(const struct train_args *a, const dp_comm *c);

// What the loop leaves for the report.
typedef struct dp_cli_result {
    int n_losses;     // steps run by this process (losses[0..n))
    int first_step;   // 0, or the step a resumed run started from
} dp_cli_result;

// Trains lm on the task of a over comm, from rank 0's weights (or the
// --resume checkpoint), with the batch buffers tok, tgt (a->batch rows) and
// the data stream starting at data_state. Rank 0 prints progress. Returns
// as dp_run (dp_run.h).
int dp_cli_train(const struct train_args *a, dp_comm *c, mhsa_lm *lm,
                 int32_t *tok, int32_t *tgt, uint64_t data_state,
                 float *losses, dp_cli_result *res);

#endif
