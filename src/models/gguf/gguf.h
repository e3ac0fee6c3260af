// gguf.h — internal reader of GGUF files (llama.cpp's model format),
// versions 2 and 3, little-endian.
//
// The format (ggml/include/gguf.h in llama.cpp): "GGUF", u32 version, u64
// tensor count, u64 key/value count; the key/values (string key, u32 type,
// value); the tensor infos (string name, u32 n_dims, u64 ne[n_dims], u32
// ggml type, u64 offset); padding to general.alignment (default 32); the
// data section, which each offset is relative to. Strings are a u64 byte
// count and the bytes (no NUL); arrays a u32 element type, a u64 count and
// the elements; bools one byte.
//
// The file is untrusted. mhsa__gguf_open validates all of it before any
// tensor is read: every count and length against the bytes the file has
// left (so a tiny file claiming 2^60 entries fails before allocating), no
// duplicate keys or tensor names, general.alignment a u32 power of two,
// 1 <= n_dims <= 4, every dimension >= 1, the row length (ne[0]) a multiple
// of the type's block size, sizes overflow-checked, every offset a
// multiple of the alignment and every tensor's bytes inside the file and
// overlapping no other tensor's. Malformed: MHSA_ERR_FORMAT, with
// mhsa_last_error() naming the path and the key or tensor; cannot open or
// read: MHSA_ERR_IO naming the path; MHSA_ERR_NO_MEMORY.
//
// Shapes. GGUF lists dimensions innermost first: ne[0] is the row length.
// This API gives and takes them the other way round, outermost first, as
// safetensors, NumPy and mhsa__st_read_f32 do: dims[n_dims - 1] == ne[0],
// so a (rows, cols) matrix is dims {rows, cols} and its fp32 copy is
// row-major. token_embd.weight with ne = (576, 49152) is dims {49152, 576}.
#ifndef MHSA_GGUF_H
#define MHSA_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "io/file_read.h"
#include "mhsa.h"

// Metadata value types, numbered as in the file.
typedef enum mhsa_gguf_type {
    MHSA_GGUF_UINT8 = 0, MHSA_GGUF_INT8 = 1, MHSA_GGUF_UINT16 = 2,
    MHSA_GGUF_INT16 = 3, MHSA_GGUF_UINT32 = 4, MHSA_GGUF_INT32 = 5,
    MHSA_GGUF_FLOAT32 = 6, MHSA_GGUF_BOOL = 7, MHSA_GGUF_STRING = 8,
    MHSA_GGUF_ARRAY = 9, MHSA_GGUF_UINT64 = 10, MHSA_GGUF_INT64 = 11,
    MHSA_GGUF_FLOAT64 = 12
} mhsa_gguf_type;

// The tensor types mhsa__gguf_read_f32 converts (ggml_type numbers); a file
// may hold any other ggml type, which opens but cannot be read as fp32.
enum {
    MHSA_GGML_F32 = 0, MHSA_GGML_F16 = 1, MHSA_GGML_Q4_0 = 2,
    MHSA_GGML_Q4_1 = 3, MHSA_GGML_Q5_0 = 6, MHSA_GGML_Q5_1 = 7,
    MHSA_GGML_Q8_0 = 8, MHSA_GGML_Q2_K = 10, MHSA_GGML_Q3_K = 11,
    MHSA_GGML_Q4_K = 12, MHSA_GGML_Q5_K = 13, MHSA_GGML_Q6_K = 14,
    MHSA_GGML_IQ4_NL = 20, MHSA_GGML_IQ4_XS = 23, MHSA_GGML_BF16 = 30
};

enum { MHSA_GGUF_MAX_DIMS = 4, MHSA_GGUF_DEFAULT_ALIGNMENT = 32 };

typedef struct mhsa_gguf_file mhsa_gguf_file;
// One metadata value (a key's, or an element of an array of arrays); it
// lives as long as its file's handle.
typedef struct mhsa_gguf_val mhsa_gguf_val;

// Opens and validates `path`; *out is the handle (close with
// mhsa__gguf_close). Only the header (metadata and tensor infos) is kept
// in memory; tensor data is read on request.
mhsa_status mhsa__gguf_open(const char *path, mhsa_gguf_file **out);
void        mhsa__gguf_close(mhsa_gguf_file *f);   // NULL is a no-op

uint32_t mhsa__gguf_version(const mhsa_gguf_file *f);
uint32_t mhsa__gguf_alignment(const mhsa_gguf_file *f);

// ---- metadata -------------------------------------------------------------
//
// Strings come back NUL-terminated with their byte count in *len (which
// counts any NUL bytes inside; len may be NULL). Getters by key fail with
// MHSA_ERR_FORMAT naming the key when it is absent or of another type (no
// conversions: a u32 getter refuses an i32); use mhsa__gguf_find first for
// an optional key.

// Number of key/values and the key and value of entry i, in file order.
size_t               mhsa__gguf_kv_count(const mhsa_gguf_file *f);
const char          *mhsa__gguf_kv_key(const mhsa_gguf_file *f, size_t i);
const mhsa_gguf_val *mhsa__gguf_kv_val(const mhsa_gguf_file *f, size_t i);
// The value of `key`, or NULL when the file has no such key.
const mhsa_gguf_val *mhsa__gguf_find(const mhsa_gguf_file *f,
                                     const char *key);
