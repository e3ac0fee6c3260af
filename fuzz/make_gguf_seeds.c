// make_gguf_seeds.c — writes fuzz_gguf's seeds: small valid GGUF files made
// with the tests' writer (tests/gguf_writer.c): every metadata type, one
// tensor of each readable type (in two files) and an unreadable one,
// version 2 with
// general.alignment 64, a tokenizer-like vocabulary with a Llama-like
// tensor set, a whole byte-level vocabulary, a tiny whole Llama with
// tokenizer and its mutations that the loader must refuse (layers the
// metadata leaves unused or lacks, a vocabulary the embedding does not
// match, a special id out of range, a wrongly typed key, a subnormal
// epsilon, control bytes in a string), and an empty file.
// Deterministic. Built with -Dfuzz=true:
//   build-fuzz/fuzz/make_gguf_seeds fuzz/corpus/fuzz_gguf
// The seeds are committed; this program documents how they were made.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gguf/gguf.h"
#include "gguf_writer.h"
#include "models/tokenizer/unicode.h"

// fuzz.sh's -max_len: a longer seed would be cut short.
enum { MAX_SEED = 4096 };

static void save(const gw *w, const char *dir, const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (w->len > MAX_SEED || gw_save(w, p) != 0) {
        fprintf(stderr, "%s: %zu bytes, cannot write or too long\n", p,
                w->len);
        exit(1);
    }
}

static void bytes(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char)(seed >> 16);
    }
}

static void metadata(gw *w)
{
    gw_header(w, 3, 0, 16);
    gw_key(w, "u8", MHSA_GGUF_UINT8);     gw_u8(w, 7);
    gw_key(w, "i8", MHSA_GGUF_INT8);      gw_u8(w, 0xf0);
    gw_key(w, "u16", MHSA_GGUF_UINT16);   gw_u16(w, 513);
    gw_key(w, "i16", MHSA_GGUF_INT16);    gw_u16(w, 0x8001);
    gw_key(w, "u32", MHSA_GGUF_UINT32);   gw_u32(w, 70000);
    gw_key(w, "i32", MHSA_GGUF_INT32);    gw_u32(w, 0xfffffff0u);
    gw_key(w, "f32", MHSA_GGUF_FLOAT32);  gw_f32(w, 0.125f);
    gw_key(w, "bool", MHSA_GGUF_BOOL);    gw_u8(w, 1);
    gw_key(w, "str", MHSA_GGUF_STRING);   gw_str(w, "caf\xc3\xa9");
    gw_key(w, "u64", MHSA_GGUF_UINT64);   gw_u64(w, 1ull << 40);
    gw_key(w, "i64", MHSA_GGUF_INT64);    gw_u64(w, (uint64_t)-5);
    gw_key(w, "f64", MHSA_GGUF_FLOAT64);  gw_f64(w, 2.5);
    gw_key(w, "arr.f32", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_FLOAT32, 2);      gw_f32(w, 1); gw_f32(w, -1);
    gw_key(w, "arr.str", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_STRING, 2);       gw_str(w, "a"); gw_str(w, "");
    gw_key(w, "arr.arr", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_ARRAY, 2);
    gw_arr(w, MHSA_GGUF_INT16, 1);        gw_u16(w, 3);
    gw_arr(w, MHSA_GGUF_STRING, 1);       gw_str(w, "x");
    gw_key(w, "arr.empty", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_BOOL, 0);
}

