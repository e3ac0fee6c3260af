// test_bf16_emul.c — the bf16 and AMX instructions the bf16 tiles use
// (vcvtne2ps2bf16, vdpbf16ps, TDPBF16PS, TILEZERO/LOAD/STORE, LDTILECFG,
// TILERELEASE), on each build of them this machine can run
// (bf16_probe.h): the test-only C emulation always, the instructions
// themselves where the CPU has them. Each is checked against the Intel
// SDM's pseudo-code, written out here a second time: the bf16 rounding in
// integer code, the FMAs of vdpbf16ps / TDPBF16PS as this CPU's own
// vfmadd231ss run with MXCSR DAZ+FTZ (so the emulation's flush-to-zero,
// with tininess after rounding, is tied to x86 hardware too).
#include <check.h>
#include <immintrin.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16_probe.h"
#include "core/cpu_features.h"
#include "util.h"

enum { N_BUILDS = 2 };   // 0 native, 1 emulated

// What runs: 1 the vector instructions (AVX512-BF16), 2 the tiles too.
static int build_level(int i)
{
    if (i == 0) {
#if MHSA_TEST_BF16_NATIVE
        const mhsa_cpu_features *f = mhsa__cpu_features();
        if (!f->avx512_bf16) {
            printf("skip: native bf16: this CPU lacks AVX512_BF16 "
                   "(vdpbf16ps)\n");
            return 0;
        }
        if (!f->amx_bf16 || !mhsa__amx_permitted()) {
            printf("bf16 probes: native AVX512-BF16; skip: native AMX: "
                   "this CPU or OS lacks AMX-BF16 tiles\n");
            return 1;
        }
        printf("bf16 probes: native AVX512-BF16 and AMX\n");
        return 2;
#else
        printf("skip: native bf16: not in this build\n");
        return 0;
#endif
    }
#if MHSA_TEST_AVX512_EMUL
    if (mhsa__cpu_features()->avx2_fma_f16c) {
        printf("bf16 probes: emulated AVX512-BF16 and AMX\n");
        return 2;
    }
    printf("skip: emulated bf16: this CPU lacks AVX2/FMA/F16C\n");
#else
    printf("skip: emulated bf16: not in this build (no SIMDe)\n");
#endif
    return 0;
}

static const bf16_probes *probes(int i)
{
#if MHSA_TEST_BF16_NATIVE
    if (i == 0)
        return &mhsa_bf16_probes__native;
#endif
#if MHSA_TEST_AVX512_EMUL
    if (i == 1)
        return &mhsa_bf16_probes__emul;
#endif
    return NULL;
}

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float fbits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static float bf(uint16_t h) { return fbits((uint32_t)h << 16); }

// SDM, VCVTNE2PS2BF16: convert_fp32_to_bfloat16.
static uint16_t sdm_bf16(uint32_t x)
{
    uint32_t exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
    if (exp == 0)                                  // zero or denormal
        return (uint16_t)((x >> 31) << 15);
    if (exp == 0xff && mant == 0)                  // infinity
        return (uint16_t)(x >> 16);
    if (exp == 0xff)                               // NaN
        return (uint16_t)((x >> 16) | 0x40);
    uint32_t lsb = (x >> 16) & 1;
    return (uint16_t)((x + 0x7fff + lsb) >> 16);
}

// One fp32 FMA acc + a*b with DAZ and FTZ set, RNE: the hardware's.
__attribute__((target("fma"))) static float hw_fma(float acc, float a,
                                                   float b)
{
    unsigned old = _mm_getcsr();
    _mm_setcsr(0x1f80u | 0x8000u | 0x0040u);   // masked, FTZ, DAZ, RNE
    __m128 r = _mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(acc));
    float out = _mm_cvtss_f32(r);
    _mm_setcsr(old);
    return out;
}

// The FMA of the references: the hardware's, except under valgrind, which
// does not emulate MXCSR's DAZ/FTZ: there the emulation's own scalar FMA
// (checked against the hardware in every other run) stands in, so the
// instructions' sequencing (order, even/odd sums, shapes) and memory use
// are still checked.
static float ref_fma(float acc, float a, float b)
{
#if MHSA_TEST_AVX512_EMUL
    if (under_valgrind())
        return mhsa_bf16_probes__emul.fma_daz_ftz(acc, a, b);
#endif
    return hw_fma(acc, a, b);
}

