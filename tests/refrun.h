// refrun.h — running the 0.2 reference cases (tests/data/refs_variants,
// written by tests/refs/gen_refs_variants.py) through the public API and
// comparing with PyTorch: forward with and without attn, mhsa_forward_ex with
// key padding, backward after either, decode through the KV cache token by
// token and in chunks (mhsa_forward_cached, or mhsa_forward_cached_ex with
// per-sequence lengths), F16/BF16 caches. Every run is repeated at 1 and 2
// OpenMP threads and must give the same bits.
#ifndef MHSA_TEST_REFRUN_H
#define MHSA_TEST_REFRUN_H

#include <stddef.h>

#include "mhsa.h"
#include "refcase.h"
#include "util.h"

// ck_assert_msg for loops: check sends the parent a message (a write and
// an fflush) for every ck_assert that holds; this one says nothing unless
// it fails.
#define REQUIRE(cond, ...)                                                  \
    do {                                                                    \
        if (!(cond))                                                        \
            ck_abort_msg(__VA_ARGS__);                                      \
    } while (0)

// What one run produced, by name, to compare thread counts bit for bit.
enum { OUTS_MAX = 48 };
typedef struct outs {
    int n;
    char name[OUTS_MAX][48];
    float *v[OUTS_MAX];
    size_t count[OUTS_MAX];
} outs;
void outs_add(outs *o, const char *name, const float *p, size_t n);
// ck_asserts that a and b hold the same names with the same bits.
void outs_same(const outs *a, const outs *b, const char *tag);
void outs_free(outs *o);

// Loads refs_variants/<name> (ck_asserts).
void rc_load(const char *name, refcase *rc);
// The block config of a case (max_seq_len = T) and the block with its
// weights set (ck_asserts).
mhsa_config rc_config(const refcase *rc);
mhsa_block *rc_block(const refcase *rc);
// Rows of w_qkv: (H + 2 Hkv) dh.
size_t rc_qkv_rows(const refcase *rc);
// rel err of got against want <= rc->tol, no NaN/inf; prints the case,
// ISA, thread count, what and the error.
void rc_expect(const refcase *rc, const char *what, const float *got,
               const float *want, size_t n);
// The thread count printed by rc_expect (set by run_case_threads).
extern int refrun_threads;

// A KV cache for the case's dtype (mhsa_kv_cache_create for F32,
// mhsa_kv_cache_create_ex otherwise).
mhsa_kv_cache *rc_cache(const refcase *rc, const mhsa_block *blk,
                        int max_batch);

// One whole case by its kind and keys, at the current thread count.
void run_case(const refcase *rc, outs *o);
// Selects all_isas[isa_i] (returns when this machine lacks it), loads the
// case and runs it at 1 and 2 threads: both must pass and agree bitwise
// (a case with a long prefix, pos0, runs once, at 2 threads).
void run_case_threads(const char *name, int isa_i);

// Bitwise equality at 1, 2 and 3 threads on all_isas[isa_i] for a shape
// large enough that the library runs its loops in parallel: forward with
// attn (forward_ex with padding when ragged), backward, and decode of
// cfg.max_seq_len positions, the last 25 in single tokens and a chunk of 7
// (cached_ex with four lengths when ragged == 2; a kv_dtype cache when
// set), B = 4, random weights. The library goes parallel above ~0.25 MFLOP
// per call: a decode step needs 4 * H * dh * (keys summed over the batch)
// >= 262144, e.g. D 64, H 4 and 4 sequences of 257+ keys.
typedef struct thread_spec {
    const char *name;
    mhsa_config cfg;
    int T_fwd;
    int kv_dtype;        // mhsa_dtype
    int ragged;          // 1: forward_ex with padding; 2: also cached_ex
} thread_spec;
void check_thread_counts(const thread_spec *ts, int isa_i);

// A test executable's main: a check suite of the named test cases (each
// `add` puts its tests into the TCase). With arguments, only the test cases
// named there run (meson registers one test per feature that way); an
// unknown name fails.
typedef struct tcase_def {
    const char *name;
    void (*add)(TCase *tc);
} tcase_def;
int run_tcases(const char *suite, const tcase_def *d, int n, int argc,
               char **argv);

#endif
