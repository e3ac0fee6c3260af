// test_dispatch.c — status strings, version, ISA names and selection.
//
// Runs without the emulated ISAs of the other tests (run_suite_native), so
// forcing an ISA this CPU lacks fails as it does for a user; the stand-in
// hook those tests use is checked on its own below. That a forced AVX-512
// or AVX2 never reaches the CPU is also checked for real by .ci/run, under
// qemu-x86_64 -cpu Haswell (AVX2, no AVX-512) and -cpu Nehalem (no AVX).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_features.h"
#include "kernels/kernels.h"
#include "mhsa.h"
#include "util.h"

START_TEST(status_strings_are_static_and_total)
{
    ck_assert_str_eq(mhsa_status_str(MHSA_OK), "MHSA_OK");
    ck_assert_str_eq(mhsa_status_str(MHSA_ERR_FORMAT), "MHSA_ERR_FORMAT");
    ck_assert_ptr_nonnull(mhsa_status_str((mhsa_status)99));
    ck_assert_ptr_nonnull(mhsa_status_str((mhsa_status)-1));
}
END_TEST

START_TEST(version_is_semver)
{
    int a, b, c;
    ck_assert_int_eq(sscanf(mhsa_version(), "%d.%d.%d", &a, &b, &c), 3);
}
END_TEST

START_TEST(isa_names)
{
    ck_assert_str_eq(mhsa_isa_name(MHSA_ISA_AUTO), "auto");
    ck_assert_str_eq(mhsa_isa_name(MHSA_ISA_SCALAR), "scalar");
    ck_assert_str_eq(mhsa_isa_name(MHSA_ISA_AVX2), "avx2");
    ck_assert_str_eq(mhsa_isa_name(MHSA_ISA_NEON), "neon");
    ck_assert_str_eq(mhsa_isa_name(MHSA_ISA_AVX512), "avx512");
    ck_assert_ptr_nonnull(mhsa_isa_name((mhsa_isa)42));
}
END_TEST

START_TEST(last_error_starts_empty)
{
    ck_assert_str_eq(mhsa_last_error(), "");
}
END_TEST

START_TEST(active_isa_is_never_auto)
{
    mhsa_isa a = mhsa_active_isa();
    ck_assert_int_ne(a, MHSA_ISA_AUTO);
    ck_assert_ptr_nonnull(mhsa_kernels_for(a));
    ck_assert_str_eq(mhsa__kernels()->name, mhsa_isa_name(a));
}
END_TEST

// Forcing each ISA: available ones become active, missing ones fail with
// UNSUPPORTED, leave the active ISA unchanged and name the ISA.
START_TEST(select_each_isa)
{
    mhsa_isa isa = all_isas[_i];
    mhsa_isa before = mhsa_active_isa();
    mhsa_status st = mhsa_select_isa(isa);
    if (mhsa_kernels_for(isa)) {
        ck_assert_int_eq(st, MHSA_OK);
        ck_assert_int_eq(mhsa_active_isa(), isa);
    } else {
        ck_assert_int_eq(st, MHSA_ERR_UNSUPPORTED);
        ck_assert_int_eq(mhsa_active_isa(), before);
        ck_assert_ptr_nonnull(strstr(mhsa_last_error(), mhsa_isa_name(isa)));
    }
    ck_assert_int_eq(mhsa_select_isa(MHSA_ISA_AUTO), MHSA_OK);
    ck_assert_int_ne(mhsa_active_isa(), MHSA_ISA_AUTO);
}
END_TEST