// NaN matches NaN (payloads are the hardware's business); else the bits.
static int same(float x, float y)
{
    return (isnan(x) && isnan(y)) || bits(x) == bits(y);
}

// SDM, VDPBF16PS, one lane.
static float sdm_dp_lane(float acc, const uint16_t *a, const uint16_t *b,
                         int i)
{
    acc = ref_fma(acc, bf(a[2 * i + 1]), bf(b[2 * i + 1]));
    return ref_fma(acc, bf(a[2 * i]), bf(b[2 * i]));
}

// Values that probe rounding, specials and the flush rules.
static uint32_t special_bits(rng *r, int j)
{
    static const uint32_t fixed[] = {
        0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000,
        0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffa00000,
        0x3f808000, 0x3f818000, 0x3f808001, 0x3f7f8000, 0x7f7fffff,
        0x7f7f8000, 0xc0490fdb, 0x3f800000, 0x00400000, 0x0000ffff,
    };
    enum { NF = sizeof fixed / sizeof fixed[0] };
    if (j < NF)
        return fixed[j];
    uint32_t u = (uint32_t)rng_u64(r);
    if (j % 3 == 0)   // ties and near-ties of the 16 bits cut off
        u = (u & 0xffff0000u) | (j % 2 ? 0x8000u : 0x7fffu);
    return u;
}

START_TEST(cvtne2ps_matches_sdm)
{
    if (!build_level(_i))
        return;
    const bf16_probes *p = probes(_i);
    // Known answers (ties to even, NaN made quiet, subnormals to zero,
    // overflow to inf).
    static const struct { uint32_t x; uint16_t want; } known[] = {
        { 0x3f808000, 0x3f80 }, { 0x3f818000, 0x3f82 },
        { 0x3f808001, 0x3f81 }, { 0x00000001, 0x0000 },
        { 0x807fffff, 0x8000 }, { 0x7f800001, 0x7fc0 },
        { 0x7f7fffff, 0x7f80 }, { 0xff800000, 0xff80 },
    };
    rng r = { 7 };
    for (int round = 0; round < 64; round++) {
        float a[16], b[16];
        uint16_t out[32];
        for (int j = 0; j < 16; j++) {
            a[j] = fbits(special_bits(&r, round * 32 + j));
            b[j] = fbits(special_bits(&r, round * 32 + 16 + j));
        }
        if (round == 0)
            for (int j = 0; j < 8; j++)
                b[j] = fbits(known[j].x);
        p->cvtne2ps(a, b, out);
        for (int j = 0; j < 16; j++) {
            ck_assert_msg(out[j] == sdm_bf16(bits(b[j])),
                          "%s: bf16(%08x) = %04x, SDM %04x", p->build,
                          bits(b[j]), out[j], sdm_bf16(bits(b[j])));
            ck_assert_msg(out[16 + j] == sdm_bf16(bits(a[j])),
                          "%s: bf16(%08x) = %04x, SDM %04x (upper half)",
                          p->build, bits(a[j]), out[16 + j],
                          sdm_bf16(bits(a[j])));
        }
        if (round == 0)
            for (int j = 0; j < 8; j++)
                ck_assert_msg(out[j] == known[j].want, "%s: bf16(%08x)",
                              p->build, known[j].x);
    }
    printf("bf16 probes (%s): vcvtne2ps2bf16 matches the SDM\n", p->build);
}
END_TEST

static uint16_t rand_bf16(rng *r, int special)
{
    if (special && rng_int(r, 0, 7) == 0)
        return (uint16_t)(special_bits(r, rng_int(r, 0, 19)) >> 16);
    // Exponents wide enough to overflow and underflow in products.
    float v = rng_uniform(r, -2.0f, 2.0f) *
              ldexpf(1.0f, rng_int(r, -70, 70));
    return (uint16_t)(bits(v) >> 16);
}

