// count_allocs.c — counts every allocation the program and the static
// mhsa library make, for the test build of serve.c (examples/meson.build
// links it with -Wl,--wrap=malloc,... so each such call from the program's
// and the library's objects passes through here first). The C library's
// and OpenMP runtime's own internal allocations are not seen.
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

size_t count_allocs_calls(void);

static _Atomic size_t calls;

size_t count_allocs_calls(void) { return atomic_load(&calls); }

void *__real_malloc(size_t n);
void *__real_calloc(size_t m, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t m, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

void *__wrap_malloc(size_t n)
{
    atomic_fetch_add(&calls, 1);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t m, size_t n)
{
    atomic_fetch_add(&calls, 1);
    return __real_calloc(m, n);
}

void *__wrap_realloc(void *p, size_t n)
{
    atomic_fetch_add(&calls, 1);
    return __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
    atomic_fetch_add(&calls, 1);
    return __real_aligned_alloc(align, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    atomic_fetch_add(&calls, 1);
    return __real_posix_memalign(p, align, n);
}
