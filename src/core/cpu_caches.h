// cpu_caches.h — the data cache sizes of the CPU the library runs on, read
// once: what the GEMM's block sizes are derived from (as BLIS and oneDNN
// derive theirs), and what mhsa-info prints.
#ifndef MHSA_CORE_CPU_CACHES_H
#define MHSA_CORE_CPU_CACHES_H

#include <stddef.h>

typedef struct mhsa_cpu_caches {
    size_t l1d;          // bytes of level-1 data cache of one core
    size_t l2;           // bytes of level-2 cache of one core
    size_t l3;           // bytes of the level-3 cache one core sits on (0:
                         // none reported)
    const char *source;  // where they came from: "cpuid leaf 4" (Intel),
                         // "cpuid leaf 0x8000001d" (AMD), "sysfs", or
                         // "defaults" (nothing answered, e.g. under qemu)
} mhsa_cpu_caches;

// The sizes, read at the first call (thread-safe) and the same afterwards.
// Order of sources: CPUID where the CPU has the leaf (x86-64), then Linux's
// /sys/devices/system/cpu/cpu0/cache, then defaults (32 KiB, 512 KiB,
// 8 MiB). A source whose sizes are implausible (L1d outside 4 KiB..4 MiB,
// L2 outside 64 KiB..256 MiB or smaller than L1d, L3 smaller than L2) is
// passed over for the next.
const mhsa_cpu_caches *mhsa__cpu_caches(void);

// Parses a sysfs cache size ("48K", "2048K", "32M", "1G", or bytes) into
// *bytes; 0 if s is not one.
int mhsa__parse_cache_size(const char *s, size_t *bytes);

// Whether c passes the plausibility rule above.
int mhsa__cpu_caches_plausible(const mhsa_cpu_caches *c);

// One source alone, for tests: fills *c and returns whether it answered
// plausibly.
typedef enum mhsa_cache_source {
    MHSA_CACHES_CPUID, MHSA_CACHES_SYSFS
} mhsa_cache_source;
int mhsa__cpu_caches_from(mhsa_cache_source src, mhsa_cpu_caches *c);

#endif