START_TEST(dpbf16_matches_sdm)
{
    if (!build_level(_i))
        return;
    const bf16_probes *p = probes(_i);
    rng r = { 11 };
    for (int round = 0; round < 400; round++) {
        uint16_t a[32], b[32];
        float acc[16], want[16];
        for (int j = 0; j < 32; j++) {
            a[j] = rand_bf16(&r, round % 2);
            b[j] = rand_bf16(&r, round % 2);
        }
        for (int j = 0; j < 16; j++)
            acc[j] = round % 4 == 3 ? fbits(special_bits(&r, j + round))
                                    : bf(rand_bf16(&r, 0));
        // Known orders and flushes in the first lanes of round 0.
        if (round == 0) {
            // 1 + 2^-24 + 2^-24 rounds twice: exactly 1 (one rounding of
            // the exact sum would give 1 + 2^-23).
            acc[0] = 1.0f; a[0] = a[1] = 0x3980; b[0] = b[1] = 0x3980;
            // A subnormal bf16 times 2^100 is 0 (DAZ), not 2^-33.
            acc[1] = 0.0f; a[2] = 0x0001; b[2] = 0x7180; a[3] = b[3] = 0;
            // 2^-70 * 2^-70 = 2^-140 flushes to zero (FTZ).
            acc[2] = 0.0f; a[4] = b[4] = 0x1cc0; a[5] = b[5] = 0;
        }
        for (int j = 0; j < 16; j++)
            want[j] = sdm_dp_lane(acc[j], a, b, j);
        if (round == 0) {
            ck_assert_msg(want[0] == 1.0f && want[1] == 0.0f &&
                          want[2] == 0.0f, "the SDM reference itself");
        }
        p->dpbf16(acc, a, b);
        for (int j = 0; j < 16; j++)
            ck_assert_msg(same(acc[j], want[j]),
                          "%s: vdpbf16ps lane %d round %d: %a, SDM %a",
                          p->build, j, round, acc[j], want[j]);
    }
    printf("bf16 probes (%s): vdpbf16ps matches the SDM (DAZ, FTZ, "
           "order)\n", p->build);
}
END_TEST

// SDM, TDPBF16PS, with the hardware FMA/add under DAZ/FTZ.
static void sdm_tdp(int rows, int kpairs, int ncols, float *c,
                    const uint16_t *a, const uint16_t *b)
{
    for (int m = 0; m < rows; m++) {
        float tmp[32] = { 0 };
        for (int k = 0; k < kpairs; k++)
            for (int n = 0; n < ncols; n++) {
                tmp[2 * n] = ref_fma(tmp[2 * n], bf(a[m * 2 * kpairs + 2 * k]),
                                    bf(b[k * 2 * ncols + 2 * n]));
                tmp[2 * n + 1] = ref_fma(tmp[2 * n + 1],
                                        bf(a[m * 2 * kpairs + 2 * k + 1]),
                                        bf(b[k * 2 * ncols + 2 * n + 1]));
            }
        for (int n = 0; n < ncols; n++) {
            float t = ref_fma(tmp[2 * n], tmp[2 * n + 1], 1.0f);
            c[m * ncols + n] = ref_fma(c[m * ncols + n], t, 1.0f);
        }
    }
}

START_TEST(tdpbf16_matches_sdm)
{
    if (build_level(_i) < 2)
        return;
    const bf16_probes *p = probes(_i);
    rng r = { 13 };
    int rounds = test_count(60);
    for (int round = 0; round < rounds; round++) {
        int rows = round < 4 ? 16 : rng_int(&r, 1, 16);
        int kp = round < 4 ? 16 : rng_int(&r, 1, 16);
        int nc = round < 4 ? 16 : rng_int(&r, 1, 16);
        uint16_t a[16 * 32], b[16 * 32];
        float c[256], want[256];
        for (int j = 0; j < rows * 2 * kp; j++)
            a[j] = rand_bf16(&r, round % 2);
        for (int j = 0; j < kp * 2 * nc; j++)
            b[j] = rand_bf16(&r, round % 2);
        for (int j = 0; j < rows * nc; j++)
            c[j] = want[j] = bf(rand_bf16(&r, round % 3 == 2));
        sdm_tdp(rows, kp, nc, want, a, b);
        p->tdpbf16(rows, kp, nc, c, a, b);
        for (int j = 0; j < rows * nc; j++)
            ck_assert_msg(same(c[j], want[j]),
                          "%s: TDPBF16PS %dx%dx%d element %d: %a, SDM %a",
                          p->build, rows, 2 * kp, nc, j, c[j], want[j]);
    }
    float z[256];
    memset(z, 0xff, sizeof z);
    p->tile_zero_store(z);
    for (int j = 0; j < 256; j++)
        ck_assert_msg(bits(z[j]) == 0, "%s: TILEZERO", p->build);
    printf("bf16 probes (%s): TDPBF16PS, TILEZERO, TILELOADD/STORED "
           "match the SDM\n", p->build);
}
END_TEST

