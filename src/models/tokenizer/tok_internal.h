// tok_internal.h — the tokenizer's state, shared by its files: loading and
// encoding (tokenizer.c), decoding (tok_decode.c), special-token partition
// (tok_special.c), and the
// two encoders of a run of plain text, byte-level BPE (tok_bpe.c) and
// SentencePiece-style (tok_spm.c).
#ifndef MHSA_LLAMA_TOK_INTERNAL_H
#define MHSA_LLAMA_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pretok.h"
#include "tok_types.h"

typedef enum mhsa_tok_kind {
    MHSA_TOK_BPE,   // tokenizer.ggml.model "gpt2"
    MHSA_TOK_SPM,   // tokenizer.ggml.model "llama"
} mhsa_tok_kind;

enum { MHSA_TOK_MAX_EOG = 16 };

struct mhsa_tokenizer {
    mhsa_tok_kind kind;
    size_t n_vocab, n_merges;
    char *arena;               // every token and merge, NUL-terminated
    const char **text;         // n_vocab
    uint32_t *text_len;
    unsigned char *type;       // n_vocab token types
    float *score;              // n_vocab (SPM; 0 when the file has none)
    const char **merge;        // n_merges, in rank order (BPE)
    uint32_t *merge_len;
    int32_t *tok_slot;         // tok_mask + 1 slots: id or -1
    int32_t *merge_slot;       // merge_mask + 1 slots: rank or -1
    size_t tok_mask, merge_mask;
    // BPE: the token of each byte's code point in GPT-2's byte alphabet;
    // SPM: the byte's "<0xXX>" token, else its one-byte token, else unk;
    // -1 when none (the byte is then left out).
    int32_t byte_token[256];
    int32_t bos, eos, unk;
    int add_bos, add_eos, add_space_prefix;
    int32_t *special;          // n_special ids, longest text first
    size_t n_special;
    int32_t eog[MHSA_TOK_MAX_EOG];   // end-of-generation ids
    int n_eog;
    mhsa_pretok pre;
    int ignore_merges;         // BPE: a whole piece that is a token is it
};

// FNV-1a, the hash of both tables.
#define MHSA_FNV_BASIS 0xcbf29ce484222325ull
static inline uint64_t mhsa__fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

// The id of the token whose text is s[0..n), or -1.
int32_t mhsa__tok_find(const mhsa_tokenizer *t, const char *s, size_t n);
// The rank of the BPE merge "a b", or -1.
int32_t mhsa__tok_find_merge(const mhsa_tokenizer *t, const char *a,
                             size_t an, const char *b, size_t bn);

// SPM byte tokens are "<0xXX>" (hex digits of either case): the byte, or
// -1 for any other text.
int mhsa__tok_byte_of(const char *s, size_t n);

// A piece of the text after special-token partition: a special token
// (id >= 0) or the plain text [off, off + len) (id -1).
typedef struct mhsa_tok_frag {
    size_t off, len;
    int32_t id;
} mhsa_tok_frag;

// Cuts text[0..len) at the special tokens as llama.cpp's
// tokenizer_st_partition does: longest token text first, every occurrence
// in what is still plain text, left to right. User-defined tokens always;
// control and unknown ones only with parse_special. fr and tmp need room
// for 2 len + 1 fragments; returns how many are in fr.
size_t mhsa__tok_partition(const mhsa_tokenizer *t, const unsigned char *s,
                           size_t len, int parse_special, mhsa_tok_frag *fr,
                           mhsa_tok_frag *tmp);

// Scratch of the BPE encoder for a text of up to n bytes.
typedef struct mhsa_bpe_scratch {
    mhsa_pretok_scratch pre;
    size_t *ends;        // n + 1: the pre-tokenizer's piece ends
    char *enc;           // 2 n + 2: a piece in the byte alphabet
    size_t *off, *len;   // n + 1 each: symbols in enc
    int32_t *rank;       // n + 1: rank of merging symbol i with i + 1
} mhsa_bpe_scratch;

// Bytes of BPE scratch for n bytes of text, and carving it out of mem.
size_t mhsa__bpe_scratch_bytes(size_t n);
void   mhsa__bpe_scratch_init(mhsa_bpe_scratch *b, void *mem, size_t n);
// BPE of the plain text p[0..n): its ids appended at ids + *k.
void mhsa__bpe_encode(const mhsa_tokenizer *t, const unsigned char *p,
                      size_t n, const mhsa_bpe_scratch *b, int32_t *ids,
                      size_t *k);

// Scratch of the SPM encoder for a text of up to n bytes (and one space).
typedef struct mhsa_spm_sym mhsa_spm_sym;
typedef struct mhsa_spm_bigram mhsa_spm_bigram;
typedef struct mhsa_spm_scratch {
    char *esc;               // 3 (n + 1): spaces escaped as U+2581
    mhsa_spm_sym *sym;       // 3 (n + 1) symbols
    mhsa_spm_bigram *heap;   // 9 (n + 1) candidate merges
} mhsa_spm_scratch;

size_t mhsa__spm_scratch_bytes(size_t n);
void   mhsa__spm_scratch_init(mhsa_spm_scratch *b, void *mem, size_t n);
// SentencePiece-style encoding of p[0..n), with a space in front when
// `prefix`: its ids appended at ids + *k (at most 3 (n + 1)).
void mhsa__spm_encode(const mhsa_tokenizer *t, const unsigned char *p,
                      size_t n, int prefix, const mhsa_spm_scratch *b,
                      int32_t *ids, size_t *k);

#endif
