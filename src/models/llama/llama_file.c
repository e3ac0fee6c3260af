// llama_file.c — a Llama model's matrices kept as its GGUF file stores
// them (llama.h: MHSA__WEIGHTS_FILE): each one points into a read-only
// mapping of the file, as blocks of a computed quantized type
// (kernels/quant.h) or as F32, F16 or BF16 elements; Q2_K, Q3_K, IQ4_NL and
// IQ4_XS, which no kernel computes, are converted once to Q8_0. Where the
// ISA's table computes a type packed (kernels/quant.h: P16), its blocks
// are copied once into that form and the mapping's pages given back: the
// same bytes, held once.
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/quant.h"
#include "models/gguf/gguf_dequant.h"
#include "models/llama/llama_internal.h"

// PACK_SLICE: rows packed between two givings back of the mapping's
// pages (a multiple of 16), so no more than a slice of a matrix is held
// twice.
enum { Q8_BLOCK = 32, Q8_BYTES = 34, PACK_SLICE = 256 };

int mhsa__llama_converts(uint32_t type)
{
    return type == MHSA_GGML_Q2_K || type == MHSA_GGML_Q3_K ||
           type == MHSA_GGML_IQ4_NL || type == MHSA_GGML_IQ4_XS;
}

// The fp dtype of an F32, F16 or BF16 tensor; -1 for another type.
static int fp_dtype(uint32_t type)
{
    return type == MHSA_GGML_F32 ? MHSA_F32 : type == MHSA_GGML_F16
           ? MHSA_F16 : type == MHSA_GGML_BF16 ? MHSA_BF16 : -1;
}

uint64_t mhsa__llama_held_bytes(const mhsa_gguf_tensor *t)
{
    if (mhsa__llama_converts(t->type))
        return t->numel / Q8_BLOCK * Q8_BYTES;
    return t->bytes;
}

// The matrix of tensor t as the file holds it (computed type, not
// converted): w's shape and type.
static mhsa_qmat file_qmat(const mhsa_gguf_tensor *t, const void *data)
{
    mhsa_qmat q = { (mhsa_qtype)mhsa_qtype_from_ggml(t->type), t->dims[0],
                    t->dims[1], (size_t)(t->bytes / t->dims[0]), data, 0 };
    return q;
}

size_t mhsa__llama_copy_bytes(const mhsa_gguf_file *f,
                              const mhsa_gguf_tensor *t,
                              const mhsa_qkernels *pack)
{
    if (mhsa__llama_converts(t->type))
        return (size_t)mhsa__llama_held_bytes(t);
    if (pack && mhsa_qtype_from_ggml(t->type) >= 0) {
        mhsa_qmat q = file_qmat(t, NULL);
        return mhsa__qmat_pack_bytes(pack, &q);
    }
    int dt = fp_dtype(t->type);
    uint64_t at = mhsa__gguf_data_offset(f) + t->offset;
    // (The mapping starts on a page: the file offset's alignment is the
    // address's.)
    if (dt >= 0 && at % mhsa_dtype_size((mhsa_dtype)dt) != 0)
        return (size_t)t->bytes;
    return 0;
}

// n values (a multiple of 32) of x as Q8_0 blocks at dst, as ggml's
// quantize_row_q8_0_ref: d = amax / 127, stored as f16; q = roundf(x / d)
// computed as x * (1 / d) (0 for an all-zero block).
static void quantize_q8_0(size_t n, const float *x, unsigned char *dst)
{
    for (size_t b = 0; b < n / Q8_BLOCK; b++, x += Q8_BLOCK,
                dst += Q8_BYTES) {
        float amax = 0.0f;
        for (size_t i = 0; i < Q8_BLOCK; i++)
            amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t h = mhsa_f32_to_f16(d);
        dst[0] = (unsigned char)(h & 0xff);
        dst[1] = (unsigned char)(h >> 8);
        for (size_t i = 0; i < Q8_BLOCK; i++)
            dst[2 + i] = (unsigned char)(int8_t)roundf(x[i] * id);
    }
}

void mhsa__llama_file_mat(const mhsa_gguf_file *f, const mhsa_file_map *map,
                          const mhsa_gguf_tensor *t,
                          const mhsa_qkernels *pack, char **dst, float *row,
                          llama_mat *w)
{
    const unsigned char *src = mhsa__gguf_tensor_bytes(f, map, t);
    size_t rows = t->dims[0], cols = t->dims[1];
    size_t row_bytes = (size_t)(t->bytes / rows);
    int dt = fp_dtype(t->type);
    memset(w, 0, sizeof *w);
    w->q.rows = rows;
    w->q.cols = cols;
    if (dt >= 0) {   // fp, read where it is (or from an aligned copy)
        w->dt = (mhsa_dtype)dt;
        w->q.ld = row_bytes;
        w->q.data = src;
        size_t copy = mhsa__llama_copy_bytes(f, t, NULL);
        if (copy) {
            memcpy(*dst, src, copy);
            w->q.data = *dst;
            *dst += copy;
        }
        return;
    }
    w->quant = 1;
    if (!mhsa__llama_converts(t->type)) {   // computed on the file's blocks
        w->q = file_qmat(t, src);
        size_t packed = pack ? mhsa__qmat_pack_bytes(pack, &w->q) : 0;
        if (packed) {   // a slice at a time, its pages given back
            for (size_t r = 0; r < rows; r += PACK_SLICE) {
                size_t r1 = rows - r < PACK_SLICE ? rows : r + PACK_SLICE;
                mhsa__qmat_pack_rows(&w->q, r, r1, *dst);
                mhsa__map_release(map, src, r1 * row_bytes);
            }
            mhsa__qmat_packed(&w->q, *dst);
            *dst += packed;
        }
        return;
    }
    // Converted: one row at a time through fp32 (row), never the matrix.
    const mhsa_ggml_type_info *info = mhsa__ggml_type(t->type);
    size_t nb = cols / info->block, q8_row = cols / Q8_BLOCK * Q8_BYTES;
    unsigned char *out = (unsigned char *)*dst;
    for (size_t r = 0; r < rows; r++) {
        mhsa__ggml_dequant(t->type, src + r * row_bytes, nb, row);
        quantize_q8_0(cols, row, out + r * q8_row);
    }
    w->q.type = MHSA_Q8_0;
    w->q.ld = q8_row;
    w->q.data = out;
    *dst += rows * q8_row;
}
