// test_kernel_rows_finite.c — rows_finite (kernels.h) on every ISA: the
// answer of an isfinite() loop written here, and scalar's, for blocks of
// awkward shapes (1 row or column, primes, sizes either side of 4, 8 and
// 16 lanes, contiguous rows and padded ones), with a non-finite value
// (+-inf, quiet and signalling NaNs of both signs and other payloads)
// planted at every position in turn, tails and last element included, on
// top of finite values that look close (FLT_MAX, subnormals, zeros of
// both signs). The padding between and after the rows holds NaN and inf,
// which a kernel must never read. The AVX-512 kernels run twice on a CPU
// that has them: native (the ISA loop) and the SIMDe-emulated build (one
// loop index more).
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

// Loop index i < N_ISAS: all_isas[i]'s table; N_ISAS: the emulated
// AVX-512 table where the loop's avx512 entry is the native one.
#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS + 1)

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// Not finite: +-inf, quiet NaN (both signs), signalling NaNs (smallest
// and largest payloads), the all-ones pattern.
static const uint32_t bad_bits[] = { 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                     0xffc00000u, 0x7f800001u, 0xffbfffffu,
                                     0xffffffffu };
enum { N_BAD = sizeof bad_bits / sizeof bad_bits[0] };

// Finite, with an exponent one short of all ones or none at all: +-FLT_MAX,
// the largest and smallest subnormals, FLT_MIN, zeros of both signs.
static const uint32_t edge_bits[] = { 0x7f7fffffu, 0xff7fffffu, 0x007fffffu,
                                      0x80000001u, 0x00800000u, 0x00000000u,
                                      0x80000000u };
enum { N_EDGE = sizeof edge_bits / sizeof edge_bits[0] };

// What the kernel is asked: rows x cols at row stride ld, padding never
// read filled with NaN or inf.
typedef struct block {
    size_t rows, cols, ld;
    float *buf, *x;   // x = buf + PAD_BEFORE
} block;

enum { PAD_BEFORE = 16, PAD_AFTER = 33 };

static block make_block(rng *g, size_t rows, size_t cols, size_t ld)
{
    block b = { rows, cols, ld, NULL, NULL };
    size_t n = PAD_BEFORE + rows * ld + PAD_AFTER;
    b.buf = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)   // the padding: never read
        b.buf[i] = from_bits(bad_bits[i % N_BAD]);
    b.x = b.buf + PAD_BEFORE;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            b.x[r * ld + c] = rng_int(g, 0, 3) == 0
                ? from_bits(edge_bits[rng_int(g, 0, N_EDGE - 1)])
                : rng_uniform(g, -1e30f, 1e30f);
    return b;
}

// The contract written plainly, as isfinite() sees it.
static int finite_ref(const block *b)
{
    for (size_t r = 0; r < b->rows; r++)
        for (size_t c = 0; c < b->cols; c++)
            if (!isfinite(b->x[r * b->ld + c]))
                return 0;
    return 1;
}

// The kernel of k and scalar's both give the reference's answer.
static void check_block(const mhsa_kernels *k, const block *b,
                        const char *what, size_t pos)
{
    int want = finite_ref(b);
    int got = k->rows_finite(b->rows, b->cols, b->x, b->ld);
    int sc = mhsa_kernels_scalar.rows_finite(b->rows, b->cols, b->x, b->ld);
    ck_assert_msg(got == want && sc == want,
                  "isa %s: rows %zu cols %zu ld %zu, %s at %zu: got %d, "
                  "scalar %d, want %d", k->name, b->rows, b->cols, b->ld,
                  what, pos, got, sc, want);
}

// Every position in turn holds a non-finite value (a different one per
// position, and all of them at the first and the last element).
static void check_every_position(const mhsa_kernels *k, rng *g, size_t rows,
                                 size_t cols, size_t ld)
{
    block b = make_block(g, rows, cols, ld);
    check_block(k, &b, "none", 0);
    size_t n = rows * cols;
    for (size_t p = 0; p < n; p++) {
        size_t i = (p / cols) * ld + p % cols;
        float keep = b.x[i];
        int all = p == 0 || p == n - 1;
        for (int v = 0; v < N_BAD; v++) {
            if (!all && v != (int)((p + rows) % N_BAD))
                continue;
            b.x[i] = from_bits(bad_bits[v]);
            check_block(k, &b, "non-finite", p);
        }
        b.x[i] = keep;
    }
    check_block(k, &b, "none, restored", 0);
    free(b.buf);
}

// Columns either side of 4, 8, 16 and 32 lanes, primes, and one.
static const size_t col_list[] = { 1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17,
                                   23, 31, 32, 33, 47, 48, 49, 64, 97 };
enum { N_COLS = sizeof col_list / sizeof col_list[0] };
static const size_t row_list[] = { 1, 2, 3, 5, 7 };
enum { N_ROWS = sizeof row_list / sizeof row_list[0] };

START_TEST(planted_at_every_position)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    for (size_t ri = 0; ri < N_ROWS; ri++)
        for (size_t ci = 0; ci < N_COLS; ci++)
            for (size_t pad = 0; pad < 3; pad++) {
                // Contiguous, one float between rows, a stride off lanes.
                size_t cols = col_list[ci], ld = cols + pad * pad * 3 / 2;
                rng g = { (ri * N_COLS + ci) * 3 + pad };
                check_every_position(k, &g, row_list[ri], cols, ld);
            }
}
END_TEST

// Seeded random shapes (long contiguous blocks among them, as attention
// asks for a whole K tile at once) and the empty ones.
START_TEST(random_shapes)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    int n = test_count(60);
    note_quick("random shapes");
    for (int s = 0; s < n; s++) {
        rng g = { 9000 + (uint64_t)s };
        size_t rows = (size_t)rng_int(&g, 1, 40);
        size_t cols = (size_t)rng_int(&g, 1, 130);
        size_t ld = cols + (rng_int(&g, 0, 1) ? 0 : (size_t)rng_int(&g, 1, 9));
        block b = make_block(&g, rows, cols, ld);
        check_block(k, &b, "none", 0);
        for (int t = 0; t < 8; t++) {   // a few positions, last one too
            size_t p = t == 0 ? rows * cols - 1
                              : (size_t)rng_int(&g, 0, (int)(rows * cols) - 1);
            size_t i = (p / cols) * ld + p % cols;
            float keep = b.x[i];
            b.x[i] = from_bits(bad_bits[rng_int(&g, 0, N_BAD - 1)]);
            check_block(k, &b, "non-finite", p);
            b.x[i] = keep;
        }
        free(b.buf);
    }
    // No rows or no columns: nothing is read, the answer is 1.
    float nan = NAN;
    ck_assert_msg(k->rows_finite(0, 8, &nan, 8) == 1 &&
                  k->rows_finite(3, 0, &nan, 0) == 1 &&
                  k->rows_finite(0, 5, &nan, 9) == 1,
                  "isa %s: an empty block is not finite", k->name);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_rows_finite");
    TCase *tc = tcase_create("rows_finite");
    LOOP(tc, planted_at_every_position);
    LOOP(tc, random_shapes);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
