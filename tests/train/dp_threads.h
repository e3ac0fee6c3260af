// dp_threads.h — a mhsa_dp_comm transport whose ranks are threads of one
// process (tests only): runs the data-parallel trainer on P = 1, 2, 3, 4, 6
// ranks without MPI, under the sanitizers and valgrind too.
#ifndef MHSA_TEST_DP_THREADS_H
#define MHSA_TEST_DP_THREADS_H

#include "mhsa_train.h"

// Calls fn(comm of rank r, arg[r]) on P threads (rank 0 on its own thread
// too) and returns when all have returned. OpenMP inside each thread uses
// omp_threads threads.
void dp_threads_run(int P, int omp_threads, void (*fn)(mhsa_dp_comm *, void *),
                    void **arg);

#endif
