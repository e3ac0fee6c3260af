// alloc.h — the library's only allocator, and overflow-checked size math.
//
// Every allocation goes through mhsa__alloc so that tests can make the N-th
// one fail (fault injection) and check that each public call then returns
// MHSA_ERR_NO_MEMORY and leaks nothing.
#ifndef MHSA_ALLOC_H
#define MHSA_ALLOC_H

#include <stddef.h>

// 64-byte aligned, zero-filled; NULL on failure (or on an injected failure).
void *mhsa__alloc(size_t bytes);
void  mhsa__free(void *p);
// Frees ps[0..n) in order (NULL entries are no-ops, as for mhsa__free): the
// body of a destroy function. MHSA_FREE_ALL(a, b, obj) counts its arguments;
// all of them are read before the first is freed, so the object holding the
// others may come last.
void  mhsa__free_all(void *const *ps, size_t n);
#define MHSA_FREE_ALL(...)                                                   \
    mhsa__free_all((void *const[]){ __VA_ARGS__ },                           \
                   sizeof((void *const[]){ __VA_ARGS__ }) / sizeof(void *))

// Test hook: the n-th allocation from now on (1 = the next one) fails;
// 0 turns injection off. Returns how many allocations were made since the
// last call (so a test can first count, then fail each one in turn).
size_t mhsa__alloc_fail_at(size_t n);

// *out = a * b (or a * b * c); 0 if it overflows size_t, else 1.
int mhsa__mul(size_t a, size_t b, size_t *out);
int mhsa__mul3(size_t a, size_t b, size_t c, size_t *out);
// *acc += a * b; 0 on overflow (acc unchanged), else 1.
int mhsa__mul_add(size_t *acc, size_t a, size_t b);

#endif
