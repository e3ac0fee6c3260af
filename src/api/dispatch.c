// dispatch.c — which kernel table runs: CPU features (core/cpu_features.h),
// MHSA_ISA, select-once.
//
// The tables this build has are kept best-first; the active one is chosen
// once (at the first library call that needs it) from MHSA_ISA, else the
// first table the CPU supports. mhsa_select_isa and MHSA_ISA share one
// validator, so a table this build or CPU lacks is never installed.
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_features.h"
#include "objects.h"

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

const mhsa_kernels *mhsa_kernels_for(mhsa_isa isa)
{
    for (int i = 0; i < N_BUILT; i++)
        if (built_tables[i]->isa == isa && cpu_supports(isa))
            return built_tables[i];
    const mhsa_kernels *s =
        atomic_load_explicit(&stand_in, memory_order_acquire);
    return s && s->isa == isa ? s : NULL;
}

static int is_built(mhsa_isa isa)
{
    for (int i = 0; i < N_BUILT; i++)
        if (built_tables[i]->isa == isa)
            return 1;
    return 0;
}

static const mhsa_kernels *best_table(void)
{
    for (int i = 0; i < N_BUILT; i++)
        if (cpu_supports(built_tables[i]->isa))
            return built_tables[i];
    return &mhsa_kernels_scalar;
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
    return best_table();   // unset, "auto", unknown or unavailable
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

mhsa_status mhsa_select_isa(mhsa_isa isa)
{
    const mhsa_kernels *k;
    if (isa == MHSA_ISA_AUTO) {
        k = best_table();
    } else if (isa < MHSA_ISA_AUTO || isa > MHSA_ISA_LAST) {
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_select_isa: isa = %d is not an mhsa_isa",
                          (int)isa);
    } else if (!(k = mhsa_kernels_for(isa))) {
        return mhsa__fail(MHSA_ERR_UNSUPPORTED,
                          "mhsa_select_isa: isa = %s is not available (%s)",
                          mhsa_isa_name(isa),
                          is_built(isa) ? "this CPU lacks it"
                                        : "not in this build");
    }
    atomic_store_explicit(&active, k, memory_order_release);
    return MHSA_OK;
}

mhsa_isa mhsa_active_isa(void) { return mhsa__kernels()->isa; }
