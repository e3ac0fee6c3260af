// guard.h — buffers placed against an inaccessible page, so that one read or
// write past either end of what the library was given faults at once
// (instead of silently corrupting a neighbour, as canaries only detect).
#ifndef MHSA_TEST_GUARD_H
#define MHSA_TEST_GUARD_H

#include <stddef.h>

typedef enum guard_side {
    GUARD_AFTER,    // the last float ends where a PROT_NONE page begins
    GUARD_BEFORE    // the first float starts where a PROT_NONE page ends
} guard_side;

// n floats (n may be 0), zero-filled, readable and writable. With
// GUARD_AFTER the pointer is only 4-byte aligned whenever 4n is not a
// multiple of the page size: the library may assume no more than float's
// alignment. Aborts the test (ck_assert) if mmap fails.
float *guard_alloc(size_t n, guard_side side);
// Makes the n floats read-only (after the caller has filled them): an input
// the library writes to then faults too.
void   guard_readonly(float *p);
// guard_alloc's buffer holding a copy of x's n floats (zeros when x is
// NULL), read-only when ro.
float *guard_copy(size_t n, guard_side side, const float *x, int ro);
void   guard_free(float *p);

#endif
