// llama_internal.h — the Llama model's structs, shared by its loader
// (llama_load.c) and its forward (llama.c).
#ifndef MHSA_LLAMA_INTERNAL_H
#define MHSA_LLAMA_INTERNAL_H

#include "models/llama/llama.h"
#include "api/workspace_rebind.h"
#include "core/alloc.h"
#include "core/status.h"
#include "gemm/gemm.h"
#include "gemm/qmatmul.h"
#include "io/file_read.h"
#include "models/gguf/gguf.h"

// A weight matrix (rows, cols) as the runner holds it: elements of an fp
// dtype, or blocks of a computed quantized type (a GGUF file's bytes).
// q carries the shape, the bytes between rows (ld) and the data for both.
typedef struct llama_mat {
    int quant;          // 1: blocks of q.type; 0: elements of dt
    mhsa_dtype dt;      // (fp)
    mhsa_qmat q;
} llama_mat;

// The matrices are stored as the model's wdt, or in file mode each in its
// own type; the norms are fp32.
typedef struct llama_layer {
    const float *attn_norm, *ffn_norm;   // (D) each
    const float *q_norm, *k_norm;        // (head_dim) each, or NULL
    const float *post_attn_norm, *post_ffn_norm;   // (D) each, or NULL
    llama_mat gate, up;                  // (F, D) each
    llama_mat down;                      // (D, F)
    // m->own: the attention's projections, computed by the model, and
    // the layer's block holds no weights (api/cached_qkv.h). Else the
    // block's w_qkv = [attn_q; attn_k; attn_v] and w_out.
    llama_mat wq, wk, wv;                // (A | kvd | kvd, D)
    llama_mat wo;                        // (D, A)
    const float *bqkv;                   // file mode: (nqkv) [bq; bk; bv]
                                         // or NULL (no biases)
    mhsa_block *blk;
} llama_layer;

struct mhsa_llama {
    mhsa_llama_config cfg;
    const mhsa_kernels *k;      // the ISA active at load
    size_t V, L, D, F, cap;
    size_t A;                   // H dh: Q's width and the attention's
                                // output (the blocks' d_model)
    size_t nqkv;                // (H + 2 Hkv) dh: a projected row
    int own;                    // the model computes the projections (file
                                // mode, Q/K norms, or A != D): the blocks
                                // hold no weights
    mhsa_dtype wdt;             // of the matrices (and the blocks' weights);
                                // F32 in file mode (unused there)
    int file;                   // MHSA__WEIGHTS_FILE: as the file stores
                                // them
    float *weights;             // the allocation behind the pointers (with
                                // 16-bit wdt or in file mode: the norms
                                // only)
    void *mats;                 // 16-bit wdt: the matrices; file mode: the
                                // converted ones (and fp ones the file
                                // leaves unaligned); else NULL
    mhsa_file_map map;          // file mode: the file, read-only
    size_t weight_bytes;        // of both, plus the blocks' weights
    char types[96];             // mhsa__llama_weight_types
    llama_mat tok_emb;          // (V, D)
    const float *out_norm;      // (D)
    llama_mat head;             // (V, D): tok_emb when tied
    llama_layer *layer;         // (L)
    mhsa_workspace *ws;         // one for every global layer's block
    mhsa_workspace *ws_local;   // and one for every local one (rebound)
    // Activations for up to cap rows: x, h (cap, D); att (cap, max(D,
    // A)); g, u (cap, F).
    float *acts, *x, *h, *att, *g, *u;
    // File mode: the projected rows (cap, nqkv), and the input rows in the
    // int8 forms the matrices meet (kernels/quant.h), cap rows of up to
    // max(D, F) values each (NULL for a form no matrix meets).
    float *qkv;
    void *xq[MHSA_QACT_COUNT];
    mhsa_gemm_scratch gs;
    float *gemm_buf;
    // A batched step's quantized head: the logits of every part's wanted
    // rows, (head_rows_cap, V), grown to the largest step so far and kept.
    float *head_rows;
    size_t head_rows_cap;
};

struct mhsa_llama_cache {
    const mhsa_llama *m;
    mhsa_kv_cache **kv;         // (L), batch 1, capacity cap
    int len;
};

// Frees everything a (partly) loaded model holds.
void mhsa__llama_free(mhsa_llama *m);

// MHSA_OK when a load of the model c describes for cap positions with
// weights stored as wdt (an mhsa_dtype or MHSA__WEIGHTS_FILE, which
// counts c->file_mat_bytes) fits in avail bytes (the loader passes the
// machine's physical memory); else MHSA_ERR_NO_MEMORY naming path, the
// keys, the bytes needed and the bytes there are. Sizes past 2^64 are
// refused too.
mhsa_status mhsa__llama_check_memory(const mhsa_llama_config *c, size_t cap,
                                     int wdt, const char *path,
                                     uint64_t avail);

// ---- file mode (llama_file.c) ----------------------------------------------

// Whether file mode converts tensors of ggml type `type` to Q8_0 at load
// (Q2_K, Q3_K, IQ4_NL, IQ4_XS).
int mhsa__llama_converts(uint32_t type);
// Bytes tensor t (a matrix of a type gguf.h reads) takes as file mode
// holds it.
uint64_t mhsa__llama_held_bytes(const mhsa_gguf_tensor *t);
// Bytes of m->mats that tensor t needs in file mode: its Q8_0 when
// converted, its blocks packed (kernels/quant.h's P16) when pack (a
// table, or NULL for a matrix that is only read by rows or not to be
// packed) computes its type packed, its own bytes when fp and not
// aligned to its element in the file, else 0.
size_t mhsa__llama_copy_bytes(const mhsa_gguf_file *f,
                              const mhsa_gguf_tensor *t,
                              const mhsa_qkernels *pack);
// *w for tensor t, a (rows, cols) matrix checked against the config, of
// file f mapped at *map: in place in the mapping, or (copy bytes above)
// written at *dst, which then advances; a packed matrix gives its pages
// of the mapping back. row: cols floats of scratch.
void mhsa__llama_file_mat(const mhsa_gguf_file *f, const mhsa_file_map *map,
                          const mhsa_gguf_tensor *t,
                          const mhsa_qkernels *pack, char **dst, float *row,
                          llama_mat *w);

#endif
