// test_kernel_convert.c — the fp32 <-> F16 / BF16 conversions of every ISA
// (cvt_from_f32, cvt_to_f32; contract in kernels.h).
//
// The references here are written differently from src/kernels/half.h on purpose:
// decoding builds the value in double with ldexp, encoding rounds in double
// with rint (round to nearest even) on the format's quantum and builds the
// bits from frexp. Every table is checked against them and bit for bit
// against the scalar table:
//  - all 65536 F16 and BF16 bit patterns to fp32;
//  - fp32 to F16/BF16 on every rounding class: every representable value,
//    every midpoint between neighbours (ties to even and to odd, which
//    covers each F16 subnormal boundary, 2^-25, 65504/65520 and the top
//    BF16 value), one fp32 ulp either side of each, signed zeros,
//    infinities, overflow, NaN payloads quiet and signalling;
//  - a sweep over every fp32 exponent and a seeded random sample of bit
//    patterns;
//  - lengths 0..70 and larger at odd offsets, with canaries, so tails
//    never read or write past n.
// On x86 with F16C, the scalar F16 conversions are also checked against
// the hardware's vcvtps2ph / vcvtph2ps (except the signalling-NaN decode,
// which the hardware makes quiet and kernels.h keeps exact).
// Set MHSA_TEST_EXHAUSTIVE=1 to also run all 2^32 fp32 patterns through
// every table against scalar (about a minute natively; not in CI).
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS)

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// ---- independent references --------------------------------------------

// F16 bits to fp32 bits: the value built in double (exact), NaN as
// kernels.h says (sign and payload kept; the payload is the top mantissa
// bits of the fp32 NaN).
static uint32_t ref_f16_decode(uint16_t h)
{
    int neg = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    if (e == 31 && m != 0)
        return (neg ? 0x80000000u : 0) | 0x7f800000u | ((uint32_t)m << 13);
    double v = e == 31 ? INFINITY
             : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return bits_of((float)(neg ? -v : v));
}

static uint32_t ref_bf16_decode(uint16_t h)
{
    int neg = h >> 15, e = (h >> 7) & 255, m = h & 127;
    if (e == 255 && m != 0)
        return ((uint32_t)h << 16);
    double v = e == 255 ? INFINITY
             : e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
    return bits_of((float)(neg ? -v : v));
}

// Round |x| to a binary format with `mbits` stored mantissa bits, minimum
// normal exponent emin and maximum finite value fmax, in double: the
// quantum of x's binade (or of the subnormals), rint (ties to even), and
// overflow to inf past fmax. Returns the rounded magnitude.
static double ref_round(double a, int mbits, int emin, double fmax)
{
    int e;
    frexp(a, &e);                       // a = f 2^e, f in [0.5, 1)
    int q = (e - 1 < emin ? emin : e - 1) - mbits;
    double r = ldexp(rint(ldexp(a, -q)), q);
    return r > fmax ? INFINITY : r;
}

// Bits of a rounded magnitude r in a format with `mbits` mantissa bits,
// exponent bias `bias` and minimum normal exponent emin (r representable).
static uint32_t ref_encode(double r, int mbits, int bias, int emin,
                           uint32_t inf_bits)
{
    if (r == INFINITY)
        return inf_bits;
    if (r < ldexp(1.0, emin))           // subnormal or zero
        return (uint32_t)ldexp(r, mbits - emin);
    int e;
    frexp(r, &e);
    double frac = ldexp(r, 1 - e) - 1.0;   // [0, 1)
    return (uint32_t)(e - 1 + bias) << mbits | (uint32_t)ldexp(frac, mbits);
}

static uint16_t ref_f16_encode(float x)
{
    uint32_t u = bits_of(x);
    uint16_t sign = (uint16_t)(u >> 31 << 15);
    if (isnan(x))   // quiet, sign and the top 9 payload bits
        return (uint16_t)(sign | 0x7e00u | ((u & 0x7fffffu) >> 13));
    double r = ref_round(fabs((double)x), 10, -14, 65504.0);
    return (uint16_t)(sign | ref_encode(r, 10, 15, -14, 0x7c00u));
}

