// test_kernel_permute.c — the strided 4-D copy on every ISA's row op: splitting a
// (B, T, 3D) QKV projection into three (B, H, T, dh) tensors and merging
// them back is a bitwise round trip (special values included), the scale is
// folded with one rounding, and every ISA equals scalar bit for bit.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/permute.h"
#include "util.h"

#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS)

typedef struct shape { size_t b, t, h, dh; } shape;

static const shape shapes[] = {
    { 1, 1, 1, 1 }, { 2, 3, 2, 1 }, { 1, 7, 3, 5 }, { 2, 13, 3, 8 },
    { 1, 5, 2, 17 }, { 3, 11, 5, 13 }, { 2, 31, 4, 64 }, { 1, 3, 1, 97 },
    { 2, 9, 7, 7 }, { 1, 4, 2, 9 }, { 1, 2, 3, 16 }, { 2, 5, 1, 23 },
    // One head (n2 = 1, as split.c hands them): the short-row nests run
    // the rows innermost.
    { 3, 7, 1, 8 }, { 2, 5, 1, 16 }, { 1, 6, 1, 3 },
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

// Random values with some special bit patterns (NaN payload, -0, inf,
// denormal) that a bitwise copy must keep.
static void fill_special(rng *g, float *x, size_t n)
{
    fill_uniform(g, x, n, -4.0f, 4.0f);
    static const uint32_t bits[] = { 0x7fc12345u, 0x80000000u, 0x7f800000u,
                                     0x00000007u, 0xff800000u };
    for (size_t i = 0; i < n; i += 5) {
        uint32_t u = bits[rng_int(g, 0, 4)];
        memcpy(&x[i], &u, sizeof u);
    }
}

// Splits part p (0 = q, 1 = k, 2 = v) of x (B, T, 3D) into y (B, H, T, dh).
static void split(const mhsa_kernels *k, const shape *s, const float *x,
                  int p, float scale, float *y)
{
    size_t d = s->h * s->dh;
    mhsa_permute_args a = {
        s->b, s->t, s->h, s->dh,
        x + (size_t)p * d, s->t * 3 * d, 3 * d, s->dh,
        y, s->h * s->t * s->dh, s->dh, s->t * s->dh,
        scale,
    };
    mhsa__permute_4d(k, &a);
}

// Merges y (B, H, T, dh) into part p of x (B, T, 3D).
static void merge(const mhsa_kernels *k, const shape *s, const float *y,
                  int p, float *x)
{
    size_t d = s->h * s->dh;
    mhsa_permute_args a = {
        s->b, s->t, s->h, s->dh,
        y, s->h * s->t * s->dh, s->dh, s->t * s->dh,
        x + (size_t)p * d, s->t * 3 * d, 3 * d, s->dh,
        1.0f,
    };
    mhsa__permute_4d(k, &a);
}

START_TEST(split_merge_round_trip)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t si = 0; si < N_SHAPES; si++) {
        const shape *s = &shapes[si];
        size_t d = s->h * s->dh, nx = s->b * s->t * 3 * d, ny = nx / 3;
        rng g = { 10 + si };
        float *x = alloc_guarded(nx), *back = alloc_guarded(nx);
        float *y = alloc_guarded(ny);
        fill_special(&g, x, nx);
        memset(back, 0xAB, nx * sizeof(float));
        for (int p = 0; p < 3; p++) {
            fill_nan(y, ny);
            split(k, s, x, p, 1.0f, y);
            ck_assert(guard_ok(y, ny));
            for (size_t b = 0; b < s->b; b++)
                for (size_t h = 0; h < s->h; h++)
                    for (size_t t = 0; t < s->t; t++)
                        for (size_t e = 0; e < s->dh; e++) {
                            const float *want = x + (b * s->t + t) * 3 * d
                                              + (size_t)p * d + h * s->dh + e;
                            const float *got = y + ((b * s->h + h) * s->t + t)
                                             * s->dh + e;
                            ck_assert_msg(memcmp(want, got, 4) == 0,
                                          "isa %s shape (%zu,%zu,%zu,%zu) "
                                          "part %d at b%zu h%zu t%zu e%zu",
                                          k->name, s->b, s->t, s->h, s->dh,
                                          p, b, h, t, e);
                        }
            merge(k, s, y, p, back);
        }
        ck_assert_msg(guard_ok(back, nx)
                      && memcmp(x, back, nx * sizeof(float)) == 0,
                      "isa %s round trip differs, shape (%zu,%zu,%zu,%zu)",
                      k->name, s->b, s->t, s->h, s->dh);
        free_guarded(x);
        free_guarded(back);
        free_guarded(y);
    }
}
END_TEST

// Scale folded into the split: scale * x with one rounding.
START_TEST(split_with_scale)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const float scales[] = { 0.125f, 0.35355339f, -2.0f, 0.0f };
    for (size_t si = 0; si < N_SHAPES; si++)
        for (int sc = 0; sc < 4; sc++) {
            const shape *s = &shapes[si];
            size_t d = s->h * s->dh, nx = s->b * s->t * 3 * d, ny = nx / 3;
            rng g = { 100 + si };
            float *x = malloc(nx * sizeof(float)), *y = alloc_guarded(ny);
            fill_uniform(&g, x, nx, -4.0f, 4.0f);
            split(k, s, x, 0, scales[sc], y);
            ck_assert(guard_ok(y, ny));
            for (size_t b = 0; b < s->b; b++)
                for (size_t h = 0; h < s->h; h++)
                    for (size_t t = 0; t < s->t; t++)
                        for (size_t e = 0; e < s->dh; e++) {
                            float want = scales[sc]
                                       * x[(b * s->t + t) * 3 * d + h * s->dh
                                           + e];
                            float got = y[((b * s->h + h) * s->t + t) * s->dh
                                          + e];
                            ck_assert_msg(memcmp(&want, &got, 4) == 0,
                                          "isa %s scale %g shape (%zu,%zu,"
                                          "%zu,%zu): %g vs %g", k->name,
                                          scales[sc], s->b, s->t, s->h,
                                          s->dh, got, want);
                        }
            free(x);
            free_guarded(y);
        }
}
END_TEST

