// dp.h — data-parallel training that gives the same bits on any number of
// ranks (processes), and checkpoints that do not depend on it either.
//
// The global batch of every step is cut into G equal groups (G fixed for
// the run, --grad-groups). Rank r of P (P divides G) computes the gradients
// of groups [r G/P, (r+1) G/P), each normalised by the counted positions of
// the whole batch, so that the groups' gradients add up to the batch's.
// Their sum is then taken by the one tree of dp_tree.h, whose bracketing
// depends on G only. One step:
//
//   1. every rank sums the whole tree nodes inside its groups (dp_tree_cover)
//   2. reduce-scatter, as bytes: rank q receives from every rank the slice
//      [off[q], off[q+1]) of its node sums (alltoallv), and finishes the
//      tree over [0, G) on that slice: rank q now has the batch gradient of
//      its shard of the parameters
//   3. the gradient norm (for clipping) is the model's own double sum
//      (dp_model.norm_lanes), in parameter order: the running sums go from
//      rank to rank (64 bytes each way) instead of being split into
//      partial sums
//   4. each rank updates its shard with mhsa_optim_update; the AdamW
//      moments exist only for that shard (ZeRO stage 1)
//   5. allgatherv of the updated shards: every rank has all parameters
//   The groups' losses are gathered and summed by the same tree.
//
// Nothing in 1-5 depends on P but the shards' boundaries, and every
// operation that sees those boundaries is elementwise. So the parameters
// after any step are the same bits for every P that divides G, and with
// G = 1 the same bits as mhsa_lm_forward/backward/step (one group with its
// own count, the same norm, the same updates).
//
// The model is anything with a flat parameter buffer, a flat gradient
// buffer and a forward+backward of one group (dp_model): the synthetic-task
// model (mhsa_lm, dp_lm.h) and the GPT (mhsa_gpt, dp_gpt.h).
//
// Threads: one thread per rank calls the trainer (MPI_THREAD_FUNNELED);
// the model and the tree sums use OpenMP inside. Steps allocate nothing.
#ifndef MHSA_DP_H
#define MHSA_DP_H

#include <stddef.h>
#include <stdint.h>

#include "dp_comm.h"
#include "mhsa_train.h"
#include "io/safetensors.h"

// One parameter tensor, a slice of the flat buffer.
typedef struct dp_tensor {
    const char *name;   // unique, as saved in checkpoints
    int ndim;           // 1 or 2
    size_t dims[2];
    size_t offset, numel;
    int decay;          // 1: weight decay applies (matrices)
} dp_tensor;

typedef struct dp_model {
    float *param;       // (n_params) read by group_grad, written by steps
    float *grad;        // (n_params) overwritten by each group_grad
    size_t n_params;
    const dp_tensor *tensors;   // tile [0, n_params) in order
    int n_tensors;
    // Forward and backward of group `group` of n_groups of the batch the
    // caller prepared for this step, with the loss normalised by the
    // counted positions of the whole batch. Overwrites grad; *loss is the
    // group's share of the batch's mean loss.
    mhsa_status (*group_grad)(void *ctx, int group, int n_groups,
                              float *loss);
    void *ctx;
    // How the model's own step sums the squared gradient norm, which the
    // trainer repeats so that G = 1 clips to the same bits: 0 or 1, one
    // running double sum in parameter order (mhsa_lm_step); 8, eight
    // interleaved double lanes (element i into lane i % 8) closed by
    // ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) (mhsa_gpt_step).
    int norm_lanes;
} dp_model;

// The step's whole batch (B, T), as on every rank, for a model's
// group_grad; group k of G is rows [k B/G, (k+1) B/G).
typedef struct dp_batch {
    const int32_t *tokens, *targets;
    int B, T;
    size_t count;   // counted targets (>= 0) of the whole batch
} dp_batch;

// Sets *b to the arrays (read by the step, not copied) and counts their
// targets.
void dp_batch_set(dp_batch *b, const int32_t *tokens, const int32_t *targets,
                  int B, int T);
// Group k of G of *b: its rows (*rows) and the index of its first token
// (*at). MHSA_ERR_SHAPE naming `who` unless 0 <= k < G and G divides B.
mhsa_status dp_batch_group(const dp_batch *b, int k, int G, const char *who,
                           int *rows, size_t *at);
