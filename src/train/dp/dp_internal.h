// dp_internal.h — the trainer's state, shared by dp.c and dp_ckpt.c.
#ifndef MHSA_DP_INTERNAL_H
#define MHSA_DP_INTERNAL_H

#include "dp.h"
#include "dp_tree.h"

// Bounds that keep the per-step bookkeeping in fixed arrays of the trainer.
enum { DP_MAX_GROUPS = 1 << 16, DP_MAX_HEIGHT = 17 };

struct mhsa_dp_trainer {
    mhsa_dp_model m;
    mhsa_dp_comm *comm;
    int G;                  // groups per batch
    mhsa_optim_kind kind;
    int64_t step;           // optimiser steps made
    mhsa_dp_stats stats;
    double t_compute;       // this step's group time so far
    double last_norm;       // the last step's gradient norm (tests)

    // Shards: rank q owns parameters [off[q], off[q+1]) (P + 1 entries).
    size_t *off;
    // Tree nodes of every rank, in rank order: rank q's are
    // [node_first[q], node_first[q+1]); node k is [node_lo[k], node_hi[k]).
    size_t *node_first;
    int *node_lo, *node_hi;
    int n_nodes, my_nodes, cursor;
    int h_local, h_root;    // scratch vectors for own nodes / the root

    // Byte counts and displacements of the collectives, per rank.
    size_t *scount, *sdispl, *rcount, *rdispl;   // reduce-scatter
    size_t *gcount, *gdispl;                     // parameter allgather
    size_t *lcount, *ldispl;                     // loss allgather
    size_t *hcount, *hdispl;                     // hash allgather
    uint64_t *hashes;       // (P) mhsa_dp_verify

    // Float buffers (one allocation, buf).
    float *nodes;           // (my_nodes, n) this rank's node sums
    float *pack;            // (my_nodes * n) send layout, if my_nodes > 1
    float *scratch_local[DP_MAX_HEIGHT];   // (n) each
    float *recv;            // (n_nodes, shard) received slices
    float *scratch_root[DP_MAX_HEIGHT];    // (shard) each
    float *gshard;          // (shard) the batch gradient of my shard
    float *mom_m, *mom_v;   // (shard) AdamW moments of my shard
    float *losses;          // (G) the groups' losses
    float *scratch_loss[DP_MAX_HEIGHT];    // (1) each
    float *loss_out;        // (1)

    size_t *sizes;
    int *ints;
    float *buf;
};

// mhsa_last_error() prefixed with `what`, as MHSA_ERR_STATE.
mhsa_status mhsa__dp_comm_fail(const char *what);

#endif
