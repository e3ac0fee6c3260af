// tokenizer.h — a GGUF model's tokenizer, from its tokenizer.* keys: text
// to token ids and back, as llama.cpp does it. Two kinds:
//
// - byte-level BPE (tokenizer.ggml.model = "gpt2", as GPT-2, SmolLM,
//   Llama 3 and Qwen use): the pre-tokenizer that tokenizer.ggml.pre names
//   cuts the text into pieces (pretok.h: "gpt-2", "smollm", "llama-bpe",
//   "qwen2"); each piece's bytes become GPT-2's byte alphabet (unicode.h)
//   (with "llama-bpe", a piece that is a token is that token) and BPE merges
//   them pairwise, lowest rank (tokenizer.ggml.merges order) first and
//   leftmost among equals (llama.cpp's llm_tokenizer_bpe); a final symbol
//   absent from the vocabulary goes out one token per byte, a byte the
//   vocabulary has no token for is left out, as llama.cpp leaves it out
//   (SmolLM2's has none for most control bytes). tok_bpe.c.
// - SentencePiece-style (tokenizer.ggml.model = "llama", Llama 2, Mistral,
//   TinyLlama): spaces become U+2581, a space goes in front of the text
//   (and after every special token) when tokenizer.ggml.add_space_prefix
//   says so (the default), and adjacent symbols merge by the score
//   (tokenizer.ggml.scores) of the token they form, highest first, as
//   llama.cpp's llm_tokenizer_spm does; what forms no token goes out as
//   byte tokens "<0xXX>" (else the byte's own one-character token, else
//   unk, where llama.cpp fails). tok_spm.c.
//
// Before either, the text is cut at the special tokens it spells
// (tok_special.c): user-defined tokens always, control and unknown ones
// (such as "<|im_start|>") with MHSA_TOK_PARSE_SPECIAL, as llama.cpp's
// parse_special, which llama-cli and llama-simple use for the prompt.
// Tokens spelled as llama.cpp's end-of-generation texts ("<|im_end|>",
// "<|endoftext|>", "<|eot_id|>", ...) are control tokens whatever their
// type in the file, as there.
//
// Decoding gives each token's bytes as llama.cpp's token_to_piece does:
// BPE through the byte alphabet back, SPM with "▁" as a space and byte
// tokens as their byte; user-defined tokens as their text; control and
// unknown ones only with MHSA_TOK_DECODE_SPECIAL; unused ones never. So
// decoding an encoding gives the text back byte for byte (invalid UTF-8
// too, where MHSA_TOK_ALLOW_INVALID_UTF8 let it be encoded), but for bytes
// without a token, and, for SPM, with the space prefix, which
// MHSA_TOK_STRIP_SPACE drops as llama_detokenize does.
//
// Errors: a tokenizer of another kind ("bert", "t5", ...; an unknown
// pre-tokenizer): MHSA_ERR_UNSUPPORTED naming it; missing or malformed
// keys (a token id past the vocabulary, a merge without a space, scores or
// types not one per token, a NaN score, a byte token not "<0xXX>"):
// MHSA_ERR_FORMAT naming the key.
#ifndef MHSA_LLAMA_TOKENIZER_H
#define MHSA_LLAMA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "models/gguf/gguf.h"
#include "mhsa.h"
#include "tok_types.h"

// Builds the tokenizer from f's tokenizer.* keys; it copies what it needs
// (f may be closed afterwards).
mhsa_status mhsa__tok_load(const mhsa_gguf_file *f, mhsa_tokenizer **out);
void        mhsa__tok_free(mhsa_tokenizer *t);   // NULL is a no-op

size_t  mhsa__tok_vocab_size(const mhsa_tokenizer *t);
// tokenizer.ggml.bos_token_id / eos_token_id, -1 when the file has none.
int32_t mhsa__tok_bos(const mhsa_tokenizer *t);
int32_t mhsa__tok_eos(const mhsa_tokenizer *t);
// tokenizer.ggml.add_bos_token / add_eos_token; when absent, as llama.cpp:
// SPM and BPE with "llama-bpe" add BOS, other BPE does not, neither adds
// EOS. SPM's BOS and EOS default to ids 1 and 2.
int     mhsa__tok_adds_bos(const mhsa_tokenizer *t);
int     mhsa__tok_adds_eos(const mhsa_tokenizer *t);
int     mhsa__tok_is_spm(const mhsa_tokenizer *t);
// Whether generation ends at id: EOS, EOT, EOM, or a token spelled as one
// of llama.cpp's end-of-generation texts (llama_vocab_is_eog).
int     mhsa__tok_is_eog(const mhsa_tokenizer *t, int32_t id);
// Token id's text as the vocabulary stores it (byte alphabet), its type.
const char *mhsa__tok_text(const mhsa_tokenizer *t, int32_t id);
int         mhsa__tok_type(const mhsa_tokenizer *t, int32_t id);

enum {
    MHSA_TOK_ADD_SPECIAL = 1,     // encode: BOS / EOS as the file says
    MHSA_TOK_PARSE_SPECIAL = 2,   // encode: control tokens in the text
    MHSA_TOK_ALLOW_INVALID_UTF8 = 4,   // encode: invalid UTF-8 taken
                                  // byte by byte (as llama.cpp's ids of
                                  // tests/data/llama were), not refused
    MHSA_TOK_DECODE_SPECIAL = 1,  // decode: control tokens' text
    MHSA_TOK_STRIP_SPACE = 2,     // decode: drop the space prefix
};

// The most ids a text of len bytes can encode to (len + 2 for BPE,
// 4 len + 5 for SPM).
size_t mhsa__tok_max_ids(const mhsa_tokenizer *t, size_t len);

// Encodes text[0..len) into ids[0..*n); flags MHSA_TOK_ADD_SPECIAL (BOS
// first and EOS last as add_bos_token / add_eos_token say) and
// MHSA_TOK_PARSE_SPECIAL. cap must be at least mhsa__tok_max_ids, else
// MHSA_ERR_INVALID_ARG. Text that is not valid UTF-8 (a stray continuation
// byte, 0xc0, 0xc1, 0xf5-0xff, an overlong or truncated sequence, a
// surrogate, past U+10FFFF) is MHSA_ERR_INVALID_ARG naming the byte offset
// and value of the first bad byte, with nothing written, unless
// MHSA_TOK_ALLOW_INVALID_UTF8.
mhsa_status mhsa__tok_encode(const mhsa_tokenizer *t, const char *text,
                             size_t len, unsigned flags, int32_t *ids,
                             size_t cap, size_t *n);

// Decodes ids[0..n) into buf[0..*len) (not NUL-terminated), each token as
// above; flags MHSA_TOK_DECODE_SPECIAL (control tokens' text, else they
// are left out) and MHSA_TOK_STRIP_SPACE (ids[0]'s leading space is left
// out when the vocabulary adds a space prefix). An id outside the vocabulary:
// MHSA_ERR_INVALID_ARG. A buffer too small: MHSA_ERR_SHAPE with *len the
// size needed (buf then holds a prefix). Allocates nothing.
mhsa_status mhsa__tok_decode(const mhsa_tokenizer *t, const int32_t *ids,
                             size_t n, unsigned flags, char *buf, size_t cap,
                             size_t *len);

#endif
