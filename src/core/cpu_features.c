// cpu_features.c — CPUID and XGETBV, asked directly (cpu_features.h).
// __builtin_cpu_supports skipped the OS check in older GCC (bug 85100),
// and it knows neither AMX nor the XCR0 bits each feature needs.
// syscall() (the arch_prctl of the AMX permission) is not POSIX.
#define _GNU_SOURCE 1
#include "cpu_features.h"

#include <pthread.h>
#include <string.h>
#if defined(__linux__) && (defined(__x86_64__) || defined(_M_X64))
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__linux__) && defined(__aarch64__)
#include <sys/auxv.h>
#endif

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>

static unsigned long long xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static void read_x86(mhsa_cpu_features *f)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return;
    // The vendor string is EBX, EDX, ECX: "GenuineIntel", "AuthenticAMD".
    f->vendor = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu
                    ? MHSA_CPU_INTEL
                : b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u
                    ? MHSA_CPU_AMD
                    : MHSA_CPU_OTHER;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    unsigned fam = (a >> 8) & 0xf, mod = (a >> 4) & 0xf;
    if (fam == 0xf)
        fam += (a >> 20) & 0xff;
    if (fam == 0x6 || fam >= 0xf)
        mod += ((a >> 16) & 0xf) << 4;
    f->family = (int)fam;
    f->model = (int)mod;
    const unsigned fma = 1u << 12, osxsave = 1u << 27, avx = 1u << 28,
                   f16c = 1u << 29;
    const unsigned need = fma | osxsave | avx | f16c;
    if ((c & need) != need || __get_cpuid_max(0, NULL) < 7)
        return;
    // XCR0: 1, 2 SSE and AVX state; 5, 6, 7 opmask and both ZMM halves;
    // 17, 18 AMX tile configuration and tile data.
    unsigned long long x = xcr0();
    __cpuid_count(7, 0, a, b, c, d);
    unsigned b7 = b, c7 = c, d7 = d, a71 = 0;
    if (a >= 1) {   // CPUID.7.0:EAX: the largest subleaf of leaf 7
        __cpuid_count(7, 1, a, b, c, d);
        a71 = a;
    }
    f->avx2_fma_f16c = (x & 6) == 6 && ((b7 >> 5) & 1);
    const unsigned f512 = 1u << 16, dq = 1u << 17, bw = 1u << 30,
                   vl = 1u << 31;
    f->avx512 = f->avx2_fma_f16c && (x & 0xe6) == 0xe6 &&
                (b7 & (f512 | dq | bw | vl)) == (f512 | dq | bw | vl);
    f->avx512_vnni = f->avx512 && ((c7 >> 11) & 1);    // CPUID.7.0:ECX[11]
    f->avx512_bf16 = f->avx512 && ((a71 >> 5) & 1);    // CPUID.7.1:EAX[5]
    f->avx512_fp16 = f->avx512 && ((d7 >> 23) & 1);    // CPUID.7.0:EDX[23]
    const unsigned amx_bf16 = 1u << 22, amx_tile = 1u << 24;
    f->amx_bf16 = (d7 & (amx_bf16 | amx_tile)) == (amx_bf16 | amx_tile) &&
                  ((x >> 17) & 3) == 3;
}
#endif

static mhsa_cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void read_features(void)
{
    memset(&features, 0, sizeof features);
#if defined(__x86_64__) || defined(_M_X64)
    read_x86(&features);
#endif
#if defined(__aarch64__)
    features.neon = 1;
#if defined(__linux__)
    // Linux sets HWCAP_ASIMDDP (bit 20 of AT_HWCAP, asm/hwcap.h) when the
    // CPUs have SDOT / UDOT. Other systems: never set.
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1ul << 20)
#endif
    features.neon_dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
#endif
}

const mhsa_cpu_features *mhsa__cpu_features(void)
{
    pthread_once(&features_once, read_features);
    return &features;
}

// ---- AMX tile data permission ---------------------------------------------

static int amx_ok;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void ask_amx(void)
{
#if defined(__linux__) && (defined(__x86_64__) || defined(_M_X64))
    // arch/x86/include/uapi/asm/prctl.h: ARCH_GET_XCOMP_PERM 0x1022,
    // ARCH_REQ_XCOMP_PERM 0x1023; XFEATURE_XTILEDATA is state component 18.
    enum { GET_PERM = 0x1022, REQ_PERM = 0x1023, XTILEDATA = 18 };
    if (!mhsa__cpu_features()->amx_bf16)
        return;
    if (syscall(SYS_arch_prctl, REQ_PERM, XTILEDATA) != 0)
        return;
    unsigned long perm = 0;
    if (syscall(SYS_arch_prctl, GET_PERM, &perm) != 0)
        return;
    amx_ok = (int)((perm >> XTILEDATA) & 1);
#endif
}

int mhsa__amx_permitted(void)
{
    pthread_once(&amx_once, ask_amx);
    return amx_ok;
}
