// llama_internal.h — the Llama model's structs, shared by its loader
// (llama_load.c) and its forward (llama.c).
#ifndef MHSA_LLAMA_INTERNAL_H
#define MHSA_LLAMA_INTERNAL_H

#include "models/llama/llama.h"
#include "api/workspace_rebind.h"
#include "core/alloc.h"
#include "core/status.h"
#include "gemm/gemm.h"

// The matrices (gate, up, down, tok_emb, head) are stored as the model's
// wdt; the norms are fp32.
typedef struct llama_layer {
    const float *attn_norm, *ffn_norm;   // (D) each
    const void *gate, *up;               // (F, D) each
    const void *down;                    // (D, F)
    mhsa_block *blk;                     // w_qkv = [attn_q; attn_k; attn_v]
} llama_layer;

struct mhsa_llama {
    mhsa_llama_config cfg;
    const mhsa_kernels *k;      // the ISA active at load
    size_t V, L, D, F, cap;
    mhsa_dtype wdt;             // of the matrices (and the blocks' weights)
    float *weights;             // the allocation behind the pointers (with
                                // 16-bit wdt: the norms only)
    void *mats;                 // 16-bit wdt: the matrices; else NULL
    size_t weight_bytes;        // of both, plus the blocks' weights
    const void *tok_emb;        // (V, D)
    const float *out_norm;      // (D)
    const void *head;           // (V, D): tok_emb when tied
    llama_layer *layer;         // (L)
    mhsa_workspace *ws;         // one for every layer's block (rebound)
    // Activations for up to cap rows: x, h, att (cap, D); g, u (cap, F).
    float *acts, *x, *h, *att, *g, *u;
    mhsa_gemm_scratch gs;
    float *gemm_buf;
};

struct mhsa_llama_cache {
    const mhsa_llama *m;
    mhsa_kv_cache **kv;         // (L), batch 1, capacity cap
    int len;
};

// Frees everything a (partly) loaded model holds.
void mhsa__llama_free(mhsa_llama *m);

// MHSA_OK when a load of the model c describes for cap positions with
// weights stored as wdt fits in avail bytes (the loader passes the
// machine's physical memory); else MHSA_ERR_NO_MEMORY naming path, the
// keys, the bytes needed and the bytes there are. Sizes past 2^64 are
// refused too.
mhsa_status mhsa__llama_check_memory(const mhsa_llama_config *c, size_t cap,
                                     mhsa_dtype wdt, const char *path,
                                     uint64_t avail);

#endif