// Every ISA equals scalar bit for bit, on special values too, for general
// strides (padded rows on both sides).
START_TEST(matches_scalar_bitwise)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (unsigned seed = 1; seed <= 40; seed++) {
        rng g = { 5000 + seed };
        size_t n0 = (size_t)rng_int(&g, 1, 3), n1 = (size_t)rng_int(&g, 1, 5);
        size_t n2 = (size_t)rng_int(&g, 1, 4), n3 = (size_t)rng_int(&g, 1, 40);
        // src (n0, n1, n2, n3) row-major with padded n3; dst (n0, n2, n1, n3)
        size_t ps = n3 + (size_t)rng_int(&g, 0, 3);
        size_t pd = n3 + (size_t)rng_int(&g, 0, 3);
        size_t ns = n0 * n1 * n2 * ps, nd = n0 * n2 * n1 * pd;
        float scale = seed % 3 == 0 ? 1.0f : rng_uniform(&g, -2.0f, 2.0f);
        float *src = malloc(ns * sizeof(float));
        float *d1 = alloc_guarded(nd), *d2 = alloc_guarded(nd);
        fill_special(&g, src, ns);
        memset(d1, 0x5A, nd * sizeof(float));
        memset(d2, 0x5A, nd * sizeof(float));
        mhsa_permute_args a = {
            n0, n1, n2, n3,
            src, n1 * n2 * ps, n2 * ps, ps,
            d1, n2 * n1 * pd, pd, n1 * pd,
            scale,
        };
        mhsa__permute_4d(k, &a);
        a.dst = d2;
        mhsa__permute_4d(&mhsa_kernels_scalar, &a);
        ck_assert_msg(guard_ok(d1, nd) && memcmp(d1, d2, nd * sizeof(float))
                      == 0, "isa %s differs from scalar: (%zu,%zu,%zu,%zu) "
                      "scale %g seed %u", k->name, n0, n1, n2, n3, scale,
                      seed);
        free(src);
        free_guarded(d1);
        free_guarded(d2);
    }
}
END_TEST

// Rows of up to 16 floats are copied by the loop nest itself (permute.c),
// longer ones by the table's scale_copy: both give the row op's bits, for
// every length either side of the switch and special values included.
START_TEST(short_rows_match_row_op)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n3 = 1; n3 <= 19; n3++)
        for (int sc = 0; sc < 2; sc++) {
            rng g = { 7000 + n3 * 2 + (size_t)sc };
            size_t n1 = 3, n2 = 2, n = n1 * n2 * n3;
            float scale = sc ? rng_uniform(&g, -2.0f, 2.0f) : 1.0f;
            float *src = malloc(n * sizeof(float));
            float *d1 = alloc_guarded(n), *d2 = alloc_guarded(n);
            fill_special(&g, src, n);
            // (n1, n2, n3) -> (n2, n1, n3)
            mhsa_permute_args a = { 1, n1, n2, n3, src, 0, n2 * n3, n3,
                                    d1, 0, n3, n1 * n3, scale };
            mhsa__permute_4d(k, &a);
            for (size_t i1 = 0; i1 < n1; i1++)
                for (size_t i2 = 0; i2 < n2; i2++)
                    k->scale_copy(n3, src + (i1 * n2 + i2) * n3,
                                  d2 + (i2 * n1 + i1) * n3, scale);
            ck_assert_msg(guard_ok(d1, n) &&
                          memcmp(d1, d2, n * sizeof(float)) == 0,
                          "isa %s: rows of %zu, scale %g differ from "
                          "scale_copy", k->name, n3, scale);
            free(src);
            free_guarded(d1);
            free_guarded(d2);
        }
}
END_TEST

// scale_copy in place (dst == src, the attention's O /= l) gives the
// bits of a copy into another row: lengths 1..70 (vector widths, their
// edges, primes), scale 1 and others, special values, nothing past n
// written.
START_TEST(scale_copy_in_place)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n = 1; n <= 70; n++)
        for (int sc = 0; sc < 3; sc++) {
            rng g = { 8100 + n * 3 + (size_t)sc };
            float scale = sc == 0   ? 1.0f
                          : sc == 1 ? rng_uniform(&g, -2.0f, 2.0f)
                                    : 1.0f / 3.0f;
            float *src = malloc(n * sizeof(float));
            float *out = alloc_guarded(n), *inp = alloc_guarded(n);
            fill_special(&g, src, n);
            memcpy(inp, src, n * sizeof(float));
            k->scale_copy(n, src, out, scale);
            k->scale_copy(n, inp, inp, scale);
            ck_assert_msg(guard_ok(inp, n) &&
                              memcmp(out, inp, n * sizeof(float)) == 0,
                          "isa %s: scale_copy in place of %zu, scale %g",
                          k->name, n, scale);
            free(src);
            free_guarded(out);
            free_guarded(inp);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_permute");
    TCase *tc = tcase_create("permute");
    LOOP(tc, split_merge_round_trip);
    LOOP(tc, split_with_scale);
    LOOP(tc, matches_scalar_bitwise);
    LOOP(tc, short_rows_match_row_op);
    LOOP(tc, scale_copy_in_place);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
