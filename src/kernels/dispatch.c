// dispatch.c — which kernel table runs: CPU features (core/cpu_features.h),
// MHSA_ISA, select-once. The kernels layer's own choice, so that every
// layer above it (the GEMM drivers, attention, the API) asks here; the
// public mhsa_select_isa (src/api/dispatch.c) validates and installs
// through mhsa__set_active.
//
// The tables this build has are kept best-first; the active one is chosen
// once (at the first library call that needs it) from MHSA_ISA, else the
// first table the CPU supports. mhsa_select_isa and MHSA_ISA share one
// validator (mhsa_kernels_for), so a table this build or CPU lacks is
// never installed.
//
// GEMM block sizes: what dispatch hands out are copies of the built tables
// whose blocking (kc, mc, nc) is derived once from this CPU's data caches
// (core/cpu_caches.h) by the rule in kernels/blocking.c, so each CPU gets
// blocks that fit its caches. MHSA_BLOCKING changes that, read once:
//   unset or "auto"   the rule (the default);
//   "table"           each table's fixed numbers (src/<isa>/table.c): the
//                     same bits on every machine for a given ISA, since C's
//                     bits depend on kc (each element sums its K blocks in
//                     order), e.g. to compare outputs between machines;
//   "KC,MC,NC"        these numbers for every table (mc and nc rounded up
//                     to the tile), for tuning runs (bench/tune-gemm.sh).
// Anything else counts as unset. Within one process the choice never
// changes, so results stay bitwise identical across thread counts.
// The test-only stand-in (below) keeps its own table's numbers.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_caches.h"
#include "core/cpu_features.h"
#include "kernels/blocking.h"
#include "kernels/kernels.h"

// Best first; scalar last, always there.
static const mhsa_kernels *const built_tables[] = {
#if MHSA_HAVE_AVX512
    &mhsa_kernels_avx512,
#endif
#if MHSA_HAVE_AVX2
    &mhsa_kernels_avx2,
#endif
#if MHSA_HAVE_NEON
    &mhsa_kernels_neon,   // NEON is baseline on AArch64
#endif
    &mhsa_kernels_scalar,
};
enum { N_BUILT = sizeof built_tables / sizeof built_tables[0] };

// The tables as dispatch hands them out: built_tables[i] with the blocking
// MHSA_BLOCKING asks for (see the top of this file).
static mhsa_kernels tuned[N_BUILT];
static const char *blocking_source;
static pthread_once_t tuned_once = PTHREAD_ONCE_INIT;

static void tune_tables(void)
{
    const char *e = getenv("MHSA_BLOCKING");
    unsigned long kc, mc, nc;
    char tail;
    int fixed = e && strcmp(e, "table") == 0;
    int given = e && sscanf(e, "%lu,%lu,%lu%c", &kc, &mc, &nc, &tail) == 3 &&
                kc > 0 && kc <= 65536 && mc > 0 && mc <= 65536 && nc > 0 &&
                nc <= 65536;
    blocking_source = fixed ? "table (MHSA_BLOCKING=table)"
                      : given ? "MHSA_BLOCKING"
                              : "cpu caches (kernels/blocking.c)";
    for (int i = 0; i < N_BUILT; i++) {
        mhsa_kernels *k = &tuned[i];
        *k = *built_tables[i];
        if (given)
            k->blocking = mhsa__blocking_fit(
                k->mr, k->nr, (mhsa_gemm_blocking){ kc, mc, nc });
        else if (!fixed)
            k->blocking = mhsa__blocking_for_caches(k->mr, k->nr,
                                                    mhsa__cpu_caches());
#if MHSA_HAVE_AVX512
        // The AVX-512 table's quantized products need AVX512_VNNI, which
        // Skylake-X lacks: there the AVX2 table's set (or scalar) runs.
        if (k->isa == MHSA_ISA_AVX512 && !mhsa__cpu_features()->avx512_vnni)
#if MHSA_HAVE_AVX2
            k->q = mhsa_kernels_avx2.q;
#else
            k->q = &mhsa_qkernels_scalar;
#endif
#endif
#if MHSA_HAVE_NEON
        // The NEON table's quantized products are the plain-NEON set;
        // CPUs with SDOT get the dotprod one (the same bits: one SDOT
        // in place of SMULL, SMLAL2 and SADALP per 16 products).
        if (k->isa == MHSA_ISA_NEON && mhsa__cpu_features()->neon_dotprod)
            k->q = &mhsa_qkernels_neon_dotprod;
#endif
    }
}