mhsa_gguf_type mhsa__gguf_val_type(const mhsa_gguf_val *v);
// "u8", "i32", "f32", "bool", "string", "array", ... ("?" if unknown).
const char    *mhsa__gguf_type_name(uint32_t type);

mhsa_status mhsa__gguf_get_str(const mhsa_gguf_file *f, const char *key,
                               const char **s, size_t *len);
mhsa_status mhsa__gguf_get_u32(const mhsa_gguf_file *f, const char *key,
                               uint32_t *out);
mhsa_status mhsa__gguf_get_i32(const mhsa_gguf_file *f, const char *key,
                               int32_t *out);
mhsa_status mhsa__gguf_get_u64(const mhsa_gguf_file *f, const char *key,
                               uint64_t *out);
mhsa_status mhsa__gguf_get_f32(const mhsa_gguf_file *f, const char *key,
                               float *out);
mhsa_status mhsa__gguf_get_bool(const mhsa_gguf_file *f, const char *key,
                                int *out);
// The value of `key`, which must be an array.
mhsa_status mhsa__gguf_get_arr(const mhsa_gguf_file *f, const char *key,
                               const mhsa_gguf_val **arr);

// A number of any numeric type or bool, exactly: u for the unsigned types
// and bool, i for the signed ones, f for f32 and f64 (an f32 is exact as a
// double).
typedef struct mhsa_gguf_num {
    mhsa_gguf_type type;
    union { uint64_t u; int64_t i; double f; } as;
} mhsa_gguf_num;

// A scalar value: number (not string or array) / string.
mhsa_status mhsa__gguf_val_num(const mhsa_gguf_val *v, mhsa_gguf_num *out);
mhsa_status mhsa__gguf_val_str(const mhsa_gguf_val *v, const char **s,
                               size_t *len);

// Arrays: element type and count, and element i as a number, a string or
// an array (element type and index must fit, else MHSA_ERR_FORMAT naming
// the key and index; v not an array: its element type is reported as -1).
int         mhsa__gguf_arr_type(const mhsa_gguf_val *v);
uint64_t    mhsa__gguf_arr_count(const mhsa_gguf_val *v);
mhsa_status mhsa__gguf_arr_num(const mhsa_gguf_val *v, uint64_t i,
                               mhsa_gguf_num *out);
mhsa_status mhsa__gguf_arr_str(const mhsa_gguf_val *v, uint64_t i,
                               const char **s, size_t *len);
mhsa_status mhsa__gguf_arr_arr(const mhsa_gguf_val *v, uint64_t i,
                               const mhsa_gguf_val **out);

// ---- tensors --------------------------------------------------------------

typedef struct mhsa_gguf_tensor {
    const char *name;       // NUL-terminated (GGUF names hold no NUL)
    uint32_t type;          // ggml type number
    const char *type_name;  // ggml's name: "f32", "q4_0", "q6_K", ...
    int n_dims;             // 1 .. MHSA_GGUF_MAX_DIMS
    size_t dims[MHSA_GGUF_MAX_DIMS];     // outermost first (see the top)
    uint64_t numel;         // product of dims
    uint64_t offset;        // bytes from the start of the data section
    uint64_t bytes;         // bytes of data
} mhsa_gguf_tensor;

// Number of tensors, tensor i in file order, and tensor `name` (NULL if
// absent); the pointers live as long as the handle.
size_t mhsa__gguf_tensor_count(const mhsa_gguf_file *f);
const mhsa_gguf_tensor *mhsa__gguf_tensor_at(const mhsa_gguf_file *f,
                                             size_t i);
const mhsa_gguf_tensor *mhsa__gguf_tensor(const mhsa_gguf_file *f,
                                          const char *name);
// Absolute file offset of the data section.
uint64_t mhsa__gguf_data_offset(const mhsa_gguf_file *f);

// The whole file of f mapped read-only into *m (io/file_read.h's
// mhsa__map_file on the handle's descriptor, the size checked against the
// one validated at open; path names the file in messages). The mapping
// outlives the handle; mhsa__unmap_file releases it.
mhsa_status mhsa__gguf_map(const mhsa_gguf_file *f, const char *path,
                           mhsa_file_map *m);
// The t->bytes bytes of tensor t of f in a mapping of f's file (validated
// at open to lie inside it).
const void *mhsa__gguf_tensor_bytes(const mhsa_gguf_file *f,
                                    const mhsa_file_map *m,
                                    const mhsa_gguf_tensor *t);

// Reads tensor `name`, which must have exactly the shape dims[0..n_dims)
// (outermost first), as fp32 into dst (prod(dims) floats), row-major.
// F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K to Q6_K, IQ4_NL and
// IQ4_XS are converted, bit for bit as ggml's dequantize_row_* does; a
// missing tensor, another shape or any other type is MHSA_ERR_FORMAT
// naming the tensor (and the expected and found shape, or the type's name
// and number). dst may be partly written on failure.
mhsa_status mhsa__gguf_read_f32(const mhsa_gguf_file *f, const char *name,
                                int n_dims, const size_t *dims,
                                float *dst);
// The checks of mhsa__gguf_read_f32 without reading anything (present,
// that shape, a type it converts), with the same errors: lets a loader
// check every tensor against the metadata before it allocates for them.
mhsa_status mhsa__gguf_check_f32(const mhsa_gguf_file *f, const char *name,
                                 int n_dims, const size_t *dims);

#endif