// f32 [3], f16 [2, 32], bf16 [4], q4_0 [32], q4_1 [2, 32], q8_0 [32],
// q6_K [256] (not readable when this seed was made, readable since).
static void tensors(gw *w, uint32_t version, uint32_t align)
{
    static unsigned char d[7][256];
    static const gw_tensor proto[7] = {
        {"f32", 1, {3}, MHSA_GGML_F32, d[0], 12},
        {"f16", 2, {32, 2}, MHSA_GGML_F16, d[1], 128},
        {"bf16", 1, {4}, MHSA_GGML_BF16, d[2], 8},
        {"q4_0", 1, {32}, MHSA_GGML_Q4_0, d[3], 18},
        {"q4_1", 2, {32, 2}, MHSA_GGML_Q4_1, d[4], 40},
        {"q8_0", 1, {32}, MHSA_GGML_Q8_0, d[5], 34},
        {"q6_k", 1, {256}, 14, d[6], 210},
    };
    for (int i = 0; i < 7; i++)
        bytes(d[i], sizeof d[i], (unsigned)i + 1);
    gw_header(w, version, 7, align == 32 ? 0 : 1);
    if (align != 32) {
        gw_key(w, "general.alignment", MHSA_GGUF_UINT32);
        gw_u32(w, align);
    }
    gw_tensors(w, proto, 7, align);
}

// The other readable block types: q5_0 [32], q5_1 [2, 32], q2_K to q6_K
// [256], iq4_nl [32], iq4_xs [256]; and iq2_xxs [256], which opens but is
// not readable. Scales as random as the rest (NaN and infinite ones too).
static void more_types(gw *w)
{
    static unsigned char d[10][512];
    static const gw_tensor proto[10] = {
        {"q5_0", 1, {32}, MHSA_GGML_Q5_0, d[0], 22},
        {"q5_1", 2, {32, 2}, MHSA_GGML_Q5_1, d[1], 48},
        {"q2_k", 1, {256}, MHSA_GGML_Q2_K, d[2], 84},
        {"q3_k", 1, {256}, MHSA_GGML_Q3_K, d[3], 110},
        {"q4_k", 1, {256}, MHSA_GGML_Q4_K, d[4], 144},
        {"q5_k", 1, {256}, MHSA_GGML_Q5_K, d[5], 176},
        {"q6_k", 2, {256, 2}, MHSA_GGML_Q6_K, d[6], 420},
        {"iq4_nl", 1, {32}, MHSA_GGML_IQ4_NL, d[7], 18},
        {"iq4_xs", 1, {256}, MHSA_GGML_IQ4_XS, d[8], 136},
        {"iq2_xxs", 1, {256}, 16, d[9], 66},
    };
    for (int i = 0; i < 10; i++)
        bytes(d[i], sizeof d[i], (unsigned)i + 20);
    gw_header(w, 3, 10, 0);
    gw_tensors(w, proto, 10, 32);
}

// What a Llama file's loader and tokenizer read, in miniature.
static void llama_like(gw *w)
{
    static const char *const tokens[] = {"a", "b", "ab", "\xc4\xa0", "<s>"};
    static const char *const merges[] = {"a b", "\xc4\xa0 a"};
    static unsigned char emb[5 * 34], norm[4 * 32];
    bytes(emb, sizeof emb, 9);
    bytes(norm, sizeof norm, 10);
    for (int i = 0; i < 5; i++)
        emb[34 * i + 1] = 0x2c;   // finite scales
    gw_header(w, 3, 2, 8);
    gw_key(w, "general.architecture", MHSA_GGUF_STRING);
    gw_str(w, "llama");
    gw_key(w, "llama.block_count", MHSA_GGUF_UINT32);
    gw_u32(w, 1);
    gw_key(w, "llama.rope.freq_base", MHSA_GGUF_FLOAT32);
    gw_f32(w, 100000.0f);
    gw_key(w, "tokenizer.ggml.model", MHSA_GGUF_STRING);
    gw_str(w, "gpt2");
    gw_key(w, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_STRING, 5);
    for (int i = 0; i < 5; i++)
        gw_str(w, tokens[i]);
    gw_key(w, "tokenizer.ggml.merges", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_STRING, 2);
    for (int i = 0; i < 2; i++)
        gw_str(w, merges[i]);
    gw_key(w, "tokenizer.ggml.bos_token_id", MHSA_GGUF_UINT32);
    gw_u32(w, 4);
    gw_key(w, "tokenizer.ggml.add_bos_token", MHSA_GGUF_BOOL);
    gw_u8(w, 0);
    gw_tensor t[2] = {
        {"token_embd.weight", 2, {32, 5}, MHSA_GGML_Q8_0, emb, sizeof emb},
        {"output_norm.weight", 1, {32}, MHSA_GGML_F32, norm, sizeof norm},
    };
    gw_tensors(w, t, 2, 32);
}

