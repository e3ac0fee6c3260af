// threads.h — the one rule for the thread count of every parallel region.
//
// Results never depend on the thread count (work is split into pieces
// fixed by the shapes, each summed in a fixed order), so these choose only
// speed: one thread below a work threshold, never more threads than tasks
// or than the workspace has per-thread memory for, and one thread on a
// thread whose OpenMP pool was left behind by fork().
#ifndef MHSA_THREADS_H
#define MHSA_THREADS_H

#include <stddef.h>

// The thread count for a parallel region that wants nt threads: nt, or 1
// on a thread whose OpenMP pool was left behind by fork() (threads.c).
// Every parallel region of the library sizes itself through this.
int mhsa__pool_threads(int nt);

// Threads for a parallel loop of `tasks` pieces doing `flops` of work in
// all: 1 below a work threshold, else up to max_threads (the workspace's
// per-thread memory) and OpenMP's limit.
int mhsa__threads(int max_threads, double flops, size_t tasks);

#endif
