// gguf_dequant.h — ggml's tensor types (name, block size, bytes per block)
// and the dequantizers of the ones mhsa reads: F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K to Q6_K, IQ4_NL and IQ4_XS. Used by the GGUF
// reader (gguf.c validates sizes with the table, gguf_tensor.c converts
// data with the dequantizers).
#ifndef MHSA_GGUF_DEQUANT_H
#define MHSA_GGUF_DEQUANT_H

#include <stddef.h>
#include <stdint.h>

typedef struct mhsa_ggml_type_info {
    const char *name;     // ggml's type_name: "q4_0"
    uint32_t block;       // elements per block (1 for the plain types)
    uint32_t bytes;       // bytes per block
    int dequant;          // 1 when mhsa__ggml_dequant converts it
} mhsa_ggml_type_info;

// The ggml type with this number, or NULL for a number that is none (or
// whose support ggml removed, such as Q4_2 = 4 or Q4_0_4_4 = 31).
const mhsa_ggml_type_info *mhsa__ggml_type(uint32_t type);

// Converts n_blocks blocks of `type` (info->dequant == 1) from the file's
// little-endian bytes at src to n_blocks * block floats at dst.
void mhsa__ggml_dequant(uint32_t type, const unsigned char *src,
                        size_t n_blocks, float *dst);

#endif
