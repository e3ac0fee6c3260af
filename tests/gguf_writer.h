// gguf_writer.h — builds GGUF files byte by byte in memory, for the GGUF
// reader's tests (test_gguf.c), the fuzzer's seeds (fuzz/
// make_gguf_seeds.c) and synthetic models (tools/synth-llama). Written
// from the format's description (src/models/gguf/gguf.h), not with the
// reader's code, so that the two check each other; it writes whatever it
// is told, malformed files included.
#ifndef MHSA_TEST_GGUF_WRITER_H
#define MHSA_TEST_GGUF_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct gw {
    unsigned char *p;
    size_t len, cap;
} gw;

void gw_free(gw *w);   // and back to empty
// Little-endian scalars and raw bytes appended at the end.
void gw_bytes(gw *w, const void *b, size_t n);
void gw_u8(gw *w, uint8_t v);
void gw_u16(gw *w, uint16_t v);
void gw_u32(gw *w, uint32_t v);
void gw_u64(gw *w, uint64_t v);
void gw_f32(gw *w, float v);
void gw_f64(gw *w, double v);
// A GGUF string: u64 byte count, then the bytes.
void gw_str(gw *w, const char *s);
void gw_strn(gw *w, const char *s, size_t n);
// Zero bytes up to a multiple of `alignment`.
void gw_pad(gw *w, size_t alignment);
// Overwrites 4 or 8 bytes at `at` (to corrupt a field written earlier).
void gw_put_u32(gw *w, size_t at, uint32_t v);
void gw_put_u64(gw *w, size_t at, uint64_t v);

// "GGUF", version, tensor count, key/value count.
void gw_header(gw *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv);
// A key and its value type; the caller appends the value.
void gw_key(gw *w, const char *key, uint32_t type);
// An array's header after gw_key(..., 9): element type and count.
void gw_arr(gw *w, uint32_t elem, uint64_t n);
// A key with a uint32 value.
void gw_key_u32(gw *w, const char *key, uint32_t v);
// A Llama model's shape, 8 key/values: general.architecture = "llama"
// and llama.block_count, context_length, embedding_length,
// feed_forward_length, attention.head_count, attention.head_count_kv and
// attention.layer_norm_rms_epsilon.
void gw_llama_shape(gw *w, uint32_t layers, uint32_t ctx, uint32_t d_model,
                    uint32_t d_ff, uint32_t heads, uint32_t kv_heads,
                    float eps);

// One tensor for gw_tensors: ne innermost first, as in the file.
typedef struct gw_tensor {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;
    const void *data;   // `bytes` bytes
    size_t bytes;
} gw_tensor;

// The tensor infos of t[0..n), each at the next offset that is a multiple
// of alignment; the padding to the data section; the data, padded between
// tensors but not after the last one (so the file ends with its bytes).
void gw_tensors(gw *w, const gw_tensor *t, size_t n, uint32_t alignment);
// gw_tensors without the data: the infos (data unused) and the padding to
// the data section. The caller writes the data itself, each tensor padded
// to `alignment` (a file too large to build in memory:
// tools/synth-llama).
void gw_tensor_infos(gw *w, const gw_tensor *t, size_t n,
                     uint32_t alignment);

// Writes the bytes to path; 0 on success.
int gw_save(const gw *w, const char *path);
// Writes the first n bytes of w to path; 0 on success.
int gw_save_prefix(const gw *w, size_t n, const char *path);

#endif
