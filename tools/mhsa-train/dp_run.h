// dp_run.h — the training loop of a data-parallel run, whatever the model
// and the data (dp_run.c): rank 0's weights broadcast, the same kernels on
// every rank, checkpoints and resume, the periodic weight check, progress
// and the time each part of a step takes. mhsa-train's synthetic tasks
// (dp_cli.c) fill in a job for mhsa_lm; another model fills in its own
// mhsa_dp_model (mhsa_train.h) and batch function. A command with a loop of
// its own (the GPT on text, text_cli.c, with its own checkpoints and
// evaluation) uses the pieces every run shares: dp_run_open,
// dp_run_agree, dp_run_fail and dp_run_print_stats.
#ifndef MHSA_TRAIN_DP_RUN_H
#define MHSA_TRAIN_DP_RUN_H

#include <stdint.h>

#include "dp_args.h"
#include "mhsa_train.h"

// What the loop leaves for the report.
typedef struct dp_cli_result {
    int n_losses;     // steps run by this process (losses[0..n))
    int first_step;   // 0, or the step a resumed run started from
} dp_cli_result;

// A checkpoint entry that must match on resume for the data to be the
// same: the metadata key, the option it comes from, this run's value.
typedef struct dp_run_ident {
    const char *key, *flag;
    char value[64];
} dp_run_ident;

typedef struct dp_run_job {
    mhsa_dp_comm *comm;
    const dp_args *opt;          // --grad-groups, --checkpoint, ...
    const mhsa_dp_model *model;
    mhsa_optim_kind kind;
    // Makes the batch of the next step from *rng (the same on every rank:
    // one stream from one seed) and hands it to the model, whose
    // group_grad then reads it.
    mhsa_status (*next_batch)(void *ctx, uint64_t *rng);
    void *ctx;
    uint64_t rng;                // the data stream's state at step 0
    mhsa_optim_config cfg;       // the optimiser; its lr throughout, or
    float (*lr_at)(void *ctx, int64_t step);   // lr of 0-based step (NULL)
    int64_t total_steps;
    int epochs, steps_per_epoch; // for the progress lines
    double tokens_per_step;
    const dp_run_ident *ident;   // written into checkpoints, checked on
    int n_ident;                 // resume
    const mhsa_meta *extra;   // written into checkpoints as they are
    size_t n_extra;              // (e.g. a model's configuration)
    const char *what;            // the header line's model and data part
    float *losses;               // (total_steps) out: this run's losses
} dp_run_job;

// CLI_OK, CLI_USAGE (groups that do not fit the ranks, kernels that differ,
// a checkpoint of another run) or CLI_FAIL. A failure only one rank sees
// ends the whole job (mhsa_dp_comm abort_job) rather than leave the others
// waiting; a failure all ranks see returns on all of them.
int dp_run(const dp_run_job *job, dp_cli_result *res);

// The start of every data-parallel run (collective): groups that fit the
// ranks, the trainer, the same kernels on every rank, rank 0's weights
// broadcast. CLI_OK with *out set, or CLI_USAGE / CLI_FAIL on every rank
// with *out NULL (rank 0 printed why).
int dp_run_open(mhsa_dp_comm *c, const mhsa_dp_model *m, int G,
                mhsa_optim_kind kind, mhsa_dp_trainer **out);

// A failure: seen by every rank (agreed: all return code together, rank 0
// prints) or by this rank alone (it prints and ends the whole job, which
// would otherwise wait for it in a collective). Returns code.
int dp_run_fail(mhsa_dp_comm *c, const char *what, int agreed, int code);

// Every rank's status of a step that may fail on some ranks only
// (collective): the first non-CLI_OK status in rank order, or CLI_OK, on
// every rank, so that all go on or all stop together.
int dp_run_agree(mhsa_dp_comm *c, int rc);

// The last line of a run on rank 0: time per step of each part, compute
// and wait as ranges over the ranks, the reduction's share and tokens/s
// (collective).
void dp_run_print_stats(mhsa_dp_trainer *dp, double wall, int64_t steps,
                        double tokens_per_step);

#endif