static uint16_t ref_bf16_encode(float x)
{
    uint32_t u = bits_of(x);
    uint16_t sign = (uint16_t)(u >> 31 << 15);
    if (isnan(x))
        return (uint16_t)((u >> 16) | 0x0040u);
    double r = ref_round(fabs((double)x), 7, -126, ldexp(255, 127 - 7));
    return (uint16_t)(sign | ref_encode(r, 7, 127, -126, 0x7f80u));
}

// ---- the inputs ----------------------------------------------------------

typedef struct fvec { float *x; size_t n, cap; } fvec;

static void push(fvec *v, float x)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 4096;
        v->x = realloc(v->x, v->cap * sizeof(float));
        ck_assert(v->x != NULL);
    }
    v->x[v->n++] = x;
}

static void push_bits(fvec *v, uint32_t u) { push(v, float_of(u)); }

// x, its neighbours one fp32 ulp away, and all of them negated.
static void push_around(fvec *v, float x)
{
    float pts[3] = { x, nextafterf(x, -INFINITY), nextafterf(x, INFINITY) };
    for (int i = 0; i < 3; i++) {
        push(v, pts[i]);
        push(v, -pts[i]);
    }
}

static uint32_t (*const decode_of[2])(uint16_t) = { ref_f16_decode,
                                                    ref_bf16_decode };
static uint16_t (*const encode_of[2])(float) = { ref_f16_encode,
                                                 ref_bf16_encode };
static const mhsa_dtype dtypes[2] = { MHSA_F16, MHSA_BF16 };

// Every rounding class of fp32 -> dtype (index 0 F16, 1 BF16).
static fvec encode_inputs(int which)
{
    fvec v = { 0 };
    uint16_t top = which == 0 ? 0x7bffu : 0x7f7fu;   // largest finite
    for (uint32_t h = 0; h <= top; h++) {
        float lo = float_of(decode_of[which]((uint16_t)h));
        // The next value up; past the largest finite one, the power of two
        // the exponent range would give next (the overflow midpoint).
        double hi = h < top ? (double)float_of(decode_of[which](
                                  (uint16_t)(h + 1)))
                  : which == 0 ? 65536.0 : ldexp(1.0, 128);
        double mid = ((double)lo + hi) / 2;   // exact in fp32
        push_around(&v, lo);
        push_around(&v, (float)mid);
        // A quarter and three quarters of the way (no ties): the plain
        // round-down and round-up cases inside each gap.
        push_around(&v, (float)(((double)lo * 3 + hi) / 4));
        push_around(&v, (float)(((double)lo + hi * 3) / 4));
    }
    // Signed zeros, infinities, far overflow, tiny values, fp32
    // subnormals, NaN payloads (quiet and signalling, both signs, payload
    // only in the low bits that F16 drops).
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7f7fffffu,
        0xff7fffffu, 0x00000001u, 0x80000001u, 0x007fffffu, 0x00400000u,
        0x33000000u, 0x33000001u, 0x32ffffffu, 0x477fe000u, 0x477fefffu,
        0x477ff000u, 0x477ff001u, 0x47800000u, 0x7fc00000u, 0xffc00000u,
        0x7f800001u, 0xff800001u, 0x7fa00000u, 0x7f802000u, 0x7f801fffu,
        0x7fbfffffu, 0x7fffffffu, 0xffffffffu, 0x7fc01234u, 0xffb6db6du,
        0x7f80ffffu, 0x7f810000u, 0x7fc0ffffu, 0x38800000u, 0x387fffffu,
        0x387fe000u, 0x387ff000u, 0x3f800000u, 0x3f808000u, 0x3f818000u,
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        push_bits(&v, special[i]);
    // Every fp32 exponent: a few mantissas each (the bits rounding looks
    // at, set and clear), both signs.
    static const uint32_t mant[] = { 0, 1, 0x1000, 0x0fff, 0x1001, 0x2000,
                                     0x3000, 0x8000, 0x7fff, 0x8001, 0x18000,
                                     0x7fffff, 0x400000, 0x7fe000, 0x7ff000 };
    for (uint32_t e = 0; e < 256; e++)
        for (size_t i = 0; i < sizeof mant / sizeof mant[0]; i++) {
            push_bits(&v, e << 23 | mant[i]);
            push_bits(&v, 0x80000000u | e << 23 | mant[i]);
        }
    // Random bit patterns (every class, NaNs included) and random values
    // around the format's range.
    // Quick mode (util.h's test_quick: the slow CI runs) takes 1/16 of
    // them, not test_count's quarter: the classes above already hold every
    // rounding case, and this loop is most of the test's time under qemu.
    size_t nrand = test_quick() ? (size_t)1 << 16 : (size_t)1 << 20;
    if (test_quick())
        printf("note: quick mode (MHSA_TEST_QUICK): random sample of %zu "
               "patterns\n", nrand);
    rng g = { 0xc0417 + (uint64_t)which };
    for (size_t i = 0; i < nrand; i++) {
        uint32_t u = (uint32_t)rng_u64(&g);
        push_bits(&v, u);
        // exponents near the 16-bit format's range
        uint32_t e = which == 0 ? (uint32_t)rng_int(&g, 100, 145)
                                : (uint32_t)rng_int(&g, 0, 255);
        push_bits(&v, (u & 0x807fffffu) | e << 23);
    }
    return v;
}

