// mpi_comm.c — mhsa-train's transport over MPI (mpi_comm.h), on the public
// transport interface of the data-parallel trainer (mhsa_dp_comm,
// mhsa_train.h).
//
// Every operation moves bytes only (MPI_BYTE, or a 4-byte unit made of
// bytes for large float arrays): MPI never adds, so its choice of algorithm
// and the number of ranks cannot change a bit of the result. Errors use
// MPI's default handler, MPI_ERRORS_ARE_FATAL: a failing call (a peer that
// died, a broken link) ends the whole job with a message instead of
// leaving ranks waiting.
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi_comm.h"

typedef struct mpi_state {
    MPI_Comm comm;
    MPI_Datatype word;     // 4 contiguous bytes
    int *ia, *ib, *ic, *id;   // (P) int counts and displacements
} mpi_state;

// Counts and displacements in units MPI's int can hold: 4-byte words when
// every value is a multiple of 4 (float arrays: 8 GiB per message), else
// bytes. -1 when they still do not fit.
static int to_units(const mpi_state *s, int P, const size_t *c,
                    const size_t *d, int *ci, int *di, MPI_Datatype *type)
{
    int words = 1;
    for (int q = 0; q < P; q++)
        words &= c[q] % 4 == 0 && (!d || d[q] % 4 == 0);
    size_t u = words ? 4 : 1;
    *type = words ? s->word : MPI_BYTE;
    for (int q = 0; q < P; q++) {
        if (c[q] / u > INT_MAX || (d && d[q] / u > INT_MAX)) {
            char msg[96];
            snprintf(msg, sizeof msg, "dp mpi: a message of %zu bytes is "
                     "too large for MPI", c[q]);
            return mhsa_dp_comm_error(msg);
        }
        ci[q] = (int)(c[q] / u);
        if (d)
            di[q] = (int)(d[q] / u);
    }
    return 0;
}

static int m_alltoallv(mhsa_dp_comm *c, const void *send, const size_t *scount,
                       const size_t *sdispl, void *recv, const size_t *rcount,
                       const size_t *rdispl)
{
    mpi_state *s = c->impl;
    MPI_Datatype ts, tr;
    // Each side picks its own unit: a word's type signature is four bytes,
    // so k words sent match 4k bytes received.
    if (to_units(s, c->size, scount, sdispl, s->ia, s->ib, &ts) ||
        to_units(s, c->size, rcount, rdispl, s->ic, s->id, &tr))
        return -1;
    MPI_Alltoallv(send, s->ia, s->ib, ts, recv, s->ic, s->id, tr, s->comm);
    return 0;
}

static int m_allgatherv(mhsa_dp_comm *c, void *buf, const size_t *count,
                        const size_t *displ)
{
    mpi_state *s = c->impl;
    MPI_Datatype t;
    if (to_units(s, c->size, count, displ, s->ia, s->ib, &t))
        return -1;
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, s->ia, s->ib, t,
                   s->comm);
    return 0;
}

static int m_bcast(mhsa_dp_comm *c, void *buf, size_t n, int root)
{
    mpi_state *s = c->impl;
    // In slices MPI's int count can hold.
    for (size_t at = 0; at < n;) {
        size_t k = n - at < (size_t)1 << 30 ? n - at : (size_t)1 << 30;
        MPI_Bcast((char *)buf + at, (int)k, MPI_BYTE, root, s->comm);
        at += k;
    }
    return 0;
}

static int m_gatherv(mhsa_dp_comm *c, const void *send, void *buf,
                     const size_t *count, const size_t *displ, int root)
{
    mpi_state *s = c->impl;
    MPI_Datatype t;
    if (to_units(s, c->size, count, displ, s->ia, s->ib, &t))
        return -1;
    if (c->rank == root)
        MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, s->ia, s->ib,
                    t, root, s->comm);
    else
        MPI_Gatherv(send, s->ia[c->rank], t, NULL, NULL, NULL, t, root,
                    s->comm);
    return 0;
}

static int m_send(mhsa_dp_comm *c, const void *buf, size_t n, int to)
{
    mpi_state *s = c->impl;
    if (n > INT_MAX)
        return mhsa_dp_comm_error("dp mpi: send too large");
    MPI_Send(buf, (int)n, MPI_BYTE, to, 0, s->comm);
    return 0;
}

static int m_recv(mhsa_dp_comm *c, void *buf, size_t n, int from)
{
    mpi_state *s = c->impl;
    if (n > INT_MAX)
        return mhsa_dp_comm_error("dp mpi: recv too large");
    MPI_Recv(buf, (int)n, MPI_BYTE, from, 0, s->comm, MPI_STATUS_IGNORE);
    return 0;
}

static void m_abort(mhsa_dp_comm *c, int code)
{
    mpi_state *s = c->impl;
    MPI_Abort(s->comm, code);
    abort();   // MPI_Abort does not return; this keeps the compiler sure
}

static const mhsa_dp_comm_ops mpi_ops = {
    m_alltoallv, m_allgatherv, m_bcast, m_gatherv, m_send, m_recv, m_abort,
    "mpi",
};

int mpi_comm_launched(void)
{
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_SIZE",   // Open MPI's mpirun / mpiexec
        "PMIX_RANK",              // PMIx launchers (srun --mpi=pmix, prterun)
        "PMI_RANK",               // PMI-1/2 launchers (MPICH hydra, srun)
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

// A failure of mpi_comm_init: msg as mhsa_last_error(), status st.
static mhsa_status init_fail(mhsa_status st, const char *msg)
{
    mhsa_dp_comm_error(msg);
    return st;
}

mhsa_status mpi_comm_init(int *argc, char ***argv, mhsa_dp_comm **out)
{
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS)
        return init_fail(MHSA_ERR_STATE, "MPI_Init_thread failed");
    if (provided < MPI_THREAD_FUNNELED) {
        MPI_Finalize();
        char msg[96];
        snprintf(msg, sizeof msg, "this MPI library gives thread level %d, "
                 "below MPI_THREAD_FUNNELED", provided);
        return init_fail(MHSA_ERR_UNSUPPORTED, msg);
    }
    mhsa_dp_comm *c = calloc(1, sizeof *c);
    mpi_state *s = calloc(1, sizeof *s);
    int P = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int *ints = P > 0 ? calloc(4 * (size_t)P, sizeof(int)) : NULL;
    if (!c || !s || !ints) {
        free(c);
        free(s);
        free(ints);
        MPI_Finalize();
        return init_fail(MHSA_ERR_NO_MEMORY, "mpi_comm_init: out of memory");
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &s->comm);
    MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_ARE_FATAL);
    MPI_Type_contiguous(4, MPI_BYTE, &s->word);
    MPI_Type_commit(&s->word);
    s->ia = ints;
    s->ib = ints + P;
    s->ic = ints + 2 * P;
    s->id = ints + 3 * P;
    c->ops = &mpi_ops;
    c->impl = s;
    c->size = P;
    MPI_Comm_rank(s->comm, &c->rank);
    *out = c;
    return MHSA_OK;
}

void mpi_comm_finalize(mhsa_dp_comm *c)
{
    if (!c)
        return;
    mpi_state *s = c->impl;
    MPI_Type_free(&s->word);
    MPI_Comm_free(&s->comm);
    MPI_Finalize();
    free(s->ia);
    free(s);
    free(c);
}
