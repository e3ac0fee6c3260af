// dp_comm.h — how the ranks of a data-parallel run exchange bytes.
//
// The trainer (dp.h) needs a handful of collective operations. They only
// ever move bytes: every floating-point sum is done by the trainer itself,
// in its fixed tree (dp_tree.h), never by the transport. That is the whole
// point: MPI_Allreduce and MPI_Reduce leave the order of their sums to the
// MPI library (and to the number of ranks), so their results change with
// both; a byte copy cannot.
//
// Transports:
//   dp_comm_self()   one process, rank 0 of 1 (dp_self.c): copies or nothing
//   dp_mpi_init()    Open MPI, one rank per process (dp_mpi.c, only in the
//                    mpi build of mhsa-train)
//   tests/train/dp_threads.c  P ranks as threads of one test process
//
// Every operation is collective unless said otherwise: all ranks call it in
// the same order with matching sizes. Sizes and offsets are in bytes.
// Operations return 0, or -1 after setting mhsa_last_error (the MPI
// transport's errors are fatal to the job instead: MPI's default handler).
#ifndef MHSA_DP_COMM_H
#define MHSA_DP_COMM_H

#include <stddef.h>

typedef struct dp_comm dp_comm;

typedef struct dp_comm_ops {
    // Rank q receives scount[q] bytes from send + sdispl[q] of every rank;
    // this rank stores what rank q sent it at recv + rdispl[q] (rcount[q]
    // bytes, equal to q's scount[this rank]).
    int (*alltoallv)(dp_comm *c, const void *send, const size_t *scount,
                     const size_t *sdispl, void *recv, const size_t *rcount,
                     const size_t *rdispl);
    // In place: every rank's own part is already at buf + displ[rank];
    // afterwards every rank q's part (count[q] bytes) is at buf + displ[q]
    // on every rank.
    int (*allgatherv)(dp_comm *c, void *buf, const size_t *count,
                      const size_t *displ);
    // root's n bytes at buf to every rank's buf.
    int (*bcast)(dp_comm *c, void *buf, size_t n, int root);
    // root receives rank q's count[q] bytes from its send at
    // buf + displ[q]; root's own part is already in place (its send is
    // ignored); buf is only used on root.
    int (*gatherv)(dp_comm *c, const void *send, void *buf,
                   const size_t *count, const size_t *displ, int root);
    // Point to point (not collective): n bytes to / from one rank.
    int (*send)(dp_comm *c, const void *buf, size_t n, int to);
    int (*recv)(dp_comm *c, void *buf, size_t n, int from);
    // Ends every rank of the job with exit status `code` (does not return);
    // NULL when the transport has nothing to end but this process.
    void (*abort_job)(dp_comm *c, int code);
    // What to call the transport in messages ("mpi", "self", ...).
    const char *name;
} dp_comm_ops;

struct dp_comm {
    const dp_comm_ops *ops;
    int rank, size;   // 0 <= rank < size
    void *impl;       // the transport's own state
};

// The single-process transport (a static object: never freed).
dp_comm *dp_comm_self(void);

#endif