// ---- helpers for 16-bit buffers with canaries ---------------------------

enum { CAN16 = 8 };
static const uint16_t canary16 = 0xa5c3;

static uint16_t *alloc16(size_t n)
{
    uint16_t *p = malloc((n + 2 * CAN16) * sizeof(uint16_t));
    ck_assert(p != NULL);
    for (size_t i = 0; i < CAN16; i++)
        p[i] = p[CAN16 + n + i] = canary16;
    return p + CAN16;
}

static int guard16_ok(const uint16_t *p, size_t n)
{
    for (size_t i = 1; i <= CAN16; i++)
        if (p[-(ptrdiff_t)i] != canary16 || p[n + i - 1] != canary16)
            return 0;
    return 1;
}

static void free16(uint16_t *p) { free(p - CAN16); }

// ---- the tests -----------------------------------------------------------

// All 65536 patterns of each 16-bit type to fp32: the value built in double,
// and bit for bit the scalar table.
START_TEST(decode_all_patterns)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    uint16_t *h = alloc16(65536);
    float *y = alloc_guarded(65536), *ys = alloc_guarded(65536);
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    for (int w = 0; w < 2; w++) {
        k->cvt_to_f32(65536, h, dtypes[w], y);
        mhsa_kernels_scalar.cvt_to_f32(65536, h, dtypes[w], ys);
        ck_assert(guard_ok(y, 65536) && guard16_ok(h, 65536));
        size_t bad = 0;
        for (uint32_t i = 0; i < 65536; i++) {
            uint32_t want = decode_of[w]((uint16_t)i);
            if ((bits_of(y[i]) != want || bits_of(ys[i]) != want)
                && bad++ < 10)
                printf("%s %s decode %04x: %08x (scalar %08x), want %08x\n",
                       k->name, w ? "bf16" : "f16", i, bits_of(y[i]),
                       bits_of(ys[i]), want);
        }
        ck_assert_msg(bad == 0, "%s %s: %zu of 65536 decodes wrong", k->name,
                      w ? "bf16" : "f16", bad);
    }
    free16(h);
    free_guarded(y);
    free_guarded(ys);
}
END_TEST

// fp32 -> F16 / BF16 on every rounding class, against the double-rounding
// reference and the scalar table; then those results decoded back.
START_TEST(encode_rounding_classes)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (int w = 0; w < 2; w++) {
        fvec v = encode_inputs(w);
        uint16_t *h = alloc16(v.n), *hs = alloc16(v.n);
        float *x = alloc_guarded(v.n);
        memcpy(x, v.x, v.n * sizeof(float));
        k->cvt_from_f32(v.n, x, h, dtypes[w]);
        mhsa_kernels_scalar.cvt_from_f32(v.n, x, hs, dtypes[w]);
        ck_assert(guard16_ok(h, v.n) && guard_ok(x, v.n));
        size_t bad = 0;
        for (size_t i = 0; i < v.n; i++) {
            uint16_t want = encode_of[w](x[i]);
            if (h[i] != want || hs[i] != want) {
                if (bad++ < 10)
                    printf("%s %s encode %08x (%.9g): %04x (scalar %04x), "
                           "want %04x\n", k->name, w ? "bf16" : "f16",
                           bits_of(x[i]), x[i], h[i], hs[i], want);
            }
        }
        ck_assert_msg(bad == 0, "%s %s: %zu of %zu encodes wrong", k->name,
                      w ? "bf16" : "f16", bad, v.n);
        // Round trip: decoding what was encoded gives the rounded value.
        float *back = alloc_guarded(v.n);
        k->cvt_to_f32(v.n, h, dtypes[w], back);
        for (size_t i = 0; i < v.n; i++)
            bad += bits_of(back[i]) != decode_of[w](h[i]);
        ck_assert_msg(bad == 0, "%s %s: %zu round trips wrong", k->name,
                      w ? "bf16" : "f16", bad);
        free_guarded(back);
        free16(h);
        free16(hs);
        free_guarded(x);
        free(v.x);
    }
}
END_TEST

