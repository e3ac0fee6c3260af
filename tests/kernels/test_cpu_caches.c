// test_cpu_caches.c — the cache sizes the GEMM's blocking is derived from
// (src/core/cpu_caches.h): the sysfs size parser, the plausibility rule, and
// on a real x86-64 Linux machine CPUID's answer against the kernel's sysfs
// (which Linux itself derives from the same CPUID leaves, so they must
// agree). Under an emulator (qemu-user, whose CPUID describes its own
// virtual CPU while sysfs is the host's) the brand strings differ and only
// the sanity checks run.
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "core/cpu_caches.h"
#include "util.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

START_TEST(parses_sysfs_sizes)
{
    static const struct { const char *s; size_t bytes; } ok[] = {
        { "48K\n", 48u << 10 }, { "2048K", 2048u << 10 }, { "32M\n", 32u << 20 },
        { "1G", (size_t)1 << 30 }, { "65536", 65536 }, { "32768K", 32u << 20 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t b = 0;
        ck_assert_msg(mhsa__parse_cache_size(ok[i].s, &b), "'%s'", ok[i].s);
        ck_assert_uint_eq(b, ok[i].bytes);
    }
    static const char *bad[] = { "", "K", "0K", "12Q", "-4K", "48 K", "99999999999G" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t b = 7;
        ck_assert_msg(!mhsa__parse_cache_size(bad[i], &b), "'%s'", bad[i]);
        ck_assert_uint_eq(b, 7);
    }
    ck_assert(!mhsa__parse_cache_size(NULL, NULL));
}
END_TEST

START_TEST(plausibility_rule)
{
    mhsa_cpu_caches c = { 32u << 10, 512u << 10, 32u << 20, "t" };
    ck_assert(mhsa__cpu_caches_plausible(&c));
    c.l3 = 0;                    // no L3 reported: fine
    ck_assert(mhsa__cpu_caches_plausible(&c));
    c.l3 = 256u << 10;           // an L3 smaller than L2: not
    ck_assert(!mhsa__cpu_caches_plausible(&c));
    c.l3 = 0; c.l1d = 2u << 10;  // below 4 KiB
    ck_assert(!mhsa__cpu_caches_plausible(&c));
    c.l1d = 1u << 20; c.l2 = 512u << 10;   // L2 below L1d
    ck_assert(!mhsa__cpu_caches_plausible(&c));
    c.l1d = 32u << 10; c.l2 = 0; // no L2
    ck_assert(!mhsa__cpu_caches_plausible(&c));
}
END_TEST

START_TEST(detected_sizes_are_sane_and_stable)
{
    const mhsa_cpu_caches *c = mhsa__cpu_caches();
    ck_assert_ptr_eq(c, mhsa__cpu_caches());
    ck_assert(mhsa__cpu_caches_plausible(c));
    ck_assert(strcmp(c->source, "cpuid leaf 4") == 0 ||
              strcmp(c->source, "cpuid leaf 0x8000001d") == 0 ||
              strcmp(c->source, "sysfs") == 0 ||
              strcmp(c->source, "defaults") == 0);
    printf("caches: L1d %zu KiB, L2 %zu KiB, L3 %zu KiB from %s\n",
           c->l1d >> 10, c->l2 >> 10, c->l3 >> 10, c->source);
}
END_TEST

#if defined(__x86_64__)
// Whether CPUID's brand string is the model name of /proc/cpuinfo: false
// under qemu-user (and wherever either cannot be read).
static int cpuid_is_the_host(void)
{
    unsigned r[12];
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000004u) return 0;
    for (unsigned i = 0; i < 3; i++)
        __cpuid(0x80000002u + i, r[4 * i], r[4 * i + 1], r[4 * i + 2],
                r[4 * i + 3]);
    char brand[49];
    memcpy(brand, r, 48);
    brand[48] = 0;
    char *b = brand;
    while (*b == ' ') b++;
    size_t n = strlen(b);
    while (n && b[n - 1] == ' ') b[--n] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[512];
    int same = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ') v++;
        v[strcspn(v, "\n")] = 0;
        same = strcmp(v, b) == 0;
        break;
    }
    fclose(f);
    return same;
}
#endif

START_TEST(cpuid_agrees_with_sysfs)
{
#if defined(__x86_64__)
    mhsa_cpu_caches a, s;
    int have_a = mhsa__cpu_caches_from(MHSA_CACHES_CPUID, &a);
    int have_s = mhsa__cpu_caches_from(MHSA_CACHES_SYSFS, &s);
    if (!have_a || !have_s || !cpuid_is_the_host()) {
        printf("cpuid against sysfs: not compared (cpuid %d, sysfs %d, "
               "emulated CPU %d)\n", have_a, have_s, !cpuid_is_the_host());
        return;
    }
    ck_assert_uint_eq(a.l1d, s.l1d);
    ck_assert_uint_eq(a.l2, s.l2);
    ck_assert_uint_eq(a.l3, s.l3);
#endif
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu_caches");
    TCase *t = tcase_create("caches");
    tcase_add_test(t, parses_sysfs_sizes);
    tcase_add_test(t, plausibility_rule);
    tcase_add_test(t, detected_sizes_are_sane_and_stable);
    tcase_add_test(t, cpuid_agrees_with_sysfs);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return run_suite(suite()); }