// A whole small Llama (width 4, MLP 4, one head, 5 tokens, `layers`
// layers of f32 tensors) with its tokenizer, changed by one mutation: the
// headers the loader's tests refuse (tests/models/test_llama.c).
typedef struct llama_mut {
    const char *name;        // the seed's file name
    int layers;              // layers of tensors in the file
    uint32_t block_count, d_ff, n_tokens;
    float eps;
    const char *arch;
    int scaling_u32;         // llama.rope.scaling.type as a u32
    uint32_t pad_id;         // tokenizer.ggml.padding_token_id
} llama_mut;

static void llama_mutant(gw *w, llama_mut m)
{
    enum { D = 4, V = 5 };
    static const char *const what[] = {
        "attn_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down",
        "attn_q", "attn_k", "attn_v", "attn_output",
    };
    static char names[2][9][32];
    static float data[D * D];
    for (int i = 0; i < D * D; i++)
        data[i] = (float)(i % 7) * 0.125f - 0.375f;
    gw_tensor t[2 + 2 * 9];
    size_t nt = 0;
    t[nt++] = (gw_tensor){"token_embd.weight", 2, {D, V}, MHSA_GGML_F32,
                          data, V * D * 4};
    t[nt++] = (gw_tensor){"output_norm.weight", 1, {D}, MHSA_GGML_F32, data,
                          D * 4};
    for (int l = 0; l < m.layers; l++)
        for (int i = 0; i < 9; i++) {
            snprintf(names[l][i], 32, "blk.%d.%s.weight", l, what[i]);
            t[nt++] = (gw_tensor){names[l][i], i < 2 ? 1 : 2, {D, D},
                                  MHSA_GGML_F32, data,
                                  i < 2 ? D * 4 : D * D * 4};
            if (i < 2)
                t[nt - 1].ne[1] = 0;
        }
    gw_header(w, 3, nt, 14 + (m.scaling_u32 != 0));
    gw_key(w, "general.architecture", MHSA_GGUF_STRING);
    gw_str(w, m.arch);
    gw_key(w, "llama.block_count", MHSA_GGUF_UINT32);
    gw_u32(w, m.block_count);
    gw_key(w, "llama.context_length", MHSA_GGUF_UINT32);
    gw_u32(w, 16);
    gw_key(w, "llama.embedding_length", MHSA_GGUF_UINT32);
    gw_u32(w, D);
    gw_key(w, "llama.feed_forward_length", MHSA_GGUF_UINT32);
    gw_u32(w, m.d_ff);
    gw_key(w, "llama.attention.head_count", MHSA_GGUF_UINT32);
    gw_u32(w, 1);
    gw_key(w, "llama.attention.layer_norm_rms_epsilon", MHSA_GGUF_FLOAT32);
    gw_f32(w, m.eps);
    if (m.scaling_u32) {
        gw_key(w, "llama.rope.scaling.type", MHSA_GGUF_UINT32);
        gw_u32(w, 1);
    }
    gw_key(w, "tokenizer.ggml.model", MHSA_GGUF_STRING);
    gw_str(w, "gpt2");
    gw_key(w, "tokenizer.ggml.pre", MHSA_GGUF_STRING);
    gw_str(w, "gpt-2");
    gw_key(w, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_STRING, m.n_tokens);
    for (uint32_t i = 0; i < m.n_tokens; i++)
        gw_str(w, (const char *[]){"a", "b", "ab", "\xc4\xa0", "<s>",
                                   "c"}[i % 6]);
    gw_key(w, "tokenizer.ggml.merges", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_STRING, 1);
    gw_str(w, "a b");
    gw_key(w, "tokenizer.ggml.bos_token_id", MHSA_GGUF_UINT32);
    gw_u32(w, 4);
    gw_key(w, "tokenizer.ggml.padding_token_id", MHSA_GGUF_UINT32);
    gw_u32(w, m.pad_id);
    gw_key(w, "tokenizer.ggml.add_bos_token", MHSA_GGUF_BOOL);
    gw_u8(w, 0);
    gw_tensors(w, t, nt, 32);
}

