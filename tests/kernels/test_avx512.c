// test_avx512.c — what is specific to the AVX-512 build, for each build of
// it this machine can run: native (a CPU with AVX-512 F/BW/VL/DQ) and the
// SIMDe emulation the other tests use where the CPU lacks it (AVX2, FMA,
// F16C). The kernels themselves are tested against scalar by the
// test_kernel_* files like every ISA; here:
//  - the vectorised exp of src/avx512/vmath.h: accuracy over its whole
//    range against double exp, and its special values (the AVX2 exp's);
//  - the single instructions the kernels rely on, each against its
//    definition in the Intel SDM written out in plain C: masked loads and
//    stores (only the lanes of the mask are touched: buffers end at a
//    PROT_NONE page), vcvtph2ps/vcvtps2ph, vpmovzxwd/vpmovdw, vscalefps,
//    vshuff32x4, vgatherdps with a mask (the masked-off lanes' indices
//    point into the PROT_NONE page). On the emulated build these are the SIMDe fill-ins of
//    src/avx512/simde_fillins.h; on an AVX-512 CPU the same checks tie the
//    definitions to the hardware;
//  - where both builds run, the emulated exp gives the native bits.
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avx512_probe.h"
#include "guard.h"
#include "kernels/half.h"
#include "util.h"

enum { N_BUILDS = 2 };

// Build i (0 native, 1 emulated) of the AVX-512 code if it can run here,
// else NULL (after saying why).
static const avx512_probes *build_or_skip(int i)
{
    if (i == 0) {
#if MHSA_TEST_AVX512_NATIVE
        const mhsa_kernels *k = mhsa_kernels_for(MHSA_ISA_AVX512);
        if (k && k != emulated_table(MHSA_ISA_AVX512))
            return &mhsa_probes__avx512;
        printf("skip: native avx512: this CPU lacks AVX-512\n");
#else
        printf("skip: native avx512: not in this build\n");
#endif
        return NULL;
    }
#if MHSA_TEST_AVX512_EMUL
    if (mhsa_kernels_for(MHSA_ISA_AVX2))
        return &mhsa_probes__avx512_emul;
    printf("skip: emulated avx512: this CPU lacks AVX2/FMA/F16C\n");
#else
    printf("skip: emulated avx512: not in this build (no SIMDe)\n");
#endif
    return NULL;
}

static uint32_t bits(float f) { return mhsa_f32_bits(f); }

// ---- exp ----------------------------------------------------------------

// x over [lo, hi] in n evenly spaced points, the worst relative error.
static double sweep(const avx512_probes *p, float lo, float hi, size_t n,
                    float *at)
{
    enum { CH = 4096 };
    float x[CH], y[CH];
    double worst = 0;
    for (size_t i0 = 0; i0 < n; i0 += CH) {
        size_t c = n - i0 < CH ? n - i0 : CH;
        for (size_t l = 0; l < c; l++)
            x[l] = lo + (hi - lo) * (float)((double)(i0 + l) / (double)n);
        p->exp(c, x, y);
        for (size_t l = 0; l < c; l++) {
            double ref = exp((double)x[l]);
            double e = fabs((double)y[l] - ref) / ref;
            if (!(e <= worst)) {
                worst = e;
                *at = x[l];
            }
        }
    }
    return worst;
}

START_TEST(exp_accuracy)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    // The whole range, densely; then every float of the polynomial's own
    // range around 0 and around a few scales (x = n ln2 + r).
    float at = 0, at2 = 0;
    double worst = sweep(p, -87.33f, 88.72f, (size_t)1 << 22, &at);
    double w2 = 0;
    for (int s = -120; s <= 120; s += 30) {
        float a = 0;
        double w = sweep(p, (float)(s * 0.693147180559945) - 0.35f,
                         (float)(s * 0.693147180559945) + 0.35f,
                         (size_t)1 << 18, &a);
        if (!(w <= w2)) {
            w2 = w;
            at2 = a;
        }
    }
    printf("avx512 (%s) exp: max rel err %.3g at x = %.9g over "
           "[-87.33, 88.72]; %.3g at x = %.9g around n ln2\n", p->build,
           worst, at, w2, at2);
    // The AVX2 exp's measured bound is 1.62e-7; this one must not be worse.
    ck_assert_msg(worst < 1.62e-7 && w2 < 1.62e-7,
                  "exp rel err %g at %g, %g at %g", worst, at, w2, at2);
}
END_TEST

