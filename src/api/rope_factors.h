// rope_factors.h — RoPE frequency factors for a block: the angles of pair
// i become p * theta^(-2i/R) / factors[i], as ggml_rope_ext's
// freq_factors do (Llama 3's rope_freqs.weight). For the model runner
// (src/models/llama); internal: not exported, not in include/mhsa.h.
#ifndef MHSA_API_ROPE_FACTORS_H
#define MHSA_API_ROPE_FACTORS_H

#include "mhsa.h"

// Recomputes blk's RoPE tables with factors[0 .. rope_dim/2), each finite
// and > 0 (NULL: all 1, the tables mhsa_block_create made). Any block,
// with weights or without; not while a call uses it. Errors
// (MHSA_ERR_INVALID_ARG, the block unchanged): NULL blk, a block without
// RoPE, a factor not finite or not > 0.
mhsa_status mhsa__block_set_rope_factors(mhsa_block *blk,
                                         const float *factors);

#endif
