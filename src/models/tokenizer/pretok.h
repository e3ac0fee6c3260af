// pretok.h — the pre-tokenizer of byte-level BPE: text cut into the pieces
// that BPE then encodes one by one (no token spans two pieces).
//
// GPT-2's split is the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// implemented by hand over code points, as llama.cpp's
// unicode_regex_split_custom_gpt2 does (src/unicode.cpp). SmolLM's
// ("smollm", also StarCoder's) first cuts every \p{N} code point out as a
// piece of its own, then splits the rest as GPT-2 does. Llama 3's
// ("llama-bpe") is the regex llama.cpp c392e50 maps that name to
//   (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|
//   [^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// (llama-vocab.cpp; unicode.cpp runs it as unicode_regex_split_custom_llama3)
// and Qwen2's ("qwen2") the same with \p{N} for \p{N}{1,3}: every digit
// alone (llama.cpp runs that one through std::regex on a text whose
// non-ASCII code points are collapsed to one byte per class; the classes
// are the same). Invalid UTF-8
// bytes are pieces' bytes like any other, of class "other" (llama.cpp
// turns them into U+FFFD first, so it cannot give them back; we keep every
// byte, so that decoding gives the input back exactly).
#ifndef MHSA_LLAMA_PRETOK_H
#define MHSA_LLAMA_PRETOK_H

#include <stddef.h>
#include <stdint.h>

typedef enum mhsa_pretok {
    MHSA_PRETOK_GPT2,     // "gpt-2"
    MHSA_PRETOK_SMOLLM,   // "smollm": every digit alone, then GPT-2
    MHSA_PRETOK_LLAMA3,   // "llama-bpe" (and "llama3", "llama-v3")
    MHSA_PRETOK_QWEN2,    // "qwen2" (and "deepseek-r1-qwen")
} mhsa_pretok;

// Scratch for splitting a text of n bytes: 2 * n + 1 size_t and n + 1
// uint32_t and bytes (callers allocate it once per text).
typedef struct mhsa_pretok_scratch {
    size_t *unit_off;     // n + 1: byte offset of each code point
    uint32_t *unit_cp;    // n: the code points (MHSA_CP_INVALID for bytes)
    unsigned char *unit_cls;   // n: their mhsa_cp_class
} mhsa_pretok_scratch;

// Cuts text[0..n) into pieces: ends[0..k) are their end byte offsets
// (strictly increasing, the last is n; ends needs room for n). Returns k.
size_t mhsa__pretok_split(mhsa_pretok kind, const unsigned char *text,
                          size_t n, const mhsa_pretok_scratch *s,
                          size_t *ends);

#endif