// A few hand-picked results, so a reference that shares a mistake with
// half.h cannot pass unnoticed.
START_TEST(encode_known_values)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const struct { uint32_t x; uint16_t f16, bf16; } cases[] = {
        { 0x3f800000u, 0x3c00, 0x3f80 },   // 1
        { 0xc0000000u, 0xc000, 0xc000 },   // -2
        { 0x477fe000u, 0x7bff, 0x4780 },   // 65504: F16 max
        { 0x477fefffu, 0x7bff, 0x4780 },   // just below 65520
        { 0x477ff000u, 0x7c00, 0x4780 },   // 65520: tie, odd -> inf
        { 0xc77ff000u, 0xfc00, 0xc780 },
        { 0x33800000u, 0x0001, 0x3380 },   // 2^-24: smallest subnormal
        { 0x33000000u, 0x0000, 0x3300 },   // 2^-25: tie -> 0 (even)
        { 0x33000001u, 0x0001, 0x3300 },   // just above: rounds up
        { 0xb3000000u, 0x8000, 0xb300 },   // -2^-25 -> -0
        { 0x33c00000u, 0x0002, 0x33c0 },   // 1.5 * 2^-24: tie -> 2 (even)
        { 0x34200000u, 0x0002, 0x3420 },   // 2.5 * 2^-24: tie -> 2 (even)
        { 0x387fc000u, 0x03ff, 0x3880 },   // largest F16 subnormal
        { 0x387fe000u, 0x0400, 0x3880 },   // tie between it and 2^-14
        { 0x3f801000u, 0x3c00, 0x3f80 },   // 1 + 2^-11: tie -> even (1)
        { 0x3f803000u, 0x3c02, 0x3f80 },   // 1 + 3*2^-11: tie -> even
        { 0x3f808000u, 0x3c04, 0x3f80 },   // 1 + 2^-8: BF16 tie -> 1
        { 0x3f818000u, 0x3c0c, 0x3f82 },   // 1 + 3*2^-8: BF16 tie -> up
        { 0x7f7fffffu, 0x7c00, 0x7f80 },   // FLT_MAX: BF16 overflows
        { 0x7f7f7fffu, 0x7c00, 0x7f7f },   // just below the BF16 tie
        { 0x80000000u, 0x8000, 0x8000 },   // -0
        { 0x00000001u, 0x0000, 0x0000 },   // fp32 subnormal
        { 0x80400000u, 0x8000, 0x8040 },   // fp32 subnormal, BF16 keeps it
        { 0xff800000u, 0xfc00, 0xff80 },   // -inf
        { 0x7f800001u, 0x7e00, 0x7fc0 },   // sNaN, payload in low bits
        { 0xffa02000u, 0xff01, 0xffe0 },   // -sNaN with payload
        { 0x7fc00000u, 0x7e00, 0x7fc0 },   // qNaN
        { 0x7fffffffu, 0x7fff, 0x7fff },
    };
    enum { N = sizeof cases / sizeof cases[0] };
    float x[N];
    uint16_t h[N], b[N];
    for (int i = 0; i < N; i++)
        x[i] = float_of(cases[i].x);
    k->cvt_from_f32(N, x, h, MHSA_F16);
    k->cvt_from_f32(N, x, b, MHSA_BF16);
    for (int i = 0; i < N; i++) {
        ck_assert_msg(h[i] == cases[i].f16 && b[i] == cases[i].bf16,
                      "%s %08x: f16 %04x bf16 %04x, want %04x %04x", k->name,
                      cases[i].x, h[i], b[i], cases[i].f16, cases[i].bf16);
        ck_assert(ref_f16_encode(x[i]) == cases[i].f16);
        ck_assert(ref_bf16_encode(x[i]) == cases[i].bf16);
    }
}
END_TEST

