// gen_util.c — mhsa-generate's messages, quoting, clock and thread count
// (gen_util.h).
#include "gen_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <omp.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mhsa.h"

enum { QUOTE_MAX = 200, QUOTE_RING = 4 };

// The length (1 to 4) of the UTF-8 sequence at s[0..n), n >= 1, and its
// code point in *cp; a byte that does not start a well-formed sequence (a
// stray continuation byte, an overlong form, a surrogate, past U+10FFFF,
// truncated) is length 1 with *cp = UINT32_MAX.
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char b = s[0];
    size_t len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2
               : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4
               : 0;
    *cp = UINT32_MAX;
    if (len == 0 || len > n)
        return 1;
    uint32_t c = len == 1 ? b : b & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 1;
        c = c << 6 | (s[i] & 0x3fu);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
        return 1;
    *cp = c;
    return len;
}

const char *gen_quote_n(const char *s, size_t n)
{
    // Worst case: QUOTE_MAX bytes, each 4 characters, a sequence of 4
    // bytes started at the limit, "..." and the NUL.
    static char ring[QUOTE_RING][4 * (QUOTE_MAX + 4) + 4];
    static int next;
    char *out = ring[next];
    next = (next + 1) % QUOTE_RING;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n && i < QUOTE_MAX) {
        uint32_t cp = 0;
        size_t len = utf8_next(p + i, n - i, &cp);
        // Shown as is: printable ASCII but the backslash, and characters
        // past the C1 controls; everything else as escapes, byte by byte.
        int plain = cp != UINT32_MAX && cp != '\\' &&
                    ((cp >= 0x20 && cp < 0x7f) || cp >= 0xa0);
        if (plain) {
            memcpy(out + o, p + i, len);
            o += len;
        } else {
            for (size_t j = 0; j < len; j++)
                o += (size_t)snprintf(out + o, 5, "\\x%02x", p[i + j]);
        }
        i += len;
    }
    if (i < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

const char *gen_quote(const char *s)
{
    return gen_quote_n(s, strlen(s));
}

int gen_usage(FILE *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mhsa-generate: ", err);
    vfprintf(err, fmt, ap);
    fputc('\n', err);
    va_end(ap);
    return CLI_USAGE;
}

int gen_fail(const char *what)
{
    fprintf(stderr, "mhsa-generate: %s: %s\n", what, mhsa_last_error());
    return CLI_FAIL;
}

double gen_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gen_set_threads(int threads)
{
    if (threads > 0) {
        omp_set_num_threads(threads);
        return;
    }
    int n = omp_get_max_threads();
    if (n > GEN_MAX_THREADS) {
        fprintf(stderr, "mhsa-generate: OpenMP would run %d threads "
                "(OMP_NUM_THREADS); using %d, the most --threads "
                "accepts\n", n, GEN_MAX_THREADS);
        omp_set_num_threads(GEN_MAX_THREADS);
    }
}

// What a file that is not regular is, for the message.
static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "of another kind";
}

int gen_open_regular(FILE *err, const char *flag, const char *path, int *fd,
                     long long *size)
{
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0)
        return gen_usage(err, "%s %s: cannot open: %s", flag,
                         gen_quote(path), strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return gen_usage(err, "%s %s: cannot open: %s", flag,
                         gen_quote(path), strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return gen_usage(err, "%s %s: is not a regular file (%s)", flag,
                         gen_quote(path), file_kind(st.st_mode));
    }
    *fd = f;
    *size = (long long)st.st_size;
    return CLI_OK;
}

int gen_model_kind(FILE *err, const char *path, int *is_gguf)
{
    int fd;
    long long size;
    int rc = gen_open_regular(err, "--model", path, &fd, &size);
    if (rc != CLI_OK)
        return rc;
    unsigned char h[9];
    size_t got = 0;
    while (got < sizeof h) {
        ssize_t r = read(fd, h + got, sizeof h - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *is_gguf = got >= 4 && !memcmp(h, "GGUF", 4);
    if (*is_gguf)
        return CLI_OK;
    uint64_t n = 0;
    for (int i = 7; got == sizeof h && i >= 0; i--)
        n = n << 8 | h[i];
    if (got == sizeof h && n >= 2 && n <= (uint64_t)size - 8 && h[8] == '{')
        return CLI_OK;
    return gen_usage(err, "--model %s: neither a GGUF file (magic 'GGUF') "
                     "nor a safetensors file (a little-endian 8-byte "
                     "header length, then a JSON header)", gen_quote(path));
}
