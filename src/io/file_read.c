// file_read.c — opening and reading untrusted weight files (file_read.h).
// madvise (MADV_DONTNEED) is not POSIX: glibc declares it for the default
// set.
#define _DEFAULT_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_read.h"
#include "core/status.h"

// What a non-regular file is, for the message.
static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "is a directory" : S_ISFIFO(m) ? "is a FIFO (named "
           "pipe)" : S_ISCHR(m) ? "is a character device" : S_ISBLK(m)
           ? "is a block device" : S_ISSOCK(m) ? "is a socket"
           : "is not a regular file";
}

mhsa_status mhsa__open_regular(const char *path, int *fd, uint64_t *size)
{
    // O_NONBLOCK: opening a FIFO without a writer (or a device that waits
    // for a carrier) returns at once instead of blocking for ever; the
    // fstat below then refuses it. O_NOCTTY: a terminal given as the
    // path does not become the controlling one.
    int d = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (d < 0)
        return mhsa__fail(MHSA_ERR_IO, "%s: cannot open: %s", path,
                          strerror(errno));
    struct stat st;
    if (fstat(d, &st) != 0) {
        int err = errno;
        close(d);
        return mhsa__fail(MHSA_ERR_IO, "%s: cannot stat: %s", path,
                          strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(d);
        return mhsa__fail(MHSA_ERR_IO, "%s: %s, not a regular file", path,
                          kind_of(st.st_mode));
    }
    // Reads of a regular file never block, but the flag would stay on the
    // descriptor: cleared so that it is an ordinary blocking one.
    int fl = fcntl(d, F_GETFL);
    if (fl < 0 || fcntl(d, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int err = errno;
        close(d);
        return mhsa__fail(MHSA_ERR_IO, "%s: cannot clear O_NONBLOCK: %s",
                          path, strerror(err));
    }
    *fd = d;
    *size = (uint64_t)st.st_size;
    return MHSA_OK;
}

// Bytes of the character at p (left > 0 bytes) when it may go into a
// message as it is: printable ASCII, or a well-formed UTF-8 sequence that
// is not a C1 control (U+0080..U+009F, which terminals may take as escape
// sequences) or a line separator or bidirectional override (U+2028..U+202E,
// U+2066..U+2069, which reorder or break the text shown); else 0.
static size_t shown_as_is(const unsigned char *p, size_t left)
{
    unsigned c = p[0];
    if (c >= 0x20 && c < 0x7f)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (left < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    if (c == 0xc2 && p[1] < 0xa0)
        return 0;
    if (c == 0xe2 && ((p[1] == 0x80 && p[2] >= 0xa8 && p[2] <= 0xae) ||
                      (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)))
        return 0;
    return n;
}

const char *mhsa__esc(char *buf, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    if (cap == 0)
        return buf;
    // Room kept for "..." and the NUL.
    size_t room = cap > 4 ? cap - 4 : 0, o = 0, i = 0;
    while (i < n) {
        size_t k = shown_as_is(p + i, n - i);
        size_t w = k ? k : 4;
        if (o + w > room)
            break;
        if (k) {
            memcpy(buf + o, p + i, k);
        } else {
            buf[o] = '\\';
            buf[o + 1] = 'x';
            buf[o + 2] = hex[p[i] >> 4];
            buf[o + 3] = hex[p[i] & 15];
            k = 1;
        }
        o += w;
        i += k;
    }
    if (i < n && cap > 4) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o < cap ? o : cap - 1] = '\0';
    return buf;
}

const char *mhsa__fmt_shape(char *buf, size_t cap, int n, const size_t *d)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%zu",
                                i ? ", " : "", d[i]);
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
    return buf;
}

mhsa_status mhsa__check_shape(const char *name, int want_n,
                              const size_t *want, int got_n,
                              const size_t *got)
{
    int same = want_n == got_n;
    for (int i = 0; same && i < want_n; i++)
        same = want[i] == got[i];
    if (same)
        return MHSA_OK;
    char w[96], g[96];
    mhsa__fmt_shape(w, sizeof w, want_n, want);
    mhsa__fmt_shape(g, sizeof g, got_n, got);
    return mhsa__fail(MHSA_ERR_FORMAT, "tensor '%s': expected shape %s, "
                      "found %s", name, w, g);
}

int mhsa__pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            return 1;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

mhsa_status mhsa__pread_tensor(int fd, void *buf, size_t n, uint64_t off,
                               const char *name)
{
    int r = mhsa__pread_full(fd, buf, n, off);
    if (r < 0)
        return mhsa__fail(MHSA_ERR_IO, "tensor '%s': read error: %s", name,
                          strerror(errno));
    if (r > 0)
        return mhsa__fail(MHSA_ERR_FORMAT, "tensor '%s': file truncated "
                          "while reading", name);
    return MHSA_OK;
}

mhsa_status mhsa__map_file(int fd, uint64_t size, const char *path,
                           mhsa_file_map *m)
{
    m->base = NULL;
    m->size = 0;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return mhsa__fail(MHSA_ERR_IO, "%s: cannot stat: %s", path,
                          strerror(errno));
    if ((uint64_t)st.st_size != size)
        return mhsa__fail(MHSA_ERR_FORMAT, "%s: the file changed size "
                          "while it was being read (%llu bytes, then "
                          "%llu)", path, (unsigned long long)size,
                          (unsigned long long)st.st_size);
    if (size == 0 || size > (uint64_t)SIZE_MAX)
        return mhsa__fail(MHSA_ERR_IO, "%s: %llu bytes cannot be mapped",
                          path, (unsigned long long)size);
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return mhsa__fail(MHSA_ERR_IO, "%s: cannot map %llu bytes: %s",
                          path, (unsigned long long)size, strerror(errno));
    m->base = p;
    m->size = (size_t)size;
    return MHSA_OK;
}

void mhsa__map_release(const mhsa_file_map *m, const void *p, size_t n)
{
    long page = sysconf(_SC_PAGESIZE);
    if (!m || !m->base || page <= 0)
        return;
    uintptr_t a = (uintptr_t)p, e = a + n, ps = (uintptr_t)page;
    a = (a + ps - 1) / ps * ps;
    e = e / ps * ps;
    if (e > a)
        madvise((void *)a, e - a, MADV_DONTNEED);
}

void mhsa__unmap_file(mhsa_file_map *m)
{
    if (!m || !m->base)
        return;
    munmap((void *)m->base, m->size);
    m->base = NULL;
    m->size = 0;
}
