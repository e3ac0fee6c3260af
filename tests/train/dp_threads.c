// dp_threads.c — ranks as threads (dp_threads.h). Each collective is two
// barriers: every rank publishes its pointers, waits, copies what it needs
// from the others' buffers, and waits again before anyone may reuse them.
// Only bytes are copied, as in the MPI transport.
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dp_threads.h"
#include "util.h"

enum { MAX_RANKS = 16, MAX_MSG = 64 };

typedef struct slot {
    const char *p;
    const size_t *a, *b;
} slot;

typedef struct mailbox {
    char data[MAX_MSG];
    size_t n;
    int full;
} mailbox;

typedef struct world {
    int P, omp_threads;
    pthread_barrier_t bar;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot slots[MAX_RANKS];
    mailbox box[MAX_RANKS][MAX_RANKS];   // [to][from]
    mhsa_dp_comm comms[MAX_RANKS];
    void (*fn)(mhsa_dp_comm *, void *);
    void **arg;
} world;

static void publish(mhsa_dp_comm *c, const void *p, const size_t *a,
                    const size_t *b)
{
    world *w = c->impl;
    w->slots[c->rank] = (slot){ p, a, b };
    pthread_barrier_wait(&w->bar);
}

static int t_alltoallv(mhsa_dp_comm *c, const void *send, const size_t *scount,
                       const size_t *sdispl, void *recv, const size_t *rcount,
                       const size_t *rdispl)
{
    world *w = c->impl;
    publish(c, send, scount, sdispl);
    int bad = 0;
    for (int q = 0; q < w->P; q++) {
        const slot *s = &w->slots[q];
        bad |= s->a[c->rank] != rcount[q];
        if (!bad && rcount[q])
            memcpy((char *)recv + rdispl[q], s->p + s->b[c->rank],
                   rcount[q]);
    }
    pthread_barrier_wait(&w->bar);
    return bad ? -1 : 0;
}

static int t_allgatherv(mhsa_dp_comm *c, void *buf, const size_t *count,
                        const size_t *displ)
{
    world *w = c->impl;
    publish(c, buf, count, displ);
    for (int q = 0; q < w->P; q++)
        if (q != c->rank && count[q])
            memcpy((char *)buf + displ[q], w->slots[q].p + displ[q],
                   count[q]);
    pthread_barrier_wait(&w->bar);
    return 0;
}

static int t_bcast(mhsa_dp_comm *c, void *buf, size_t n, int root)
{
    world *w = c->impl;
    publish(c, buf, NULL, NULL);
    if (c->rank != root && n)
        memcpy(buf, w->slots[root].p, n);
    pthread_barrier_wait(&w->bar);
    return 0;
}

static int t_gatherv(mhsa_dp_comm *c, const void *send, void *buf,
                     const size_t *count, const size_t *displ, int root)
{
    world *w = c->impl;
    publish(c, send, count, displ);
    if (c->rank == root)
        for (int q = 0; q < w->P; q++)
            if (q != root && count[q])
                memcpy((char *)buf + displ[q], w->slots[q].p, count[q]);
    pthread_barrier_wait(&w->bar);
    return 0;
}

static int t_send(mhsa_dp_comm *c, const void *buf, size_t n, int to)
{
    world *w = c->impl;
    if (n > MAX_MSG)
        return -1;
    pthread_mutex_lock(&w->mu);
    mailbox *m = &w->box[to][c->rank];
    while (m->full)
        pthread_cond_wait(&w->cv, &w->mu);
    memcpy(m->data, buf, n);
    m->n = n;
    m->full = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static int t_recv(mhsa_dp_comm *c, void *buf, size_t n, int from)
{
    world *w = c->impl;
    pthread_mutex_lock(&w->mu);
    mailbox *m = &w->box[c->rank][from];
    while (!m->full)
        pthread_cond_wait(&w->cv, &w->mu);
    int bad = m->n != n;
    memcpy(buf, m->data, n < m->n ? n : m->n);
    m->full = 0;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return bad ? -1 : 0;
}

static const mhsa_dp_comm_ops thread_ops = {
    t_alltoallv, t_allgatherv, t_bcast, t_gatherv, t_send, t_recv, NULL,
    "threads",
};

static void *rank_main(void *p)
{
    mhsa_dp_comm *c = p;
    world *w = c->impl;
    omp_set_num_threads(w->omp_threads);
    w->fn(c, w->arg[c->rank]);
    return NULL;
}

void dp_threads_run(int P, int omp_threads, void (*fn)(mhsa_dp_comm *, void *),
                    void **arg)
{
    ck_assert_int_le(P, MAX_RANKS);
    world *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    w->P = P;
    w->omp_threads = omp_threads;
    w->fn = fn;
    w->arg = arg;
    pthread_barrier_init(&w->bar, NULL, (unsigned)P);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_t th[MAX_RANKS];
    for (int r = 0; r < P; r++) {
        w->comms[r] = (mhsa_dp_comm){ &thread_ops, r, P, w };
        ck_assert_int_eq(pthread_create(&th[r], NULL, rank_main,
                                        &w->comms[r]), 0);
    }
    for (int r = 0; r < P; r++)
        pthread_join(th[r], NULL);
    pthread_barrier_destroy(&w->bar);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