// A whole byte-level vocabulary (the 256 byte tokens, a few merges and a
// control token), so that fuzz_gguf's tokenizer check has one that loads.
static void byte_vocab(gw *w)
{
    static const char *const merges[] = {
        "h e", "l l", "he ll", "\xc4\xa0 w", "' s", "2 0",
    };
    static const char *const merged[] = {"he", "ll", "hell", "\xc4\xa0w",
                                         "'s", "<|im_end|>"};
    gw_header(w, 3, 0, 6);
    gw_key(w, "tokenizer.ggml.model", MHSA_GGUF_STRING);
    gw_str(w, "gpt2");
    gw_key(w, "tokenizer.ggml.pre", MHSA_GGUF_STRING);
    gw_str(w, "smollm");
    gw_key(w, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_STRING, 256 + 6);
    for (int b = 0; b < 256; b++) {
        unsigned char u[4];
        size_t n = mhsa__utf8_put(mhsa__byte_to_cp((unsigned char)b), u);
        gw_strn(w, (const char *)u, n);
    }
    for (int i = 0; i < 6; i++)
        gw_str(w, merged[i]);
    gw_key(w, "tokenizer.ggml.merges", MHSA_GGUF_ARRAY);
    gw_arr(w, MHSA_GGUF_STRING, 6);
    for (int i = 0; i < 6; i++)
        gw_str(w, merges[i]);
    gw_key(w, "tokenizer.ggml.eos_token_id", MHSA_GGUF_UINT32);
    gw_u32(w, 256 + 5);
    gw_key(w, "tokenizer.ggml.add_bos_token", MHSA_GGUF_BOOL);
    gw_u8(w, 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    gw w = {0};
    metadata(&w);
    save(&w, argv[1], "metadata");
    gw_free(&w);
    tensors(&w, 3, 32);
    save(&w, argv[1], "tensors_v3");
    gw_free(&w);
    tensors(&w, 2, 64);
    save(&w, argv[1], "tensors_v2_align64");
    gw_free(&w);
    more_types(&w);
    save(&w, argv[1], "tensors_more_types");
    gw_free(&w);
    llama_like(&w);
    save(&w, argv[1], "llama_like");
    gw_free(&w);
    byte_vocab(&w);
    save(&w, argv[1], "byte_vocab");
    gw_free(&w);
    static const llama_mut muts[] = {
        // name, layers, block_count, d_ff, tokens, eps, arch, u32, pad
        {"llama_tiny", 1, 1, 4, 5, 1e-5f, "llama", 0, 0},
        {"llama_unused_layer", 2, 1, 4, 5, 1e-5f, "llama", 0, 0},
        {"llama_missing_layers", 1, 100000, 4, 5, 1e-5f, "llama", 0, 0},
        {"llama_wide_mlp", 1, 1, 1000000, 5, 1e-5f, "llama", 0, 0},
        {"llama_vocab_mismatch", 1, 1, 4, 6, 1e-5f, "llama", 0, 0},
        {"llama_pad_id_range", 1, 1, 4, 5, 1e-5f, "llama", 0, 1000000000},
        {"llama_scaling_u32", 1, 1, 4, 5, 1e-5f, "llama", 1, 0},
        {"llama_eps_subnormal", 1, 1, 4, 5, 1.4e-45f, "llama", 0, 0},
        {"llama_arch_escapes", 1, 1, 4, 5, 1e-5f, "lla\x1b[2J\x07ma", 0, 0},
    };
    for (size_t i = 0; i < sizeof muts / sizeof muts[0]; i++) {
        llama_mutant(&w, muts[i]);
        save(&w, argv[1], muts[i].name);
        gw_free(&w);
    }
    gw_header(&w, 3, 0, 0);
    save(&w, argv[1], "empty");
    gw_free(&w);
    return 0;
}
