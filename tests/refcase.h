// refcase.h — reading the PyTorch reference cases in tests/data/refs/ and
// tests/data/refs_variants/ (format: tests/data/refs/FORMAT.md).
#ifndef MHSA_TEST_REFCASE_H
#define MHSA_TEST_REFCASE_H

#include <stddef.h>
#include <stdint.h>

enum { REF_MAX_TENSORS = 24, REF_MAX_B = 16, REF_MAX_ROWS = 64,
       REF_MAX_DEAD = 512 };

typedef struct refcase {
    char name[64];
    char kind[16];
    int B, T, D, H, causal, bias;
    double tol;
    int n_masked_rows, masked_rows[64];
    // The keys of 0.2 (FORMAT.md, "Cases of 0.2"); absent keys give the
    // 0.1 meaning: Hkv = H, no RoPE, no window, no padding, F32 cache.
    int Hkv, rope_dim, rope_interleaved, window;
    float rope_theta;            // 0: the library's default (10000)
    int has_seq_len, seq_len[REF_MAX_B];
    int pos0;                    // decode: y holds rows pos0..T-1 only
    int kv_dtype;                // 0 f32, 1 f16, 2 bf16 (mhsa_dtype order)
    int n_attn_rows, attn_rows[REF_MAX_ROWS];   // 0: attn holds every row
    int n_dead_rows, dead_rows[REF_MAX_DEAD];   // flat b*T + t
    int n_tensors;
    char tensor_name[REF_MAX_TENSORS][16];
    size_t tensor_count[REF_MAX_TENSORS];
    float *tensor[REF_MAX_TENSORS];
    char error[320];             // why refcase_load failed
} refcase;

// Loads refs/<name>/; returns 0 on success (every tensor read and sized).
int refcase_load(const char *name, refcase *rc);
// Loads <dir>/<name>/ under $MHSA_TEST_DATA (e.g. dir "refs_variants"):
// stored tensors are read, generated ones ("input" lines) made and checked
// against their crc32. Returns 0, or -1 with rc->error saying why.
int refcase_load_in(const char *dir, const char *name, refcase *rc);
// The tensor called `name`, or NULL when the case has none.
const float *refcase_get(const refcase *rc, const char *name);
// Its number of floats (0 when absent).
size_t refcase_count(const refcase *rc, const char *name);
void refcase_free(refcase *rc);

// The generated inputs: n values uniform in [-scale, scale), value i =
// (float)(k * 2^-23 * scale) with k the top 24 bits of the (i+1)-th
// splitmix64 output from state `seed`, minus 2^23 (gen_refs_variants.py's
// hash_values).
void refcase_hash_fill(float *x, size_t n, double scale, uint64_t seed);
// zlib's crc32 of n bytes.
uint32_t refcase_crc32(const void *p, size_t n);

#endif
