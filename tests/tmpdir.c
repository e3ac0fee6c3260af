// tmpdir.c — see tmpdir.h.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "tmpdir.h"

static char dir[512];

const char *tpath_dir(void)
{
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/mhsa-test-XXXXXX",
                 t && t[0] && strlen(t) < 400 ? t : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(dir));
    }
    return dir;
}

const char *tpath(const char *name)
{
    static char bufs[64][640];
    static int next;
    char *b = bufs[next++ % 64];
    snprintf(b, sizeof bufs[0], "%s/%s", tpath_dir(), name);
    return b;
}

// Calls f on every entry but . and .., with its full path; returns the count.
static int each_entry(void (*f)(const char *))
{
    if (!dir[0])
        return 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (f)
            f(p);
    }
    closedir(d);
    return n;
}

static void remove_entry(const char *p)
{
    if (rmdir(p) != 0)
        unlink(p);
}

int tpath_entries(void)
{
    return each_entry(NULL);
}

int tpath_remove(void)
{
    int n = each_entry(remove_entry);
    if (dir[0])
        rmdir(dir);
    dir[0] = '\0';
    return n;
}