// An ISA built but missing from the CPU (AVX-512 on most x86 machines
// today) says so; one not built says that.
START_TEST(forcing_a_missing_isa_says_why)
{
    for (int i = 0; i < N_ISAS; i++) {
        mhsa_isa isa = all_isas[i];
        if (mhsa_kernels_for(isa))
            continue;
        mhsa_isa before = mhsa_active_isa();
        ck_assert_int_eq(mhsa_select_isa(isa), MHSA_ERR_UNSUPPORTED);
        ck_assert_int_eq(mhsa_active_isa(), before);
        const char *e = mhsa_last_error();
        int built = 0;
#if MHSA_HAVE_AVX512
        built |= isa == MHSA_ISA_AVX512;
#endif
#if MHSA_HAVE_AVX2
        built |= isa == MHSA_ISA_AVX2;
#endif
        ck_assert_msg(strstr(e, mhsa_isa_name(isa)) &&
                      strstr(e, built ? "this CPU lacks it"
                                      : "not in this build"),
                      "message for %s: %s", mhsa_isa_name(isa), e);
        printf("forcing %s here: %s\n", mhsa_isa_name(isa), e);
    }
}
END_TEST

START_TEST(select_bad_enum)
{
    mhsa_isa before = mhsa_active_isa();
    ck_assert_int_eq(mhsa_select_isa((mhsa_isa)17), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_active_isa(), before);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "17"));
}
END_TEST

// MHSA_ISA is read at first use: each case runs in its own forked child
// (check's fork mode), so setting the variable here is seen fresh.
START_TEST(env_scalar_is_honoured)
{
    setenv("MHSA_ISA", "scalar", 1);
    ck_assert_int_eq(mhsa_active_isa(), MHSA_ISA_SCALAR);
}
END_TEST

START_TEST(env_unknown_falls_back_to_auto)
{
    setenv("MHSA_ISA", "sse9", 1);
    mhsa_isa got = mhsa_active_isa();
    unsetenv("MHSA_ISA");
    ck_assert_int_ne(got, MHSA_ISA_AUTO);
    ck_assert_ptr_eq(mhsa_kernels_for(got), mhsa__kernels());
    // auto takes the first supported table of the best-first list
    const mhsa_kernels *best = mhsa_kernels_for(MHSA_ISA_AVX512);
    if (!best)
        best = mhsa_kernels_for(MHSA_ISA_AVX2);
    if (!best)
        best = mhsa_kernels_for(MHSA_ISA_NEON);
    if (!best)
        best = mhsa_kernels_for(MHSA_ISA_SCALAR);
    ck_assert_int_eq(got, best->isa);
}
END_TEST

START_TEST(env_unavailable_falls_back_to_auto)
{
    // Whichever of avx2/neon this build lacks is unavailable here.
    setenv("MHSA_ISA", mhsa_kernels_for(MHSA_ISA_NEON) ? "avx2" : "neon", 1);
    mhsa_isa got = mhsa_active_isa();
    ck_assert_ptr_nonnull(mhsa_kernels_for(got));
}
END_TEST

// MHSA_ISA=avx512 where the CPU lacks it: auto's choice, never the table.
START_TEST(env_avx512_without_it_falls_back)
{
    int have = mhsa_kernels_for(MHSA_ISA_AVX512) != NULL;
    setenv("MHSA_ISA", "avx512", 1);
    mhsa_isa got = mhsa_active_isa();
    unsetenv("MHSA_ISA");
    if (have) {
        ck_assert_int_eq(got, MHSA_ISA_AVX512);
    } else {
        ck_assert_int_ne(got, MHSA_ISA_AVX512);
        ck_assert_ptr_nonnull(mhsa_kernels_for(got));
    }
}
END_TEST

// The test-only stand-in (what run_suite installs for the other tests):
// it is what mhsa_kernels_for, mhsa_select_isa and MHSA_ISA give for its
// ISA, auto never picks it, and removing it makes the ISA missing again.
static const mhsa_kernels *stand_in_or_skip(void)
{
    const mhsa_kernels *em = emulated_table(MHSA_ISA_AVX512);
    if (!em || mhsa_kernels_for(MHSA_ISA_AVX512) ||
        !mhsa_kernels_for(MHSA_ISA_AVX2)) {
        printf("skip: stand-in: no emulated avx512 in this build, or the "
               "CPU has AVX-512 or lacks AVX2\n");
        return NULL;
    }
    return em;
}