START_TEST(exp_special_values)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    float lo = -87.33654f, hi = 88.72283172607421875f;
    float x[16] = { -INFINITY, -1e4f, -88.0f, nextafterf(lo, -INFINITY),
                    NAN, INFINITY, 89.0f, nextafterf(hi, INFINITY),
                    0.0f, -0.0f, lo, hi, 1e-8f, -1e-8f, 1.0f, -1.0f };
    float y[16];
    p->exp(16, x, y);
    for (int l = 0; l < 4; l++)
        ck_assert_msg(bits(y[l]) == 0, "exp(%g) = %g, want +0", x[l], y[l]);
    ck_assert(isnan(y[4]));
    for (int l = 5; l < 8; l++)
        ck_assert_msg(y[l] == INFINITY, "exp(%g) = %g, want inf", x[l],
                      y[l]);
    ck_assert(y[8] == 1.0f && y[9] == 1.0f);
    for (int l = 10; l < 16; l++) {
        double ref = exp((double)x[l]);
        ck_assert_msg(isfinite(y[l]) && fabs(y[l] - ref) / ref < 1.62e-7,
                      "exp(%.9g) = %.9g, want %.9g", x[l], y[l], ref);
    }
    // No result is denormal: near the bottom of the range every value is
    // +0 or at least FLT_MIN.
    enum { N = 4096 };
    static float xs[N], ys[N];
    for (int i = 0; i < N; i++)
        xs[i] = -87.4f + 0.1f * (float)i / N;
    p->exp(N, xs, ys);
    for (int i = 0; i < N; i++)
        ck_assert_msg(ys[i] == 0.0f ? !signbit(ys[i]) : ys[i] >= FLT_MIN,
                      "exp(%.9g) = %g", xs[i], ys[i]);
    // Lengths that are not a multiple of 16 (the probe's masked tail).
    for (size_t n = 1; n < 40; n += 7) {
        float a[40], b[40];
        for (size_t i = 0; i < n; i++)
            a[i] = (float)i - 20.0f;
        p->exp(n, a, b);
        for (size_t i = 0; i < n; i++)
            ck_assert(fabs(b[i] - exp((double)a[i])) / exp((double)a[i])
                      < 1.62e-7);
    }
}
END_TEST

// Arguments far outside the range (the exp no longer clamps them first)
// still give +0 and +inf, a NaN keeps its payload (made quiet); and the
// variant for x <= 0 gives the general exp's bits wherever it may be used.
START_TEST(exp_far_arguments_and_nonpos_variant)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    float nan_payload;
    uint32_t nb = 0x7fa12345u;   // a signalling NaN with a payload
    memcpy(&nan_payload, &nb, sizeof nb);
    float x[16] = { -FLT_MAX, -1e30f, -1e10f, -200.0f, -128.0f * 0.6931472f,
                    -87.4f, FLT_MAX, 1e30f, 1e10f, 200.0f, 128.0f * 0.6931472f,
                    -NAN, nan_payload, -FLT_MIN, -0.0f, -1e-30f };
    float y[16];
    p->exp(16, x, y);
    for (int l = 0; l < 6; l++)
        ck_assert_msg(bits(y[l]) == 0, "exp(%g) = %g, want +0", x[l], y[l]);
    for (int l = 6; l < 11; l++)
        ck_assert_msg(y[l] == INFINITY, "exp(%g) = %g, want inf", x[l],
                      y[l]);
    ck_assert(isnan(y[11]) && isnan(y[12]));
    ck_assert_msg(bits(y[12]) == (nb | 0x00400000u), "NaN payload %08x",
                  (unsigned)bits(y[12]));
    ck_assert(y[13] == 1.0f && y[14] == 1.0f && y[15] == 1.0f);

    // exp_nonpos against exp, bit for bit, over x <= 0 and NaN: a dense
    // sweep of [-90, 0] and the special values above that are <= 0.
    enum { N = 1 << 16 };
    static float xs[N], a[N], b[N];
    for (int i = 0; i < N; i++)
        xs[i] = -90.0f * (float)i / (N - 1);
    for (int l = 0; l < 16; l++)
        if (!(x[l] > 0.0f))
            xs[l] = x[l];
    p->exp(N, xs, a);
    p->exp_nonpos(N, xs, b);
    for (int i = 0; i < N; i++)
        ck_assert_msg(bits(a[i]) == bits(b[i]),
                      "exp_nonpos(%.9g) = %.9g, exp gives %.9g", xs[i], b[i],
                      a[i]);
}
END_TEST

