// file_read.c — opening and reading untrusted weight files (file_read.h).
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_read.h"
#include "mhsa_internal.h"

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
