// safetensors.h — internal reader and writer of .safetensors files.
//
// The format (https://github.com/huggingface/safetensors): 8 bytes little-
// endian u64 N, then N bytes of a UTF-8 JSON object
//   { "__metadata__": {"k": "v", ...},            (optional, string -> string)
//     "name": {"dtype": "F32", "shape": [3, 4], "data_offsets": [b, e]}, ... }
// then the data region; [b, e) are byte offsets into it.
//
// The file is untrusted. mhsa__st_open validates the whole header before any
// tensor is read: known dtypes, shape product * dtype size == e - b (overflow
// checked), offsets tiling the data region exactly, no duplicate names,
// N bounded by the file size. It keeps only the parsed header in memory;
// tensors are read from the file on request, so nothing is allocated beyond
// what the file holds. Errors set mhsa_last_error(): MHSA_ERR_IO when the
// path cannot be opened or read (or is a directory), MHSA_ERR_FORMAT for bad
// bytes, MHSA_ERR_NO_MEMORY, and MHSA_ERR_UNSUPPORTED when the library was
// built without safetensors support (meson -Dsafetensors=disabled).
//
// Used by the block's load/save (weight_names.c) and by the trainer for
// its whole model's checkpoints (tok_emb.weight, attn.in_proj_weight, ...).
#ifndef MHSA_SAFETENSORS_H
#define MHSA_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mhsa.h"

enum { MHSA_ST_MAX_DIMS = 8 };

typedef struct mhsa_st_file mhsa_st_file;

// Opens and validates `path`; *out is the handle (close with mhsa__st_close).
mhsa_status mhsa__st_open(const char *path, mhsa_st_file **out);
void        mhsa__st_close(mhsa_st_file *f);   // NULL is a no-op

// Number of tensors (not counting __metadata__) and their names, in the
// order of the data region; the pointer lives as long as the handle.
size_t      mhsa__st_count(const mhsa_st_file *f);
const char *mhsa__st_name(const mhsa_st_file *f, size_t i);
// Shape of tensor `name`: 1 and *ndim, dims[0..*ndim) (at most
// MHSA_ST_MAX_DIMS written) if it exists, else 0.
int         mhsa__st_shape(const mhsa_st_file *f, const char *name,
                           int *ndim, size_t dims[MHSA_ST_MAX_DIMS]);

// Reads tensor `name`, which must have exactly the shape dims[0..ndim), as
// fp32 into dst (prod(dims) floats). F32, F16 and BF16 are converted; any
// other dtype, a missing tensor or another shape is MHSA_ERR_FORMAT with a
// message naming the tensor, expected and found shape. On failure dst may
// be partly written (the block loader reads into temporaries).
mhsa_status mhsa__st_read_f32(const mhsa_st_file *f, const char *name,
                              int ndim, const size_t *dims, float *dst);

// Value of key in the file's __metadata__ (a string; the pointer lives as
// long as the handle), or NULL when the file has no such key.
const char *mhsa__st_meta(const mhsa_st_file *f, const char *key);

// One tensor to write: fp32, row-major, shape dims[0..ndim), stored in
// the file as dtype.
typedef struct mhsa_st_tensor {
    const char  *name;   // UTF-8, unique within the file, not "__metadata__"
    int          ndim;   // 0 (a scalar) .. MHSA_ST_MAX_DIMS
    size_t       dims[MHSA_ST_MAX_DIMS];
    const float *data;   // prod(dims) floats
    mhsa_dtype   dtype;  // MHSA_F32 (0, also when left out of an
                         // initialiser), or F16 / BF16: each value rounded
                         // to nearest even (exact for values that already
                         // are F16 / BF16, such as a 16-bit block's weights)
} mhsa_st_tensor;

// One __metadata__ entry to write: UTF-8 key and value.
typedef struct mhsa_st_meta {
    const char *key, *value;
} mhsa_st_meta;

// Writes the n tensors in their dtypes (with __metadata__ {"format": "pt"} plus the
// n_meta entries of meta, the data in safetensors' own order and 8-byte
// aligned, as safetensors.torch does). It writes a temporary file beside
// `path`, fsyncs it, renames it over `path` and fsyncs the directory, so an
// existing file is replaced only by a complete one, which survives a
// crash once the call has returned. Bad arguments (NULL, duplicate or
// reserved names and keys, "format" among the keys):
// MHSA_ERR_INVALID_ARG; any failure to create or write: MHSA_ERR_IO.
mhsa_status mhsa__st_write(const char *path, const mhsa_st_tensor *t,
                           size_t n, const mhsa_st_meta *meta,
                           size_t n_meta);
// mhsa__st_write without metadata entries.
mhsa_status mhsa__st_write_f32(const char *path, const mhsa_st_tensor *t,
                               size_t n);

// IEEE binary16 / bfloat16 bits to fp32. Both are exact: every half and
// every bfloat16 is an fp32 value (subnormals, infinities and NaN included).
static inline float mhsa__bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;   // bfloat16 is fp32's top half
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float mhsa__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {                 // inf / NaN: keep the payload
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {             // normal: rebias 15 -> 127
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {             // +-0
        u = sign;
    } else {                           // subnormal: normalise the mantissa
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
