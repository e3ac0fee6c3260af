// cpu_caches.c — data cache sizes from CPUID, sysfs or defaults
// (cpu_caches.h).
#include "cpu_caches.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

int mhsa__parse_cache_size(const char *s, size_t *bytes)
{
    if (!s) return 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    unsigned long long mul = 1;
    switch (*end) {
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    default: break;
    }
    while (*end == '\n' || *end == ' ') end++;
    if (*end || v == 0 || v > (1ull << 40) / mul) return 0;
    *bytes = (size_t)(v * mul);
    return 1;
}

int mhsa__cpu_caches_plausible(const mhsa_cpu_caches *c)
{
    return c->l1d >= ((size_t)4 << 10) && c->l1d <= ((size_t)4 << 20) &&
           c->l2 >= ((size_t)64 << 10) && c->l2 <= ((size_t)256 << 20) &&
           c->l2 >= c->l1d && (c->l3 == 0 || c->l3 >= c->l2);
}

#if defined(__x86_64__) || defined(__i386__)
// Walks the deterministic cache parameters of leaf (4 on Intel,
// 0x8000001d on AMD): each subleaf describes one cache, EAX[4:0] its type
// (0: no more, 1: data, 3: unified), EAX[7:5] its level; its size is
// ways * partitions * line size * sets (EBX[31:22], EBX[21:12], EBX[11:0]
// and ECX, each stored minus one).
static int from_cpuid_leaf(unsigned leaf, mhsa_cpu_caches *c)
{
    memset(c, 0, sizeof *c);
    for (unsigned i = 0; i < 16; i++) {
        unsigned a, b, cx, d;
        __cpuid_count(leaf, i, a, b, cx, d);
        unsigned type = a & 31, level = (a >> 5) & 7;
        if (type == 0) break;
        if (type != 1 && type != 3) continue;   // instruction caches
        size_t size = (size_t)((b >> 22) + 1) * (((b >> 12) & 1023) + 1) *
                      ((b & 4095) + 1) * ((size_t)cx + 1);
        if (level == 1) c->l1d = size;
        if (level == 2) c->l2 = size;
        if (level == 3) c->l3 = size;
    }
    c->source = leaf == 4 ? "cpuid leaf 4" : "cpuid leaf 0x8000001d";
    return mhsa__cpu_caches_plausible(c);
}

static int from_cpuid(mhsa_cpu_caches *c)
{
    unsigned a, b, cx, d;
    if (!__get_cpuid(0, &a, &b, &cx, &d)) return 0;
    unsigned max_leaf = a;
    char vendor[13];
    memcpy(vendor, &b, 4); memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &cx, 4); vendor[12] = 0;
    if (strcmp(vendor, "GenuineIntel") == 0)
        return max_leaf >= 4 && from_cpuid_leaf(4, c);
    if (strcmp(vendor, "AuthenticAMD") == 0 ||
        strcmp(vendor, "HygonGenuine") == 0) {
        // The leaf exists when CPUID 0x80000001 ECX bit 22 (TopologyExtensions)
        // is set.
        unsigned max_ext = __get_cpuid_max(0x80000000u, NULL);
        if (max_ext < 0x8000001du) return 0;
        __cpuid(0x80000001u, a, b, cx, d);
        return ((cx >> 22) & 1) && from_cpuid_leaf(0x8000001du, c);
    }
    return 0;
}
#else
static int from_cpuid(mhsa_cpu_caches *c) { (void)c; return 0; }
#endif

// Reads one line of a sysfs file into buf; 0 if it cannot.
static int read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    return ok;
}

static int from_sysfs(mhsa_cpu_caches *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < 16; i++) {
        char path[96], type[32], level[8], size[32];
        const char *base = "/sys/devices/system/cpu/cpu0/cache/index";
        snprintf(path, sizeof path, "%s%d/type", base, i);
        if (!read_line(path, type, sizeof type)) break;
        snprintf(path, sizeof path, "%s%d/level", base, i);
        if (!read_line(path, level, sizeof level)) continue;
        snprintf(path, sizeof path, "%s%d/size", base, i);
        size_t bytes;
        if (!read_line(path, size, sizeof size) ||
            !mhsa__parse_cache_size(size, &bytes))
            continue;
        if (strncmp(type, "Data", 4) && strncmp(type, "Unified", 7))
            continue;
        if (level[0] == '1') c->l1d = bytes;
        if (level[0] == '2') c->l2 = bytes;
        if (level[0] == '3') c->l3 = bytes;
    }
    c->source = "sysfs";
    return mhsa__cpu_caches_plausible(c);
}

int mhsa__cpu_caches_from(mhsa_cache_source src, mhsa_cpu_caches *c)
{
    return src == MHSA_CACHES_CPUID ? from_cpuid(c) : from_sysfs(c);
}

static mhsa_cpu_caches caches;
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

static void read_caches(void)
{
    if (from_cpuid(&caches) || from_sysfs(&caches)) return;
    caches = (mhsa_cpu_caches){ (size_t)32 << 10, (size_t)512 << 10,
                                (size_t)8 << 20, "defaults" };
}

const mhsa_cpu_caches *mhsa__cpu_caches(void)
{
    pthread_once(&caches_once, read_caches);
    return &caches;
}
