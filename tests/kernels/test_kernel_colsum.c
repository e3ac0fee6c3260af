// test_kernel_colsum.c — every table's colsum_add (kernels.h) bit for bit
// against the plain loop written here (acc + row 0 + row 1 + ..., in
// order), for widths off the 8 and 16 lanes and the 64 and 128 columns a
// pass sums (1, primes, 32, 96, 129, ...), row strides wider than the
// rows (the padding holds NaN, which a kernel must never read), values of
// mixed magnitude whose sums depend on the order, and the zeros, -0 and
// non-finite values that a changed order or a dropped add would show.
// Nothing past cols in acc changes. The AVX-512 kernel runs native and
// SIMDe-emulated (one loop index more).
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "util.h"

#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS + 1)

static float some_value(rng *g)
{
    switch (rng_int(g, 0, 15)) {
    case 0:
        return -0.0f;
    case 1:
        return 0.0f;
    case 2:
        return rng_uniform(g, -1e7f, 1e7f);
    case 3:
        return rng_int(g, 0, 40) == 0 ? INFINITY : 1e-3f;
    default:
        return rng_uniform(g, -1.0f, 1.0f);
    }
}

static const size_t col_list[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33,
                                   63, 64, 65, 96, 127, 128, 129, 200 };
static const size_t row_list[] = { 1, 2, 3, 12, 96 };
enum { N_COLS = sizeof col_list / sizeof col_list[0],
       N_ROWS = sizeof row_list / sizeof row_list[0], GUARD = 17 };

START_TEST(kernel_equals_loop)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    // Every table fills the slot (the scalar reference where it has no
    // vector kernel): the drivers call it without a check.
    ck_assert_msg(k->colsum_add != NULL, "isa %s: colsum_add empty",
                  k->name);
    rng g = { 31 + (uint64_t)_i };
    for (size_t ri = 0; ri < N_ROWS; ri++)
        for (size_t ci = 0; ci < N_COLS; ci++)
            for (size_t pad = 0; pad < 2; pad++) {
                size_t rows = row_list[ri], cols = col_list[ci];
                size_t ld = cols + pad * 5;
                float *x = malloc(rows * ld * sizeof(float));
                float *acc = malloc((cols + GUARD) * sizeof(float));
                float *want = malloc((cols + GUARD) * sizeof(float));
                for (size_t i = 0; i < rows * ld; i++)
                    x[i] = i % ld < cols ? some_value(&g) : NAN;
                for (size_t c = 0; c < cols + GUARD; c++)
                    acc[c] = want[c] = c < cols ? some_value(&g) : NAN;
                for (size_t c = 0; c < cols; c++)
                    for (size_t r = 0; r < rows; r++)
                        want[c] = want[c] + x[r * ld + c];
                // The scalar reference is that loop too, bit for bit.
                float *ref = malloc((cols + GUARD) * sizeof(float));
                memcpy(ref, acc, (cols + GUARD) * sizeof(float));
                mhsa_kernels_scalar.colsum_add(rows, cols, x, ld, ref);
                ck_assert(memcmp(ref, want, cols * sizeof(float)) == 0);
                free(ref);
                k->colsum_add(rows, cols, x, ld, acc);
                for (size_t c = 0; c < cols + GUARD; c++)
                    ck_assert_msg(mhsa_f32_bits(acc[c]) == mhsa_f32_bits(want[c]),
                                  "isa %s: rows %zu cols %zu ld %zu, "
                                  "column %zu: %a, want %a", k->name, rows,
                                  cols, ld, c, acc[c], want[c]);
                free(x);
                free(acc);
                free(want);
            }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_colsum");
    TCase *tc = tcase_create("colsum");
    LOOP(tc, kernel_equals_loop);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
