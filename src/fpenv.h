// fpenv.h — the floating-point control state every library thread computes
// under, and the restore of the caller's.
//
// Results must not depend on the caller's rounding mode or flush-to-zero
// (FTZ/DAZ) bits, nor on which pool thread computes what: OpenMP workers do
// not inherit the calling thread's control register, so a caller with FTZ
// set would otherwise get different bits on 1 and 2 threads. Each public
// compute call, and each thread inside each parallel region, switches to
// the default state (round to nearest, no FTZ/DAZ, exceptions masked) and
// restores what it found before returning.
#ifndef MHSA_FPENV_H
#define MHSA_FPENV_H

#include <stdint.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
typedef struct mhsa_fpstate { unsigned int csr; } mhsa_fpstate;
enum { MHSA_DEFAULT_MXCSR = 0x1F80 };   // all masked, nearest, no FTZ/DAZ

static inline mhsa_fpstate mhsa__fp_enter(void)
{
    mhsa_fpstate s = { _mm_getcsr() };
    if (s.csr != MHSA_DEFAULT_MXCSR)
        _mm_setcsr(MHSA_DEFAULT_MXCSR);
    return s;
}

static inline void mhsa__fp_leave(mhsa_fpstate s)
{
    if (s.csr != MHSA_DEFAULT_MXCSR)
        _mm_setcsr(s.csr);
}
#elif defined(__aarch64__)
typedef struct mhsa_fpstate { uint64_t fpcr; } mhsa_fpstate;

static inline mhsa_fpstate mhsa__fp_enter(void)
{
    mhsa_fpstate s;
    __asm__ volatile("mrs %0, fpcr" : "=r"(s.fpcr));
    if (s.fpcr != 0)   // 0: round to nearest, no flush, no traps
        __asm__ volatile("msr fpcr, %0" : : "r"((uint64_t)0));
    return s;
}

static inline void mhsa__fp_leave(mhsa_fpstate s)
{
    if (s.fpcr != 0)
        __asm__ volatile("msr fpcr, %0" : : "r"(s.fpcr));
}
#else
typedef struct mhsa_fpstate { int unused; } mhsa_fpstate;
static inline mhsa_fpstate mhsa__fp_enter(void)
{
    mhsa_fpstate s = { 0 };
    return s;
}
static inline void mhsa__fp_leave(mhsa_fpstate s) { (void)s; }
#endif

#endif
