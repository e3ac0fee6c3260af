// example_util.h — the few helpers every example needs and none is about:
// a check that stops the program with the library's message, a monotonic
// clock and latency percentiles. Header-only, so each example still builds
// from its one .c file plus this header.
//
// Define EXAMPLE_NAME (the program's name, for messages) before including.
#ifndef MHSA_EXAMPLE_UTIL_H
#define MHSA_EXAMPLE_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mhsa.h"

#ifndef EXAMPLE_NAME
#error "define EXAMPLE_NAME before including example_util.h"
#endif

// Reports a failed call with the library's message and exits.
#define CHECK(call)                                                         \
    do {                                                                    \
        mhsa_status s_ = (call);                                            \
        if (s_ != MHSA_OK) {                                                \
            fprintf(stderr, EXAMPLE_NAME ": %s failed: %s: %s\n", #call,    \
                    mhsa_status_str(s_), mhsa_last_error());                \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

// Seconds on the monotonic clock (for intervals only).
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Nearest-rank percentile of sorted v[0..n).
static inline double percentile(const double *v, long n, double p)
{
    long i = (long)ceil(p / 100.0 * (double)n) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

#endif