static const mhsa_kernels *tuned_table(int i)
{
    pthread_once(&tuned_once, tune_tables);
    return &tuned[i];
}

const char *mhsa__blocking_source(void)
{
    pthread_once(&tuned_once, tune_tables);
    return blocking_source;
}

const mhsa_kernels *mhsa__fixed_table(mhsa_isa isa)
{
    for (int i = 0; i < N_BUILT; i++)
        if (built_tables[i]->isa == isa)
            return built_tables[i];
    return NULL;
}

static int cpu_supports(mhsa_isa isa)
{
    switch (isa) {
    case MHSA_ISA_SCALAR: return 1;
#if MHSA_HAVE_AVX2
    case MHSA_ISA_AVX2:   return mhsa__cpu_features()->avx2_fma_f16c;
#endif
#if MHSA_HAVE_NEON
    case MHSA_ISA_NEON:   return 1;
#endif
#if MHSA_HAVE_AVX512
    case MHSA_ISA_AVX512: return mhsa__cpu_features()->avx512;
#endif
    default:              return 0;
    }
}

// Test-only: a table standing in for an ISA this build or CPU lacks (the
// AVX-512 kernels built against SIMDe, installed by tests/util.c). It is
// what mhsa_kernels_for, mhsa_select_isa and MHSA_ISA give for that ISA,
// but auto never picks it. The library itself never sets one.
static _Atomic(const mhsa_kernels *) stand_in;

void mhsa__set_stand_in(const mhsa_kernels *k)
{
    atomic_store_explicit(&stand_in, k, memory_order_release);
}

const mhsa_kernels *mhsa__stand_in(void)
{
    return atomic_load_explicit(&stand_in, memory_order_acquire);
}

const mhsa_kernels *mhsa_kernels_for(mhsa_isa isa)
{
    for (int i = 0; i < N_BUILT; i++)
        if (built_tables[i]->isa == isa && cpu_supports(isa))
            return tuned_table(i);
    const mhsa_kernels *s =
        atomic_load_explicit(&stand_in, memory_order_acquire);
    return s && s->isa == isa ? s : NULL;
}

const mhsa_kernels *mhsa__best_table(void)
{
    for (int i = 0; i < N_BUILT; i++)
        if (cpu_supports(built_tables[i]->isa))
            return tuned_table(i);
    return tuned_table(N_BUILT - 1);   // scalar
}

static _Atomic(const mhsa_kernels *) active;

static const mhsa_kernels *table_from_env(void)
{
    const char *e = getenv("MHSA_ISA");
    if (e) {
        for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
            if (strcmp(e, mhsa_isa_name(i)) == 0) {
                const mhsa_kernels *k = mhsa_kernels_for(i);
                if (k)
                    return k;
            }
        }
    }
    return mhsa__best_table();   // unset, "auto", unknown or unavailable
}

const mhsa_kernels *mhsa__kernels(void)
{
    const mhsa_kernels *k = atomic_load_explicit(&active, memory_order_acquire);
    if (k)
        return k;
    // First use: several threads may race here; all compute the same table
    // and the first CAS wins, so the choice is made exactly once.
    const mhsa_kernels *want = table_from_env();
    const mhsa_kernels *expected = NULL;
    if (atomic_compare_exchange_strong(&active, &expected, want))
        return want;
    return expected;
}

const char *mhsa_isa_name(mhsa_isa isa)
{
    switch (isa) {
    case MHSA_ISA_AUTO:   return "auto";
    case MHSA_ISA_SCALAR: return "scalar";
    case MHSA_ISA_AVX2:   return "avx2";
    case MHSA_ISA_NEON:   return "neon";
    case MHSA_ISA_AVX512: return "avx512";
    }
    return "unknown";
}

void mhsa__set_active(const mhsa_kernels *k)
{
    atomic_store_explicit(&active, k, memory_order_release);
}
