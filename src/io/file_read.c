// file_read.c — opening and reading untrusted weight files (file_read.h).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_read.h"
#include "core/status.h"

mhsa_status mhsa__open_regular(const char *path, int *fd, uint64_t *size)
{
    int d = open(path, O_RDONLY | O_CLOEXEC);
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
        return mhsa__fail(MHSA_ERR_IO, "%s: %s", path, S_ISDIR(st.st_mode)
                          ? "is a directory" : "is not a regular file");
    }
    *fd = d;
    *size = (uint64_t)st.st_size;
    return MHSA_OK;
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