// The emulation's FMA against the hardware's with DAZ/FTZ, incl. the
// results just below 2^-126 that x86 flushes (tininess after rounding)
// or keeps (they round up to 2^-126).
START_TEST(emulated_fma_is_x86_ftz)
{
    const bf16_probes *p = probes(1);
    if (!p || !mhsa__cpu_features()->avx2_fma_f16c) {
        printf("skip: emulated bf16: not in this build or CPU\n");
        return;
    }
    if (under_valgrind()) {
        printf("skip: the emulated FMA against x86's DAZ/FTZ: valgrind "
               "does not emulate MXCSR (checked in every other run)\n");
        return;
    }
    const float edge[][3] = {
        { 0.0f, 1.0f - 0x1p-24f, 0x1p-126f },      // 2^-126 - 2^-150: 0
        { 0x1p-126f, -0x1p-75f, 0x1p-76f },        // 2^-126 - 2^-151: min
        { -0x1p-126f, 0x1p-75f, 0x1p-76f },
        { 0x1p-126f, -0x1p-127f, 1.0f },
        { 0x1p-149f, 1.0f, 1.0f },                  // DAZ on acc
        { 1.0f, 0x1p-140f, 0x1p100f },              // DAZ on a
        { 0x1.fffffep127f, 0x1p127f, 2.0f },        // overflow
        { 0.0f, -0.0f, 1.0f },
        { -0.0f, -0.0f, 1.0f },
    };
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        float e = p->fma_daz_ftz(edge[i][0], edge[i][1], edge[i][2]);
        float h = hw_fma(edge[i][0], edge[i][1], edge[i][2]);
        ck_assert_msg(same(e, h), "fma(%a, %a, %a): emulated %a, x86 %a",
                      (double)edge[i][0], (double)edge[i][1],
                      (double)edge[i][2], e, h);
    }
    ck_assert(p->fma_daz_ftz(0.0f, 1.0f - 0x1p-24f, 0x1p-126f) == 0.0f);
    rng r = { 17 };
    for (int i = 0; i < 200000; i++) {
        float acc = fbits((uint32_t)rng_u64(&r)), a, b;
        a = rng_uniform(&r, -2, 2) * ldexpf(1.0f, rng_int(&r, -80, 10));
        b = rng_uniform(&r, -2, 2) * ldexpf(1.0f, rng_int(&r, -80, 10));
        if (i % 2)
            acc = -a * b * (1.0f + rng_uniform(&r, -1e-6f, 1e-6f));
        float e = p->fma_daz_ftz(acc, a, b), h = hw_fma(acc, a, b);
        ck_assert_msg(same(e, h), "fma(%a, %a, %a): emulated %a, x86 %a",
                      (double)acc, (double)a, (double)b, e, h);
    }
}
END_TEST

// A tile instruction without a loaded configuration faults on the
// hardware (SIGILL); the emulation aborts.
START_TEST(emulated_tiles_need_config)
{
    const bf16_probes *p = probes(1);
    float buf[256] = { 0 };
    p->load_unconfigured(buf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bf16_emul");
    TCase *tc = tcase_create("bf16_emul");
    tcase_add_loop_test(tc, cvtne2ps_matches_sdm, 0, N_BUILDS);
    tcase_add_loop_test(tc, dpbf16_matches_sdm, 0, N_BUILDS);
    tcase_add_loop_test(tc, tdpbf16_matches_sdm, 0, N_BUILDS);
    tcase_add_test(tc, emulated_fma_is_x86_ftz);
    // Only in check's fork mode (valgrind runs CK_FORK=no), and where the
    // emulation runs.
    const char *fork = getenv("CK_FORK");
    if ((!fork || strcmp(fork, "no") != 0) && probes(1) &&
        mhsa__cpu_features()->avx2_fma_f16c)
        tcase_add_test_raise_signal(tc, emulated_tiles_need_config, SIGABRT);
    suite_add_tcase(s, tc);
    return run_suite_native(s);
}
