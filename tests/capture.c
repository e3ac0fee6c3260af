// capture.c — see capture.h.
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "capture.h"

char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return s;
}

// A fresh temporary file, open for writing; its name goes to buf.
static int temp_file(char *buf, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/mhsa_capture_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(buf);
    ck_assert_msg(fd >= 0, "mkstemp %s failed", buf);
    return fd;
}

int run_captured(capture_cmd cmd, char **out, char **err, int argc,
                 const char **argv)
{
    char fo[256], fe[256];
    int o = temp_file(fo, sizeof fo), e = temp_file(fe, sizeof fe);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(o, 1);
    dup2(e, 2);
    int rc = cmd(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(o);
    close(e);
    close(so);
    close(se);
    *out = slurp(fo, NULL);
    *err = slurp(fe, NULL);
    remove(fo);
    remove(fe);
    return rc;
}

int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}