START_TEST(exp_emulated_equals_native)
{
    const avx512_probes *nat = build_or_skip(0), *emu = build_or_skip(1);
    if (!nat || !emu)
        return;
    enum { N = 1 << 16 };
    static float x[N], a[N], b[N];
    rng r = { 77 };
    // Quick mode (util.h): a quarter of the random repeats here and below.
    int n_rand = test_count(64);
    note_quick("a quarter of the random repeats");
    for (int rep = 0; rep < n_rand; rep++) {
        for (int i = 0; i < N; i++)
            x[i] = rng_uniform(&r, -100.0f, 100.0f);
        nat->exp(N, x, a);
        emu->exp(N, x, b);
        ck_assert(memcmp(a, b, sizeof a) == 0);
    }
}
END_TEST

// ---- single instructions against their definitions ----------------------

// Random bit patterns, NaNs with payloads among them.
static void fill_bits(rng *r, uint32_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (uint32_t)rng_u64(r);
}

// A mask with bits only in lanes < c.
static uint16_t mask_below(rng *r, int c)
{
    uint32_t m = (uint32_t)rng_u64(r);
    if (rng_u64(r) % 5 == 0)   // the full mask often
        m = 0xffff;
    return (uint16_t)(m & ((1u << c) - 1u));
}

START_TEST(masked_loads_and_stores)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    rng r = { 900 + (uint64_t)_i };
    for (int c = 0; c <= 16; c++) {
        // c accessible lanes, then a PROT_NONE page: a lane outside the
        // mask that is touched faults.
        float *buf = guard_alloc((size_t)c, GUARD_AFTER);
        size_t halves = (size_t)(c + 1) / 2;
        float *hbuf = guard_alloc(halves, GUARD_AFTER);
        uint16_t *h = (uint16_t *)hbuf + (c % 2);   // c halves end at the page
        for (int rep = 0; rep < 64; rep++) {
            uint16_t k = mask_below(&r, c);
            uint32_t src[16], mem[16], out[16], want[16];
            fill_bits(&r, src, 16);
            fill_bits(&r, mem, 16);
            memcpy(buf, mem, (size_t)c * 4);
            p->mask_loadu_ps((const float *)src, k, buf, (float *)out);
            for (int l = 0; l < 16; l++)
                want[l] = (k >> l) & 1 ? mem[l] : src[l];
            ck_assert_msg(memcmp(out, want, sizeof out) == 0,
                          "%s mask_loadu_ps c %d k %04x", p->build, c, k);
            p->maskz_loadu_ps(k, buf, (float *)out);
            for (int l = 0; l < 16; l++)
                want[l] = (k >> l) & 1 ? mem[l] : 0;
            ck_assert_msg(memcmp(out, want, sizeof out) == 0,
                          "%s maskz_loadu_ps c %d k %04x", p->build, c, k);
            p->mask_storeu_ps(buf, k, (const float *)src);
            for (int l = 0; l < c; l++) {
                uint32_t got;
                memcpy(&got, buf + l, 4);
                ck_assert_msg(got == ((k >> l) & 1 ? src[l] : mem[l]),
                              "%s mask_storeu_ps c %d k %04x lane %d",
                              p->build, c, k, l);
            }

            uint16_t hsrc[16], hmem[16], hout[16];
            for (int l = 0; l < 16; l++) {
                hsrc[l] = (uint16_t)src[l];
                hmem[l] = (uint16_t)mem[l];
            }
            memcpy(h, hmem, (size_t)c * 2);
            p->maskz_loadu_epi16(k, h, hout);
            for (int l = 0; l < 16; l++)
                ck_assert_msg(hout[l] == ((k >> l) & 1 ? hmem[l] : 0),
                              "%s maskz_loadu_epi16 c %d k %04x", p->build,
                              c, k);
            p->mask_storeu_epi16(h, k, hsrc);
            for (int l = 0; l < c; l++)
                ck_assert_msg(h[l] == ((k >> l) & 1 ? hsrc[l] : hmem[l]),
                              "%s mask_storeu_epi16 c %d k %04x", p->build,
                              c, k);
        }
        guard_free(buf);
        guard_free(hbuf);
    }
}
END_TEST

