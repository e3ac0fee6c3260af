// fpenv.h — the floating-point control state every library thread computes
// under, and the restore of the caller's.
//
// Results must not depend on the caller's rounding mode or flush-to-zero
// bits, nor on which pool thread computes what: OpenMP workers keep the
// control register they were born with, not the calling thread's current
// one, so a caller with FTZ set would otherwise get different bits on 1 and
// 2 threads.
//
// The library's state: round to nearest, exceptions masked, and subnormals
// are zero (shared API.md, "Subnormals are zero"): x86-64 sets FTZ (a
// subnormal result is written as a zero of its sign) and DAZ (a subnormal
// operand is read as a zero of its sign); AArch64 sets FPCR.FZ, which does
// both for fp32. Intel cores take a microcode assist for every subnormal
// operand or result otherwise: a forward over subnormal inputs ran 30-150x
// slower on an Emerald Rapids Xeon. What the modes leave alone is said in
// kernels.h (the F16 conversions, which still make and read F16
// subnormals; the integer BF16 conversions).
//
// Two pairs:
//  - mhsa__fp_enter / mhsa__fp_leave around each public compute call, in
//    the calling thread: switch to the library's state, restore the
//    caller's.
//  - mhsa__fp_enter_team / mhsa__fp_leave_team at the top and bottom of
//    every parallel region, in each thread of the team. A pool thread
//    restores what it found, with one exception: a thread that libgomp
//    created inside a library call was born with the library's state (a
//    new thread copies its creator's), and it gets the calling thread's
//    state instead, so the application's own OpenMP regions later find
//    its threads as if it had created them itself. The master thread is
//    already in the library's state (its public call switched it) and
//    stays there until its call returns.
#ifndef MHSA_FPENV_H
#define MHSA_FPENV_H

#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
typedef uint32_t mhsa_fpword;
// 0x1F80 (every exception masked, round to nearest) | FTZ 0x8000 | DAZ 0x40.
#define MHSA_LIBRARY_FPWORD ((mhsa_fpword)0x9FC0)
#define MHSA_DEFAULT_FPWORD ((mhsa_fpword)0x1F80)
// MXCSR's sticky exception flags (IE DE ZE OE UE PE, bits 0-5): status, not
// control. A thread is "in the library's state" whatever they hold: the
// flags the master raised by computing (every inexact result sets PE) are
// copied into a pool thread that libgomp creates after that.
#define MHSA_FPWORD_FLAGS ((mhsa_fpword)0x3F)
static inline mhsa_fpword mhsa__fp_get(void) { return _mm_getcsr(); }
static inline void mhsa__fp_set(mhsa_fpword w) { _mm_setcsr(w); }
#elif defined(__aarch64__)
typedef uint64_t mhsa_fpword;
// FZ (bit 24); round to nearest (RMode 0), no traps, FZ16/AH/FIZ clear: the
// F16 conversions keep F16 subnormals (FZ governs fp32 and fp64 only).
#define MHSA_LIBRARY_FPWORD ((mhsa_fpword)1 << 24)
#define MHSA_DEFAULT_FPWORD ((mhsa_fpword)0)
#define MHSA_FPWORD_FLAGS ((mhsa_fpword)0)   // FPCR holds no status (FPSR does)
static inline mhsa_fpword mhsa__fp_get(void)
{
    mhsa_fpword w;
    __asm__ volatile("mrs %0, fpcr" : "=r"(w));
    return w;
}
static inline void mhsa__fp_set(mhsa_fpword w)
{
    __asm__ volatile("msr fpcr, %0" : : "r"(w));
}
#else
typedef int mhsa_fpword;   // no control state the library changes
#define MHSA_LIBRARY_FPWORD 0
#define MHSA_DEFAULT_FPWORD 0
#define MHSA_FPWORD_FLAGS 0
static inline mhsa_fpword mhsa__fp_get(void) { return 0; }
static inline void mhsa__fp_set(mhsa_fpword w) { (void)w; }
#endif

typedef struct mhsa_fpstate { mhsa_fpword word; } mhsa_fpstate;

// The state of the last calling thread as its outermost public call found
// it (fpenv.c): what a pool thread born inside a call gets when its region
// ends. Two application threads calling at once with different states may
// see each other's here; each still gets its own state back in its own
// thread. mhsa__fp_depth counts the public calls a thread is inside (the
// GPT's calls mhsa_forward), so only the outermost one publishes.
extern _Atomic mhsa_fpword mhsa__fp_caller_word;
extern _Thread_local int mhsa__fp_depth;

static inline mhsa_fpstate mhsa__fp_enter(void)
{
    mhsa_fpstate s = { mhsa__fp_get() };
    if (mhsa__fp_depth++ == 0)
        atomic_store_explicit(&mhsa__fp_caller_word, s.word,
                              memory_order_relaxed);
    if (s.word != MHSA_LIBRARY_FPWORD)
        mhsa__fp_set(MHSA_LIBRARY_FPWORD);
    return s;
}

static inline void mhsa__fp_leave(mhsa_fpstate s)
{
    mhsa__fp_depth--;
    if (s.word != MHSA_LIBRARY_FPWORD)
        mhsa__fp_set(s.word);
}

// In a public call that does nothing else: returns the status of `call`
// (an expression), computed between mhsa__fp_enter and mhsa__fp_leave.
#define MHSA__FP_RETURN(call)                                              \
    do {                                                                   \
        mhsa_fpstate fp_ = mhsa__fp_enter();                               \
        mhsa_status st_ = (call);                                          \
        mhsa__fp_leave(fp_);                                               \
        return st_;                                                        \
    } while (0)

static inline mhsa_fpstate mhsa__fp_enter_team(void)
{
    mhsa_fpstate s = { mhsa__fp_get() };
    if (s.word != MHSA_LIBRARY_FPWORD)
        mhsa__fp_set(MHSA_LIBRARY_FPWORD);
    return s;
}

static inline void mhsa__fp_leave_team(mhsa_fpstate s)
{
    if ((s.word & ~MHSA_FPWORD_FLAGS) != MHSA_LIBRARY_FPWORD)
        mhsa__fp_set(s.word);
    else if (omp_get_thread_num() != 0)   // born inside a library call
        mhsa__fp_set(atomic_load_explicit(&mhsa__fp_caller_word,
                                          memory_order_relaxed));
}

#endif
