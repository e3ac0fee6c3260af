// alloc.c — aligned, zeroed allocation with a fault-injection hook.
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

// Counters are process-wide and atomic: allocations only happen in create
// calls, never inside forward/backward, so the cost does not matter.
static _Atomic size_t alloc_count;
static _Atomic size_t fail_at;

size_t mhsa__alloc_fail_at(size_t n)
{
    size_t made = atomic_exchange(&alloc_count, 0);
    atomic_store(&fail_at, n);
    return made;
}

void *mhsa__alloc(size_t bytes)
{
    size_t nth = atomic_fetch_add(&alloc_count, 1) + 1;
    size_t f = atomic_load(&fail_at);
    if (f != 0 && nth == f)
        return NULL;
    if (bytes == 0)
        bytes = 1;
    // Round up so the tail of the last 64-byte line belongs to us.
    if (bytes > SIZE_MAX - 63)
        return NULL;
    bytes = (bytes + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

void mhsa__free(void *p) { free(p); }

void mhsa__free_all(void *const *ps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ps[i]);
}

int mhsa__mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

int mhsa__mul3(size_t a, size_t b, size_t c, size_t *out)
{
    size_t ab;
    return mhsa__mul(a, b, &ab) && mhsa__mul(ab, c, out);
}

int mhsa__mul_add(size_t *acc, size_t a, size_t b)
{
    size_t ab;
    if (!mhsa__mul(a, b, &ab) || ab > SIZE_MAX - *acc)
        return 0;
    *acc += ab;
    return 1;
}
