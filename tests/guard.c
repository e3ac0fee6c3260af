// guard.c — mmap + mprotect guard-page buffers (see guard.h).
// MAP_ANONYMOUS is not POSIX 2008.
#define _DEFAULT_SOURCE 1
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guard.h"

// Each live buffer's mapping; tests hold a handful at a time.
enum { MAX_LIVE = 64 };
static struct live {
    float *p;
    char *base;
    size_t map_len, data_off, data_len;
} live[MAX_LIVE];

static size_t page_size(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    return ps > 0 ? (size_t)ps : 4096;
}

static struct live *find(const float *p)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i].p == p && live[i].base)
            return &live[i];
    ck_abort_msg("guard: %p is not a live guarded buffer", (void *)p);
    return NULL;
}

float *guard_alloc(size_t n, guard_side side)
{
    size_t ps = page_size(), bytes = n * sizeof(float);
    size_t data_pages = (bytes + ps - 1) / ps;
    if (data_pages == 0)
        data_pages = 1;
    size_t map_len = (data_pages + 1) * ps;
    char *base = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_msg(base != MAP_FAILED, "guard: mmap of %zu bytes failed",
                  map_len);
    size_t data_off, guard_off;
    if (side == GUARD_AFTER) {
        guard_off = data_pages * ps;
        data_off = guard_off - bytes;
    } else {
        guard_off = 0;
        data_off = ps;
    }
    ck_assert(mprotect(base + guard_off, ps, PROT_NONE) == 0);
    for (int i = 0; i < MAX_LIVE; i++)
        if (!live[i].base) {
            live[i] = (struct live){ (float *)(void *)(base + data_off), base,
                                     map_len, data_off, bytes };
            return live[i].p;
        }
    ck_abort_msg("guard: more than %d live buffers", MAX_LIVE);
    return NULL;
}

void guard_readonly(float *p)
{
    struct live *l = find(p);
    size_t ps = page_size();
    // Whole pages only: the data's pages hold nothing else.
    uintptr_t lo = (uintptr_t)(l->base + l->data_off) / ps * ps;
    uintptr_t hi = (uintptr_t)(l->base + l->data_off + l->data_len);
    hi = (hi + ps - 1) / ps * ps;
    if (hi > lo)
        ck_assert(mprotect((void *)lo, hi - lo, PROT_READ) == 0);
}

float *guard_copy(size_t n, guard_side side, const float *x, int ro)
{
    float *p = guard_alloc(n, side);
    if (x)
        memcpy(p, x, n * sizeof(float));
    if (ro)
        guard_readonly(p);
    return p;
}

void guard_free(float *p)
{
    if (!p)
        return;
    struct live *l = find(p);
    munmap(l->base, l->map_len);
    *l = (struct live){ 0 };
}
