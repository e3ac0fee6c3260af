// util.c — shared test helpers (see util.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const mhsa_isa all_isas[N_ISAS] = { MHSA_ISA_SCALAR, MHSA_ISA_AVX2,
                                    MHSA_ISA_NEON, MHSA_ISA_AVX512 };

#if MHSA_TEST_AVX512_EMUL
extern const mhsa_kernels mhsa_kernels_avx512_emul;
#endif

const mhsa_kernels *emulated_table(mhsa_isa isa)
{
#if MHSA_TEST_AVX512_EMUL
    if (isa == MHSA_ISA_AVX512)
        return &mhsa_kernels_avx512_emul;
#endif
    (void)isa;
    return NULL;
}

int install_emulated_isas(void)
{
    int n = 0;
    const char *e = getenv("MHSA_TEST_EMULATION");
    if (e && strcmp(e, "0") == 0)
        return 0;
    for (int i = 0; i < N_ISAS; i++) {
        const mhsa_kernels *em = emulated_table(all_isas[i]);
        // The emulated AVX-512 build runs on AVX2, FMA and F16C.
        if (!em || mhsa_kernels_for(all_isas[i]) ||
            !mhsa_kernels_for(MHSA_ISA_AVX2))
            continue;
        mhsa__set_stand_in(em);
        n++;
    }
    return n;
}

const mhsa_kernels *emulated_beside_native(void)
{
    const mhsa_kernels *em = emulated_table(MHSA_ISA_AVX512);
    const mhsa_kernels *k = mhsa_kernels_for(MHSA_ISA_AVX512);
    const char *e = getenv("MHSA_TEST_EMULATION");
    const char *why = !em ? "not in this build"
                      : !k || k == em ? "already ran as avx512"
                      : !mhsa_kernels_for(MHSA_ISA_AVX2)
                          ? "this CPU lacks AVX2/FMA/F16C"
                      : e && strcmp(e, "0") == 0 ? "MHSA_TEST_EMULATION=0"
                                                 : NULL;
    if (why) {
        printf("emulated avx512 beside the native table: no (%s)\n", why);
        return NULL;
    }
    // Not "isa avx512: SIMDe emulation", which .ci/avx512-check.py reads
    // as the emulated table run in place of the native one.
    printf("emulated avx512 beside the native table: yes (SIMDe build)\n");
    return em;
}

const mhsa_kernels *table_or_emulated(int i)
{
    return i < N_ISAS ? kernels_or_skip(i) : emulated_beside_native();
}

const mhsa_kernels *kernels_or_skip(int i)
{
    const mhsa_kernels *k = mhsa_kernels_for(all_isas[i]);
    if (!k)
        printf("skip: isa %s not built or not supported here\n",
               mhsa_isa_name(all_isas[i]));
    else if (k == emulated_table(all_isas[i]))
        printf("isa %s: SIMDe emulation (this CPU lacks it)\n",
               mhsa_isa_name(all_isas[i]));
    return k;
}

uint64_t rng_u64(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float rng_uniform(rng *r, float lo, float hi)
{
    float u = (float)(rng_u64(r) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

int rng_int(rng *r, int lo, int hi)
{
    return lo + (int)(rng_u64(r) % (uint64_t)(hi - lo + 1));
}

void fill_uniform(rng *r, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_uniform(r, lo, hi);
}

void fill_small_ints(rng *r, float *x, size_t n, int range)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rng_int(r, -range, range);
}

double rel_err(const float *a, const float *b, size_t n)
{
    double maxdiff = 0, maxref = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) && isfinite(b[i]))
            return INFINITY;
        if (isnan(b[i]) != isnan(a[i]))
            return INFINITY;
        if (!isfinite(b[i])) {
            if (a[i] != b[i] && !(isnan(a[i]) && isnan(b[i])))
                return INFINITY;
            continue;
        }
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > maxdiff)
            maxdiff = d;
        if (fabs(b[i]) > maxref)
            maxref = fabs(b[i]);
    }
    return maxdiff / maxref;
}

double rel_err_d(const float *a, const double *b, size_t n)
{
    double maxdiff = 0, maxref = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i]))
            return INFINITY;
        double d = fabs((double)a[i] - b[i]);
        if (d > maxdiff)
            maxdiff = d;
        if (fabs(b[i]) > maxref)
            maxref = fabs(b[i]);
    }
    return maxdiff / maxref;
}

int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

static const float canary = 1234.5678f;

float *alloc_guarded(size_t n)
{
    float *p = malloc((n + 2 * CANARY_N) * sizeof(float));
    if (!p)
        abort();
    for (size_t i = 0; i < CANARY_N; i++)
        p[i] = p[CANARY_N + n + i] = canary;
    return p + CANARY_N;
}

int guard_ok(const float *p, size_t n)
{
    for (size_t i = 1; i <= CANARY_N; i++)
        if (memcmp(&p[-(ptrdiff_t)i], &canary, sizeof canary) != 0)
            return 0;
    for (size_t i = 0; i < CANARY_N; i++)
        if (memcmp(&p[n + i], &canary, sizeof canary) != 0)
            return 0;
    return 1;
}

void free_guarded(float *p)
{
    if (p)
        free(p - CANARY_N);
}

void fill_nan(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = NAN;
}

const char *data_path(const char *rel)
{
    static char buf[4096];
    const char *dir = getenv("MHSA_TEST_DATA");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/data", rel);
    return buf;
}

float *read_f32(const char *rel, size_t n)
{
    FILE *f = fopen(data_path(rel), "rb");
    if (!f)
        return NULL;
    float *x = malloc((n ? n : 1) * sizeof(float));
    size_t got = x ? fread(x, sizeof(float), n, f) : 0;
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != n || extra) {
        free(x);
        return NULL;
    }
    // The files are little-endian; every target we build for is too.
    return x;
}

static int run(Suite *s, int emulate)
{
    if (emulate && install_emulated_isas()) {
        printf("note: ISAs this CPU lacks run emulated (kernels_or_skip "
               "names them)\n");
        const char *e = getenv("MHSA_ISA");
        for (int i = 0; e && i < N_ISAS; i++)
            if (!strcmp(e, mhsa_isa_name(all_isas[i])) &&
                mhsa_kernels_for(all_isas[i]) == emulated_table(all_isas[i]))
                printf("note: MHSA_ISA=%s: the default table is the "
                       "SIMDe-emulated one\n", e);
    }
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int run_suite(Suite *s) { return run(s, 1); }

int run_suite_native(Suite *s) { return run(s, 0); }

int under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload");
}

void add_case(Suite *s, const char *name, const TTest *t, int n,
              const char *tags)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 600);
    if (tags)
        tcase_set_tags(tc, tags);
    tcase_add_loop_test(tc, t, 0, n);
    suite_add_tcase(s, tc);
}

static int env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

int test_quick(void)
{
    return env_on("MHSA_TEST_QUICK") || env_on("MHSA_TEST_QEMU");
}

int test_count(int n)
{
    if (!test_quick() || n <= 1)
        return n;
    return (n + 3) / 4;
}

void note_quick(const char *what)
{
    if (test_quick())
        printf("note: quick mode (MHSA_TEST_QUICK): %s\n", what);
}