// Every length 0..70 and some long ones, at odd offsets from malloc's
// alignment, both directions and all three dtypes (F32 copies): bits equal
// scalar, and nothing before or after the n elements is touched.
START_TEST(lengths_offsets_and_bounds)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t longs[] = { 127, 128, 129, 255, 256, 257, 1000, 4099 };
    rng g = { 77 };
    for (size_t t = 0; t < 71 + sizeof longs / sizeof longs[0]; t++) {
        size_t n = t < 71 ? t : longs[t - 71];
        for (size_t off = 0; off < 3; off++) {
            float *x = alloc_guarded(n + off), *y = alloc_guarded(n + off);
            float *ys = alloc_guarded(n + off);
            uint16_t *h = alloc16(n + off), *hs = alloc16(n + off);
            for (size_t i = 0; i < n + off; i++) {
                uint32_t u = (uint32_t)rng_u64(&g);
                // mostly ordinary values, some arbitrary patterns
                x[i] = i % 5 ? rng_uniform(&g, -70000.0f, 70000.0f)
                             : float_of(u);
            }
            for (int w = 0; w < 3; w++) {
                mhsa_dtype dt = w < 2 ? dtypes[w] : MHSA_F32;
                float *xs = x + off;
                if (dt == MHSA_F32) {
                    // F32 both ways is a copy, bit for bit.
                    memset(y, 0, (n + off) * sizeof(float));
                    k->cvt_from_f32(n, xs, y + off, dt);
                    ck_assert(memcmp(y + off, xs, n * sizeof(float)) == 0);
                    k->cvt_to_f32(n, xs, dt, y + off);
                    ck_assert(memcmp(y + off, xs, n * sizeof(float)) == 0);
                    ck_assert(guard_ok(y, n + off) && guard_ok(x, n + off));
                    continue;
                }
                for (size_t i = 0; i < n + off; i++)
                    h[i] = hs[i] = canary16;
                k->cvt_from_f32(n, xs, h + off, dt);
                mhsa_kernels_scalar.cvt_from_f32(n, xs, hs + off, dt);
                ck_assert_msg(guard16_ok(h, n + off) && guard_ok(x, n + off),
                              "%s n %zu off %zu: wrote past the end",
                              k->name, n, off);
                for (size_t i = 0; i < off; i++)
                    ck_assert(h[i] == canary16);
                ck_assert_msg(memcmp(h, hs, (n + off) * 2) == 0,
                              "%s n %zu off %zu dt %d: differs from scalar",
                              k->name, n, off, (int)dt);
                for (size_t i = 0; i < n + off; i++)
                    y[i] = ys[i] = 5.5f;
                k->cvt_to_f32(n, h + off, dt, y + off);
                mhsa_kernels_scalar.cvt_to_f32(n, h + off, dt, ys + off);
                ck_assert(guard_ok(y, n + off) && guard16_ok(h, n + off));
                for (size_t i = 0; i < off; i++)
                    ck_assert(y[i] == 5.5f);
                ck_assert_msg(memcmp(y, ys, (n + off) * 4) == 0,
                              "%s n %zu off %zu dt %d: to_f32 differs",
                              k->name, n, off, (int)dt);
            }
            free_guarded(x);
            free_guarded(y);
            free_guarded(ys);
            free16(h);
            free16(hs);
        }
    }
}
END_TEST

