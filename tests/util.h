// util.h — shared test helpers: seeded random numbers, comparisons, NaN
// poison and canaries, reference-file reading, the list of ISAs, and a main
// that runs a check suite.
#ifndef MHSA_TEST_UTIL_H
#define MHSA_TEST_UTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

// Passing assertions cost nothing. check's ck_assert_msg, which every
// ck_assert_* expands to, calls _mark_point when the assertion holds, and
// _mark_point writes the file and line to check's message file: a write(2)
// per passing assertion. Tests that assert per element (every weight of a
// blocked key, every reused row) spent most of their time there: under
// ASan 55% of test_adversarial_variants, 31.7 s of its combo case against
// 1.9 s without. A failing assertion reports its file, line and message as
// before; what goes is the "last checkpoint" a crash is reported after (it
// now names the test's first line; the ASan build prints the stack).
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                              \
    ((expr) ? (void)0                                                         \
            : _ck_assert_failed(__FILE__, __LINE__,                           \
                                "Assertion '" #expr "' failed", ##__VA_ARGS__))

#include "kernels/kernels.h"

// Every ISA a test loops over; mhsa_kernels_for() says which this machine has.
extern const mhsa_isa all_isas[];
enum { N_ISAS = 4 };
// The table for all_isas[i], or NULL after printing why it is skipped;
// prints a line too when the table is an emulated one.
const mhsa_kernels *kernels_or_skip(int i);

// Emulated ISAs. The tests link the AVX-512 kernels a second time, built
// against SIMDe (src/avx512/intrin.h). Where the CPU lacks AVX-512 (but
// has the AVX2, FMA and F16C the emulation runs on), run_suite installs
// that table through the dispatch's test-only stand-in hook before any
// test runs, so mhsa_kernels_for, mhsa_select_isa and MHSA_ISA give it for
// avx512 and every test that loops over all_isas runs it too.
// MHSA_TEST_EMULATION=0 turns this off (the valgrind run: slow).
// The emulated table for isa in this test build, or NULL.
const mhsa_kernels *emulated_table(mhsa_isa isa);
// Installs the emulated tables this CPU can run in place of missing ISAs;
// returns how many.
int install_emulated_isas(void);
// The emulated AVX-512 table for one more loop index beside all_isas,
// where the native AVX-512 table took avx512's index (an AVX-512 CPU
// would otherwise never run the emulated build of a new kernel); NULL,
// after saying why, where it is not built, already ran as avx512, this
// CPU cannot run it, or MHSA_TEST_EMULATION=0 (the sanitizer runs).
const mhsa_kernels *emulated_beside_native(void);
// Loop index i of a test looped over N_ISAS + 1 indices: all_isas[i]'s
// table (kernels_or_skip), and at i == N_ISAS emulated_beside_native().
const mhsa_kernels *table_or_emulated(int i);
// 1 when the test runs under valgrind (its preload library is in
// LD_PRELOAD): for the few checks valgrind cannot judge.
int under_valgrind(void);

// The size knob of the slow runs (ASan, valgrind, qemu): they need every
// code path, not every random problem. MHSA_TEST_QUICK=1, or
// MHSA_TEST_QEMU=1 (which .ci/test-aarch64.sh sets), makes test_quick()
// return 1; unset, empty or "0" gives 0. Quick mode shrinks only counts:
// random problems, repeats, seeds and similar sizes; the fixed edge-shape
// lists, the all-ISA loops and the thread bit-exactness checks stay whole,
// and no bound is loosened.
int test_quick(void);
// How many of n random problems (or repeats) to run: n normally; in quick
// mode a quarter, rounded up, so 1 stays 1 and the count never reaches 0.
// The quick sample is the first test_count(n) of the full one (the same
// seeds), so whatever fails in quick mode fails in the full run too.
int test_count(int n);
// In quick mode prints "note: quick mode (MHSA_TEST_QUICK): <what>", so a
// test's log says it ran the reduced sample; a test calls it once.
void note_quick(const char *what);

// splitmix64: the same stream on every platform.
typedef struct rng { uint64_t s; } rng;
uint64_t rng_u64(rng *r);
float    rng_uniform(rng *r, float lo, float hi);   // [lo, hi)
int      rng_int(rng *r, int lo, int hi);           // [lo, hi]
void     fill_uniform(rng *r, float *x, size_t n, float lo, float hi);
// Small integers in [-range, range]: products and short sums are exact in
// fp32, so SIMD and scalar must agree bit for bit on them.
void     fill_small_ints(rng *r, float *x, size_t n, int range);

// max_i |a_i - b_i| / max(1, max_i |b_i|); +inf if a has a NaN/inf where b
// is finite.
double rel_err(const float *a, const float *b, size_t n);
double rel_err_d(const float *a, const double *b, size_t n);
int    all_finite(const float *x, size_t n);

// Buffers with canaries: alloc_guarded(n) returns n floats followed (and
// preceded) by CANARY_N canary floats; guard_ok checks both sides.
enum { CANARY_N = 16 };
float *alloc_guarded(size_t n);
int    guard_ok(const float *p, size_t n);
void   free_guarded(float *p);
void   fill_nan(float *x, size_t n);

// Reads a raw little-endian float32 file of exactly n values from
// $MHSA_TEST_DATA/<rel>; returns a malloc'd buffer or NULL.
float *read_f32(const char *rel, size_t n);
// Path under $MHSA_TEST_DATA (static buffer).
const char *data_path(const char *rel);

// Installs the emulated ISAs (above), runs a suite in check's fork mode
// and returns the process exit code.
int run_suite(Suite *s);
// Adds test t (a loop test over [0, n)) as a test case of its own, named
// after it, so that it can run alone (CK_RUN_CASE=name). Cases tagged
// "slow" take minutes under valgrind or qemu, whose CI steps leave them
// out (CK_EXCLUDE_TAGS=slow); ASan and native runs take them all.
void add_case(Suite *s, const char *name, const TTest *t, int n,
              const char *tags);
#define ADD_CASE(s, t, n, tags) add_case(s, #t, t, n, tags)
// The same without installing emulated ISAs (dispatch tests).
int run_suite_native(Suite *s);

#endif