// vcvtph2ps: the exact value, a signalling NaN made quiet (bit 22 set).
START_TEST(half_conversions)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    for (uint32_t i0 = 0; i0 < 65536; i0 += 16) {
        uint16_t h[16];
        float y[16];
        for (int l = 0; l < 16; l++)
            h[l] = (uint16_t)(i0 + (uint32_t)l);
        p->cvtph_ps(h, y);
        for (int l = 0; l < 16; l++) {
            uint32_t want = bits(mhsa_f16_to_f32(h[l]));
            int snan = (h[l] & 0x7c00) == 0x7c00 && (h[l] & 0x3ff) &&
                       !(h[l] & 0x200);
            if (snan)
                want |= 0x400000u;
            ck_assert_msg(bits(y[l]) == want, "%s cvtph_ps %04x: %08x, "
                          "want %08x", p->build, h[l], bits(y[l]), want);
        }
    }
    // vcvtps2ph, round to nearest even: half.h's rules (kernels.h says
    // they are the instruction's), on random patterns and on values near
    // every F16 rounding boundary.
    rng r = { 4242 };
    int n_rand = test_count(40000);
    note_quick("a quarter of the random patterns");
    for (int rep = 0; rep < n_rand; rep++) {
        uint32_t u[16];
        uint16_t out[16];
        fill_bits(&r, u, 16);
        if (rep % 2)   // exponents where F16 rounds: 2^-26 .. 2^17
            for (int l = 0; l < 16; l++)
                u[l] = (u[l] & 0x807fffffu) |
                       ((uint32_t)(101 + (u[l] >> 24) % 44) << 23);
        p->cvtps_ph((const float *)u, out);
        for (int l = 0; l < 16; l++) {
            uint16_t want = mhsa_f32_to_f16(mhsa_bits_f32(u[l]));
            ck_assert_msg(out[l] == want, "%s cvtps_ph %08x: %04x, want "
                          "%04x", p->build, u[l], out[l], want);
        }
    }
}
END_TEST

START_TEST(widen_and_narrow)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    rng r = { 31 };
    int n_rand = test_count(1000);
    note_quick("a quarter of the random patterns");
    for (int rep = 0; rep < n_rand; rep++) {
        uint32_t x[16], w[16];
        uint16_t h[16], n[16];
        fill_bits(&r, x, 16);
        for (int l = 0; l < 16; l++)
            h[l] = (uint16_t)(x[l] >> 7);
        p->cvtepu16_epi32(h, w);
        p->cvtepi32_epi16(x, n);
        for (int l = 0; l < 16; l++) {
            ck_assert_msg(w[l] == h[l], "%s cvtepu16_epi32", p->build);
            ck_assert_msg(n[l] == (uint16_t)(x[l] & 0xffff),
                          "%s cvtepi32_epi16", p->build);
        }
    }
}
END_TEST

// vscalefps with MXCSR at its default (no DAZ/FTZ, nearest): a * 2^floor(b)
// rounded once, here computed exactly in double and rounded to float once;
// special cases from the SDM's table.
static int scalef_ok(float a, float b, float got)
{
    if (isnan(a) || isnan(b))
        return isnan(got);
    if (b == INFINITY)
        return a == 0.0f ? isnan(got)
                         : bits(got) == bits(copysignf(INFINITY, a));
    if (b == -INFINITY)
        return isinf(a) ? isnan(got) : bits(got) == bits(copysignf(0.0f, a));
    double e = floor((double)b);
    if (e > 400)
        e = 400;
    if (e < -400)
        e = -400;
    float want = (float)ldexp((double)a, (int)e);
    return bits(got) == bits(want);
}

