// dp_self.c — the transport of a run with one process: rank 0 of 1. Every
// collective degenerates to a copy from this rank to itself (or to
// nothing), so a run with --grad-groups G > 1 goes through exactly the code
// of an MPI run, and is tested without MPI.
#include <string.h>

#include "mhsa_train.h"
#include "core/status.h"

static int self_alltoallv(mhsa_dp_comm *c, const void *send,
                          const size_t *scount, const size_t *sdispl,
                          void *recv, const size_t *rcount,
                          const size_t *rdispl)
{
    (void)c;
    if (scount[0] != rcount[0])
        return mhsa__fail(MHSA_ERR_STATE, "dp self alltoallv: sends %zu "
                          "bytes, receives %zu", scount[0], rcount[0]), -1;
    const char *s = (const char *)send + sdispl[0];
    char *r = (char *)recv + rdispl[0];
    if (s != r && scount[0])
        memmove(r, s, scount[0]);
    return 0;
}

static int self_allgatherv(mhsa_dp_comm *c, void *buf, const size_t *count,
                           const size_t *displ)
{
    (void)c;
    (void)buf;
    (void)count;
    (void)displ;
    return 0;   // the only part is in place already
}

static int self_bcast(mhsa_dp_comm *c, void *buf, size_t n, int root)
{
    (void)c;
    (void)buf;
    (void)n;
    (void)root;
    return 0;
}

static int self_gatherv(mhsa_dp_comm *c, const void *send, void *buf,
                        const size_t *count, const size_t *displ, int root)
{
    (void)c;
    (void)send;
    (void)buf;
    (void)count;
    (void)displ;
    (void)root;
    return 0;   // root's own part is in place by contract
}

static int self_p2p(mhsa_dp_comm *c, int peer)
{
    (void)c;
    return mhsa__fail(MHSA_ERR_STATE, "dp self transport: no rank %d to "
                      "talk to", peer), -1;
}

static int self_send(mhsa_dp_comm *c, const void *buf, size_t n, int to)
{
    (void)buf;
    (void)n;
    return self_p2p(c, to);
}

static int self_recv(mhsa_dp_comm *c, void *buf, size_t n, int from)
{
    (void)buf;
    (void)n;
    return self_p2p(c, from);
}

static const mhsa_dp_comm_ops self_ops = {
    self_alltoallv, self_allgatherv, self_bcast, self_gatherv,
    self_send, self_recv, NULL, "self",
};

mhsa_dp_comm *mhsa_dp_comm_self(void)
{
    static mhsa_dp_comm self = { &self_ops, 0, 1, NULL };
    return &self;
}

int mhsa_dp_comm_error(const char *msg)
{
    return mhsa__fail(MHSA_ERR_STATE, "%s", msg ? msg : "(no message)"), -1;
}
