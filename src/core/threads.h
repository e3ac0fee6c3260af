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
// all. The rule, the same for every region (GEMM driver, attention forward
// and backward, decode), deterministic and a function of the shapes only:
//   1 thread  when flops < 2^18 (0.26 MFLOP) or tasks < 2; then no OpenMP
//             region is entered at all (mhsa__team_run below calls the
//             body directly: an `if (nt > 1)` clause on the pragma alone
//             still enters libgomp's GOMP_parallel for a team of one);
//   else      min(OpenMP's max threads, max_threads, tasks).
// flops counts the useful work: the attention passes the (row, key) pairs
// its rows see (attn/view.h: causal T x T is T (T + 1) / 2 pairs), a GEMM
// 2 m n k. 2^18 FLOPs is a few microseconds of one core, about the fork,
// join and wake-up of a sleeping pool thread, so below it a second thread
// costs more than it saves; on a busy machine a region can cost far more
// (the second thread waits for a CPU), so small calls never enter one.
// Which count it picks never changes a bit of the results: every region
// splits its work into pieces fixed by the shapes, each summed in a fixed
// order.
int mhsa__threads(int max_threads, double flops, size_t tasks);

// Runs body(ctx) on a team of nt threads, each in the library's
// floating-point state (core/fpenv.h), and returns when all are done.
// nt <= 1: body(ctx) on the calling thread, with no OpenMP call at all (a
// team of one through libgomp costs a team's allocation and set-up, and a
// GPT decoding step entered ~60 of them: docs/performance.md,
// "Measurements behind the code"). The body splits its work with orphaned
// `#pragma omp for` loops or by omp_get_thread_num() /
// omp_get_num_threads(), which give 0 and 1 outside a region, so one body
// serves both. Called from inside a team of several threads (the
// application's own region), nt <= 1 still makes a team of one, so the
// body's constructs bind to it.
typedef void (*mhsa_team_body)(void *ctx);
void mhsa__team_run(int nt, mhsa_team_body body, void *ctx);

#endif
