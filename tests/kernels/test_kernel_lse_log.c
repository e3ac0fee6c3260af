// test_kernel_lse_log.c — the log-sum-exp's logarithm (kernels/log_f32.h)
// and the tables' vector lse_add_log (kernels.h).
//  - the reference against the C library's double log: within one float
//    ulp of log(x) rounded, for floats of every exponent; the special
//    values as the header lists them;
//  - every table's lse_add_log bit for bit against the reference's loop
//    (NaN payloads included), for lengths off the 4, 8 and 16 lanes, over
//    sums of every kind (the softmax's 1 .. n, any positive float,
//    subnormals, zeros, infinities, negatives, NaNs), leaving everything
//    past n untouched. The AVX-512 kernel runs native and SIMDe-emulated
//    (one loop index more) on a CPU that has it.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/log_f32.h"
#include "kernels/half.h"
#include "util.h"

#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS + 1)

// Ulps between two finite floats of the same sign (or zero).
static int64_t ulps(float a, float b)
{
    int64_t x = mhsa_f32_bits(a) & 0x7fffffffu, y = mhsa_f32_bits(b) & 0x7fffffffu;
    if ((mhsa_f32_bits(a) ^ mhsa_f32_bits(b)) & 0x80000000u)
        return x + y;
    return x > y ? x - y : y - x;
}

START_TEST(reference_is_log)
{
    rng g = { 4242 };
    int n = test_count(200000), exact = 0;
    for (int i = 0; i < n; i++) {
        // A positive finite float of any exponent (subnormals included),
        // and every 16th a softmax sum, 1 .. 4096.
        float x = i % 16 ? mhsa_bits_f32((uint32_t)rng_int(&g, 1, 0x7f7fffff))
                         : rng_uniform(&g, 1.0f, 4096.0f);
        float got = mhsa_log_f32(x), want = (float)log((double)x);
        ck_assert_msg(ulps(got, want) <= 1, "log(%a) = %a, libm %a", x, got,
                      want);
        exact += got == want;
    }
    // Correctly rounded but for ties closer than the series' error.
    ck_assert_msg(exact >= n - n / 10000, "only %d of %d as libm", exact, n);
    ck_assert(mhsa_f32_bits(mhsa_log_f32(1.0f)) == 0u);   // +0
    ck_assert(mhsa_log_f32(0.0f) == -INFINITY);
    ck_assert(mhsa_log_f32(-0.0f) == -INFINITY);
    ck_assert(mhsa_log_f32(INFINITY) == INFINITY);
    ck_assert(mhsa_f32_bits(mhsa_log_f32(-1.0f)) == MHSA_LOG_NAN_BITS);
    ck_assert(mhsa_f32_bits(mhsa_log_f32(-INFINITY)) == MHSA_LOG_NAN_BITS);
    ck_assert(mhsa_f32_bits(mhsa_log_f32(mhsa_bits_f32(0xffc00123u))) == 0xffc00123u);
    ck_assert(mhsa_f32_bits(mhsa_log_f32(mhsa_bits_f32(0x7f800001u))) == 0x7fc00001u);
    ck_assert(mhsa_log_f32(2.0f) == (float)log(2.0));
}
END_TEST

// Sums of every kind: special bits, the edges of the [0.75, 1.5) range,
// softmax sums, any positive float.
static float some_sum(rng *g, int i)
{
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x00000001u, 0x007fffffu, 0x00800000u,
        0x7f7fffffu, 0x7f800000u, 0xff800000u, 0xbf800000u, 0x7fc00000u,
        0xffc00000u, 0x7f800001u, 0xffbfffffu, 0x3f800000u, 0x3fc00000u,
        0x3fbfffffu, 0x3f400000u, 0x3f3fffffu, 0x80000001u,
    };
    enum { N_SPECIAL = sizeof special / sizeof special[0] };
    switch (rng_int(g, 0, 3)) {
    case 0:
        return mhsa_bits_f32(special[(size_t)i % N_SPECIAL]);
    case 1:
        return (float)rng_int(g, 1, 512) + rng_uniform(g, 0.0f, 1.0f);
    case 2:
        return mhsa_bits_f32((uint32_t)rng_int(g, 1, 0x7f7fffff));
    default:
        return rng_uniform(g, 0.5f, 2.0f);
    }
}

static const size_t n_list[] = { 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23,
                                 31, 32, 33, 47, 64, 97, 384 };
enum { N_LIST = sizeof n_list / sizeof n_list[0], GUARD = 19 };

START_TEST(kernel_equals_reference)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    // Every table fills the slot (the scalar reference where it has no
    // vector kernel): the drivers call it without a check.
    ck_assert_msg(k->lse_add_log != NULL, "isa %s: lse_add_log empty",
                  k->name);
    rng g = { 77 + (uint64_t)_i };
    for (size_t t = 0; t < N_LIST; t++)
        for (int rep = 0; rep < 8; rep++) {
            size_t n = n_list[t];
            float *lsum = malloc((n + GUARD) * sizeof(float));
            float *lse = malloc((n + GUARD) * sizeof(float));
            float *want = malloc((n + GUARD) * sizeof(float));
            float *keep = malloc((n + GUARD) * sizeof(float));
            for (size_t i = 0; i < n + GUARD; i++) {
                lsum[i] = some_sum(&g, (int)(i + t));
                // Row maxima: finite mostly, -inf (a row that saw nothing
                // never gets here, but the kernel must not care), NaN.
                int kind = rng_int(&g, 0, 9);
                lse[i] = kind == 0 ? -INFINITY : kind == 1 ? NAN
                         : rng_uniform(&g, -80.0f, 80.0f);
                keep[i] = lse[i];
                want[i] = i < n ? lse[i] + mhsa_log_f32(lsum[i]) : lse[i];
            }
            k->lse_add_log(n, lse, lsum);
            for (size_t i = 0; i < n + GUARD; i++) {
                // Both NaN: C may add in either order, and x86 keeps
                // the first operand's payload; either payload will do.
                float lg = i < n ? mhsa_log_f32(lsum[i]) : 0.0f;
                int either = isnan(keep[i]) && isnan(lg) &&
                             (mhsa_f32_bits(lse[i]) == mhsa_f32_bits(keep[i]) ||
                              mhsa_f32_bits(lse[i]) == mhsa_f32_bits(lg));
                ck_assert_msg(either || mhsa_f32_bits(lse[i]) == mhsa_f32_bits(want[i]),
                              "isa %s n %zu: row %zu, log(%08x) from %08x: "
                              "%08x, want %08x", k->name, n, i,
                              mhsa_f32_bits(lsum[i]), mhsa_f32_bits(keep[i]), mhsa_f32_bits(lse[i]),
                              mhsa_f32_bits(want[i]));
            }
            free(lsum);
            free(lse);
            free(want);
            free(keep);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_lse_log");
    TCase *tc = tcase_create("lse_log");
    tcase_add_test(tc, reference_is_log);
    LOOP(tc, kernel_equals_reference);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