START_TEST(scalef_definition)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    // The exp's own cases first: n = 128 with a < 1 stays finite, and
    // n = -126.. with subnormal products.
    float a[16] = { 0x1.fffffep-1f, 0x1.6p-1f, 1.0f, 1.5f, 0x1.fffffep-1f,
                    1.0f, 0x1.8p0f, -0.0f, 0.0f, INFINITY, -INFINITY, NAN,
                    1e-40f, -3.0f, 2.0f, 1.0f };
    float b[16] = { 128.0f, 128.0f, 128.0f, -127.0f, -149.0f, -150.0f,
                    -149.0f, 5.0f, INFINITY, -INFINITY, 3.0f, 1.0f,
                    10.5f, -0.5f, -INFINITY, NAN };
    float y[16];
    p->scalef_ps(a, b, y);
    for (int l = 0; l < 16; l++)
        ck_assert_msg(scalef_ok(a[l], b[l], y[l]), "%s scalef(%a, %a) = %a",
                      p->build, a[l], b[l], y[l]);
    ck_assert(isfinite(y[0]) && y[0] == FLT_MAX);
    rng r = { 5150 };
    int n_rand = test_count(20000);
    note_quick("a quarter of the random patterns");
    for (int rep = 0; rep < n_rand; rep++) {
        for (int l = 0; l < 16; l++) {
            uint32_t u = (uint32_t)rng_u64(&r);
            a[l] = mhsa_bits_f32(u);
            b[l] = rep % 3 ? (float)rng_int(&r, -300, 300)
                           : rng_uniform(&r, -200.0f, 200.0f);
        }
        p->scalef_ps(a, b, y);
        for (int l = 0; l < 16; l++)
            ck_assert_msg(scalef_ok(a[l], b[l], y[l]),
                          "%s scalef(%a, %a) = %a", p->build, a[l], b[l],
                          y[l]);
    }
}
END_TEST

// vshuff32x4 dst, a, b, imm: 128-bit lanes a[imm0], a[imm1], b[imm2],
// b[imm3] (2 bits each).
START_TEST(shuffle_definition)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    float a[16], b[16], y[16];
    for (int l = 0; l < 16; l++) {
        a[l] = (float)l;
        b[l] = (float)(100 + l);
    }
    static const int imms[2] = { 0x88, 0xDD };
    for (int w = 0; w < 2; w++) {
        p->shuffle_f32x4(a, b, w, y);
        for (int q = 0; q < 4; q++) {
            int sel = (imms[w] >> (2 * q)) & 3;
            const float *from = q < 2 ? a : b;
            for (int l = 0; l < 4; l++)
                ck_assert_msg(y[4 * q + l] == from[4 * sel + l],
                              "%s shuffle_f32x4 %#x", p->build, imms[w]);
        }
    }
}
END_TEST

START_TEST(masked_gather)
{
    const avx512_probes *p = build_or_skip(_i);
    if (!p)
        return;
    rng r = { 950 + (uint64_t)_i };
    for (int c = 1; c <= 40; c++) {
        float *buf = guard_alloc((size_t)c, GUARD_AFTER);
        for (int rep = 0; rep < 64; rep++) {
            uint32_t src[16], mem[40], out[16], want[16];
            int32_t idx[16];
            uint16_t k = (uint16_t)rng_u64(&r);
            if (rep % 5 == 0)
                k = 0xffff;
            fill_bits(&r, src, 16);
            fill_bits(&r, mem, (size_t)c);
            memcpy(buf, mem, (size_t)c * 4);
            for (int l = 0; l < 16; l++) {
                // lanes outside k read the guard page if they read at all
                idx[l] = (k >> l) & 1 ? (int32_t)(rng_u64(&r) % (unsigned)c)
                                      : c + (int32_t)(rng_u64(&r) % 64);
                want[l] = (k >> l) & 1 ? mem[idx[l]] : src[l];
            }
            p->mask_i32gather_ps((const float *)src, k, idx, buf,
                                 (float *)out);
            ck_assert_msg(memcmp(out, want, sizeof out) == 0,
                          "%s mask_i32gather_ps c %d k %04x", p->build, c,
                          k);
        }
        guard_free(buf);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("avx512");
    TCase *tc = tcase_create("avx512");
    tcase_add_loop_test(tc, exp_accuracy, 0, N_BUILDS);
    tcase_add_loop_test(tc, exp_special_values, 0, N_BUILDS);
    tcase_add_loop_test(tc, exp_far_arguments_and_nonpos_variant, 0,
                        N_BUILDS);
    tcase_add_test(tc, exp_emulated_equals_native);
    tcase_add_loop_test(tc, masked_loads_and_stores, 0, N_BUILDS);
    tcase_add_loop_test(tc, half_conversions, 0, N_BUILDS);
    tcase_add_loop_test(tc, widen_and_narrow, 0, N_BUILDS);
    tcase_add_loop_test(tc, scalef_definition, 0, N_BUILDS);
    tcase_add_loop_test(tc, shuffle_definition, 0, N_BUILDS);
    tcase_add_loop_test(tc, masked_gather, 0, N_BUILDS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