// Optional: all 2^32 fp32 patterns, every table against scalar.
START_TEST(encode_exhaustive)
{
    const char *e = getenv("MHSA_TEST_EXHAUSTIVE");
    if (!e || !*e || strcmp(e, "0") == 0) {
        printf("skip: MHSA_TEST_EXHAUSTIVE not set\n");
        return;
    }
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    enum { CH = 1 << 16 };
    float *x = malloc(CH * sizeof(float));
    uint16_t *h = malloc(CH * 2), *hs = malloc(CH * 2);
    for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += CH) {
        for (uint32_t i = 0; i < CH; i++)
            x[i] = float_of((uint32_t)(base + i));
        for (int w = 0; w < 2; w++) {
            k->cvt_from_f32(CH, x, h, dtypes[w]);
            mhsa_kernels_scalar.cvt_from_f32(CH, x, hs, dtypes[w]);
            if (memcmp(h, hs, CH * 2) != 0)
                for (uint32_t i = 0; i < CH; i++)
                    ck_assert_msg(h[i] == hs[i], "%s %s %08x: %04x vs %04x",
                                  k->name, w ? "bf16" : "f16",
                                  bits_of(x[i]), h[i], hs[i]);
        }
    }
    printf("%s: all 2^32 fp32 patterns equal scalar\n", k->name);
    free(x);
    free(h);
    free(hs);
}
END_TEST

// ---- the hardware's F16C as a second reference (x86 only) ---------------
#if defined(__x86_64__) && MHSA_HAVE_AVX2
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("f16c,avx"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("f16c,avx")
#endif
#include <immintrin.h>

static void hw_encode(size_t n, const float *x, uint16_t *h)
{
    for (size_t i = 0; i + 4 <= n; i += 4)
        _mm_storel_epi64((__m128i *)(h + i),
                         _mm_cvtps_ph(_mm_loadu_ps(x + i),
                                      _MM_FROUND_TO_NEAREST_INT));
}

static void hw_decode(size_t n, const uint16_t *h, float *y)
{
    for (size_t i = 0; i + 4 <= n; i += 4)
        _mm_storeu_ps(y + i, _mm_cvtph_ps(_mm_loadl_epi64(
                                 (const __m128i *)(h + i))));
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

START_TEST(f16_matches_hardware)
{
    // The AVX2 table is installed only on CPUs with F16C (dispatch.c).
    if (!mhsa_kernels_for(MHSA_ISA_AVX2)) {
        printf("skip: no F16C on this CPU\n");
        return;
    }
    const mhsa_kernels *s = &mhsa_kernels_scalar;
    fvec v = encode_inputs(0);
    size_t n = v.n & ~(size_t)3;
    uint16_t *h = malloc(n * 2), *hw = malloc(n * 2);
    s->cvt_from_f32(n, v.x, h, MHSA_F16);
    hw_encode(n, v.x, hw);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (h[i] != hw[i] && bad++ < 10)
            printf("f16 encode %08x: scalar %04x, F16C %04x\n",
                   bits_of(v.x[i]), h[i], hw[i]);
    ck_assert_msg(bad == 0, "%zu of %zu f16 encodes differ from F16C", bad,
                  n);
    free(h);
    free(hw);
    free(v.x);

    uint16_t *all = malloc(65536 * 2);
    float *y = malloc(65536 * 4), *yw = malloc(65536 * 4);
    for (uint32_t i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    s->cvt_to_f32(65536, all, MHSA_F16, y);
    hw_decode(65536, all, yw);
    for (uint32_t i = 0; i < 65536; i++) {
        uint32_t a = bits_of(y[i]), b = bits_of(yw[i]);
        // F16 signalling NaN: the hardware sets the quiet bit.
        int snan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff) && !(i & 0x200);
        if (!(snan ? (a | 0x400000u) == b : a == b) && bad++ < 10)
            printf("f16 decode %04x: scalar %08x, F16C %08x\n", i, a, b);
    }
    ck_assert_msg(bad == 0, "%zu f16 decodes differ from F16C", bad);
    free(all);
    free(y);
    free(yw);
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("kernel_convert");
    TCase *tc = tcase_create("convert");
    LOOP(tc, decode_all_patterns);
    LOOP(tc, encode_rounding_classes);
    LOOP(tc, encode_known_values);
    LOOP(tc, lengths_offsets_and_bounds);
    LOOP(tc, encode_exhaustive);
#if defined(__x86_64__) && MHSA_HAVE_AVX2
    tcase_add_test(tc, f16_matches_hardware);
#endif
    suite_add_tcase(s, tc);
    return run_suite(s);
}
