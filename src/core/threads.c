// threads.c — how many OpenMP threads a parallel region of the library
// uses: the work threshold, the workspace's limit, and fork() safety.
#include <omp.h>
#include <pthread.h>

#include "fpenv.h"
#include "threads.h"

// fork() safety. GCC's libgomp keeps a thread pool per calling thread and
// has no fork handler: in a child forked after a parallel region, that
// thread's next region with more than one thread waits for pool threads
// that do not exist there, for ever. So a thread that has started a
// parallel region here runs serially in a forked child (the same bits: they
// never depend on the thread count); threads created in the child get
// fresh pools and run in parallel as usual.
// Only threads that ran a parallel region here before the fork are marked:
// marking every forking thread would make every forked child (check's test
// runner forks each test) serial. An application that ran its own OpenMP
// regions before fork() should call mhsa with OMP_NUM_THREADS=1 in the
// child; libgomp gives no way to see that from here.
static _Thread_local int pool_started, pool_stale;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    if (pool_started)   // runs in the forking thread, the child's only one
        pool_stale = 1;
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

int mhsa__pool_threads(int nt)
{
    if (nt <= 1 || pool_stale)
        return 1;
    pthread_once(&atfork_once, register_atfork);
    pool_started = 1;
    return nt;
}

int mhsa__threads(int max_threads, double flops, size_t tasks)
{
    // Below 2^18 FLOPs a parallel region costs more than it saves (the
    // rule in threads.h).
    if (flops < 262144.0 || tasks < 2)
        return 1;
    int nt = omp_get_max_threads();
    if (nt > max_threads)
        nt = max_threads;
    if ((size_t)nt > tasks)
        nt = (int)tasks;
    return mhsa__pool_threads(nt < 1 ? 1 : nt);
}

void mhsa__team_run(int nt, mhsa_team_body body, void *ctx)
{
    // Directly only outside any team of several threads: inside one (an
    // application calling from its own parallel region) the body's
    // orphaned constructs would bind to the application's team, so a team
    // of one of its own is made, as an `if (0)` region would.
    if (nt <= 1 && omp_get_num_threads() == 1) {
        body(ctx);   // the caller is already in the library's state
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        mhsa_fpstate fp = mhsa__fp_enter_team();
        body(ctx);
        mhsa__fp_leave_team(fp);
    }
}