START_TEST(stand_in_hook)
{
    const mhsa_kernels *em = stand_in_or_skip();
    if (!em)
        return;
    mhsa__set_stand_in(em);
    ck_assert_ptr_eq(mhsa_kernels_for(MHSA_ISA_AVX512), em);
    ck_assert_int_eq(mhsa_select_isa(MHSA_ISA_AUTO), MHSA_OK);
    ck_assert_int_ne(mhsa_active_isa(), MHSA_ISA_AVX512);
    ck_assert_int_eq(mhsa_select_isa(MHSA_ISA_AVX512), MHSA_OK);
    ck_assert_ptr_eq(mhsa__kernels(), em);
    ck_assert_str_eq(em->name, "avx512");
    ck_assert_int_eq(mhsa_select_isa(MHSA_ISA_AUTO), MHSA_OK);
    mhsa__set_stand_in(NULL);
    ck_assert_ptr_null(mhsa_kernels_for(MHSA_ISA_AVX512));
    ck_assert_int_eq(mhsa_select_isa(MHSA_ISA_AVX512),
                     MHSA_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(env_picks_the_stand_in)
{
    const mhsa_kernels *em = stand_in_or_skip();
    if (!em)
        return;
    mhsa__set_stand_in(em);
    setenv("MHSA_ISA", "avx512", 1);
    const mhsa_kernels *got = mhsa__kernels();
    unsetenv("MHSA_ISA");
    mhsa_select_isa(MHSA_ISA_AUTO);
    mhsa__set_stand_in(NULL);
    ck_assert_ptr_eq(got, em);
}
END_TEST

// The NEON table's quantized products: the SDOT set exactly where the
// CPU has dotprod (HWCAP_ASIMDDP), else the plain-NEON set the table holds,
// so a CPU without it never runs SDOT. Prints the choice, which
// .ci/test-aarch64.sh checks under a CPU with dotprod and one without.
START_TEST(neon_quant_set_follows_dotprod)
{
#if MHSA_HAVE_NEON
    const mhsa_kernels *k = mhsa_kernels_for(MHSA_ISA_NEON);
    ck_assert_ptr_nonnull(k);
    const mhsa_qkernels *want = mhsa__cpu_features()->neon_dotprod
                                    ? &mhsa_qkernels_neon_dotprod
                                    : mhsa_kernels_neon.q;
    ck_assert_ptr_eq(k->q, want);
    ck_assert_ptr_ne(mhsa_kernels_neon.q, &mhsa_qkernels_neon_dotprod);
    printf("neon quantized products: %s\n", k->q->name);
#endif
}
END_TEST

int main(void)
{
    unsetenv("MHSA_ISA");
    Suite *s = suite_create("dispatch");
    TCase *tc = tcase_create("dispatch");
    tcase_add_test(tc, status_strings_are_static_and_total);
    tcase_add_test(tc, version_is_semver);
    tcase_add_test(tc, isa_names);
    tcase_add_test(tc, last_error_starts_empty);
    tcase_add_test(tc, active_isa_is_never_auto);
    tcase_add_loop_test(tc, select_each_isa, 0, N_ISAS);
    tcase_add_test(tc, forcing_a_missing_isa_says_why);
    tcase_add_test(tc, select_bad_enum);
    tcase_add_test(tc, neon_quant_set_follows_dotprod);
    // The MHSA_ISA cases need a fresh process each (fork mode, the default).
    const char *fork_env = getenv("CK_FORK");
    if (!fork_env || strcmp(fork_env, "no") != 0) {
        tcase_add_test(tc, env_scalar_is_honoured);
        tcase_add_test(tc, env_unknown_falls_back_to_auto);
        tcase_add_test(tc, env_unavailable_falls_back_to_auto);
        tcase_add_test(tc, env_avx512_without_it_falls_back);
        tcase_add_test(tc, stand_in_hook);
        tcase_add_test(tc, env_picks_the_stand_in);
    }
    suite_add_tcase(s, tc);
    return run_suite_native(s);
}
