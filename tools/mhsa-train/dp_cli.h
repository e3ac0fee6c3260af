// dp_cli.h — the synthetic tasks' data-parallel training (dp_cli.c, on the
// model-agnostic loop of dp_run.c and the data-parallel trainer of
// mhsa_train.h).
//
// A run goes through the data-parallel trainer when it has more than one
// rank (mpirun -np P), more than one gradient group, or a checkpoint to
// write or resume; otherwise cli.c's plain loop runs, as before (with
// --grad-groups 1 both give the same bits).
#ifndef MHSA_TRAIN_DP_CLI_H
#define MHSA_TRAIN_DP_CLI_H

#include <stdint.h>

#include "dp_run.h"
#include "mhsa_train.h"

struct train_args;

// 1 when the run needs the data-parallel trainer (see above).
int dp_cli_wanted(const struct train_args *a, const mhsa_dp_comm *c);

// Trains lm on the task of a over comm, from rank 0's weights (or the
// --resume checkpoint), with the batch buffers tok, tgt (a->batch rows) and
// the data stream starting at data_state. Rank 0 prints progress. Returns
// as dp_run (dp_run.h).
int dp_cli_train(const struct train_args *a, mhsa_dp_comm *c, mhsa_lm *lm,
                 int32_t *tok, int32_t *tgt, uint64_t data_state,
                 float *losses, dp_cli_result *res);

#endif