// *m with the given buffers and tensors, group_grad(ctx, ...) and
// norm_lanes, everything else 0.
void dp_model_set(dp_model *m, float *param, float *grad, size_t n_params,
                  const dp_tensor *tensors, int n_tensors,
                  mhsa_status (*group_grad)(void *, int, int, float *),
                  void *ctx, int norm_lanes);

// Seconds spent in each part of the steps so far (this rank).
typedef struct dp_stats {
    double compute;   // group forward+backward
    double wait;      // for the slowest rank to finish its groups (a tiny
                      // allgather before the reduce-scatter measures it)
    double reduce;    // node sums, reduce-scatter, tree, loss, norm
    double update;    // the optimiser on this rank's shard
    double gather;    // allgather of the updated parameters
    int64_t steps;
} dp_stats;

typedef struct dp_trainer dp_trainer;

// A trainer for model m over comm with `groups` groups per batch and
// optimiser `kind` (AdamW keeps moments for this rank's shard). comm and
// the model must outlive the trainer. Errors: groups < 1, groups not a
// multiple of the number of ranks, an inconsistent model:
// MHSA_ERR_INVALID_ARG; no memory: MHSA_ERR_NO_MEMORY.
mhsa_status dp_create(const dp_model *m, dp_comm *comm, int groups,
                      mhsa_optim_kind kind, dp_trainer **out);
void dp_destroy(dp_trainer *dp);   // NULL is a no-op

// Rank 0's parameters to every rank (collective).
mhsa_status dp_broadcast_params(dp_trainer *dp);

// One training step on the batch the model's group_grad sees (collective).
// loss: out, the batch's mean loss; grad_norm: optional out, the global L2
// norm before clipping (computed only when asked or when clipping).
// Errors: a bad cfg or another kind than at creation: MHSA_ERR_INVALID_ARG;
// a failing group_grad: its status (the ranks then disagree: end the job).
mhsa_status dp_step(dp_trainer *dp, const mhsa_optim_config *cfg,
                    float *loss, float *grad_norm);

// Optimiser steps made (and restored by dp_load); groups per batch.
int64_t dp_steps(const dp_trainer *dp);
int dp_groups(const dp_trainer *dp);
const dp_stats *dp_get_stats(const dp_trainer *dp);
dp_comm *dp_get_comm(const dp_trainer *dp);

// Compares a hash of every rank's parameters (collective). MHSA_ERR_STATE
// on every rank, naming the first rank that differs from rank 0, when they
// are not all the same bits.
mhsa_status dp_verify(dp_trainer *dp);

// The optimiser state as one process would hold it, for a model whose own
// checkpoints carry it (the GPT's mhsa_gpt_save / mhsa_gpt_load):
// dp_export_state gathers the AdamW moments (n_params each, parameter
// order) into rank 0's m and v and gives it the step count (the others'
// arguments are ignored); dp_import_state makes rank 0's parameters (the
// model's buffer), moments and step every rank's state (the others' m and
// v are ignored). Both collective; with SGD the moments are zeros.
mhsa_status dp_export_state(dp_trainer *dp, float *m, float *v,
                            int64_t *step);
mhsa_status dp_import_state(dp_trainer *dp, const float *m, const float *v,
                            int64_t step);

// Checkpoint (collective): the parameters (their names), the AdamW moments
// (flat "optim.m" and "optim.v", the layout of the GPT's own checkpoints)
// gathered to rank 0, and in __metadata__ "mhsa.step", "mhsa.optim",
// "mhsa.grad_groups" followed by meta[0..n_meta). Rank 0 writes a
// temporary file, fsyncs it and renames it over path (mhsa__st_write): a
// run killed at any moment leaves the previous complete checkpoint. The
// file does not depend on the number of ranks. Every rank returns rank 0's
// status.
mhsa_status dp_save(dp_trainer *dp, const char *path,
                    const mhsa_st_meta *meta, size_t n_meta);

// A metadata value asked of dp_load: key in, value out ("" and present 0
// when the file has no such key).
typedef struct dp_meta_value {
    const char *key;
    char value[128];
    int present;
} dp_meta_value;

// Resumes from a dp_save checkpoint (collective): rank 0 reads the file and
// sends parameters, moments, step and the values of want[0..n_want) to
// every rank. On any error (missing file, other shapes, another optimiser)
// nothing changes and every rank returns the status, rank 0's message
// naming the problem.
mhsa_status dp_load(dp_trainer *dp, const char *path, dp_meta_value *want,
                    size_t n_want);

#endif
