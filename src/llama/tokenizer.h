// tokenizer.h — the byte-level BPE tokenizer of a GGUF model
// (tokenizer.ggml.model = "gpt2", as GPT-2, SmolLM, Llama 3 and Qwen use):
// text to token ids and back, from the file's vocabulary and merges.
//
// Encoding: the pre-tokenizer that tokenizer.ggml.pre names cuts the text
// into pieces (pretok.h: "gpt-2" and "smollm" are supported); each piece's
// bytes become GPT-2's byte alphabet (one code point per byte, unicode.h),
// and BPE merges them pairwise, lowest rank (tokenizer.ggml.merges order)
// first and leftmost among equals, as llama.cpp's llm_tokenizer_bpe does;
// each final symbol is its token (or, absent from the vocabulary, one
// token per byte; a byte the vocabulary has no token for is left out, as
// llama.cpp leaves it out: SmolLM2's has none for most control bytes).
// Decoding maps the byte alphabet back, so decoding an encoding gives the
// text back byte for byte, invalid UTF-8 included, but for such bytes.
// Special tokens are not recognised inside the text (it is all plain text).
//
// Errors: a tokenizer of another kind (tokenizer.ggml.model "llama", or an
// unknown pre-tokenizer): MHSA_ERR_UNSUPPORTED naming it; missing or
// malformed keys (a token id past the vocabulary, a merge without a space,
// a vocabulary lacking one of the 256 byte tokens): MHSA_ERR_FORMAT
// naming the key.
#ifndef MHSA_LLAMA_TOKENIZER_H
#define MHSA_LLAMA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "io/gguf.h"
#include "mhsa.h"

typedef struct mhsa_tokenizer mhsa_tokenizer;

// Token types (tokenizer.ggml.token_type; all NORMAL when absent).
enum {
    MHSA_TOKEN_NORMAL = 1, MHSA_TOKEN_UNKNOWN = 2, MHSA_TOKEN_CONTROL = 3,
    MHSA_TOKEN_USER_DEFINED = 4, MHSA_TOKEN_UNUSED = 5, MHSA_TOKEN_BYTE = 6
};

// Builds the tokenizer from f's tokenizer.* keys; it copies what it needs
// (f may be closed afterwards).
mhsa_status mhsa__tok_load(const mhsa_gguf_file *f, mhsa_tokenizer **out);
void        mhsa__tok_free(mhsa_tokenizer *t);   // NULL is a no-op

size_t  mhsa__tok_vocab_size(const mhsa_tokenizer *t);
// tokenizer.ggml.bos_token_id / eos_token_id, -1 when the file has none.
int32_t mhsa__tok_bos(const mhsa_tokenizer *t);
int32_t mhsa__tok_eos(const mhsa_tokenizer *t);
// tokenizer.ggml.add_bos_token / add_eos_token (0 when absent).
int     mhsa__tok_adds_bos(const mhsa_tokenizer *t);
int     mhsa__tok_adds_eos(const mhsa_tokenizer *t);
// Token id's text as the vocabulary stores it (byte alphabet), its type.
const char *mhsa__tok_text(const mhsa_tokenizer *t, int32_t id);
int         mhsa__tok_type(const mhsa_tokenizer *t, int32_t id);

// Encodes text[0..len) into ids[0..*n); with add_special, BOS first and
// EOS last as add_bos_token / add_eos_token say. cap must be at least
// len + 2 (enough for any text of len bytes), else MHSA_ERR_INVALID_ARG.
mhsa_status mhsa__tok_encode(const mhsa_tokenizer *t, const char *text,
                             size_t len, int add_special, int32_t *ids,
                             size_t cap, size_t *n);

// Decodes ids[0..n) into buf[0..*len) (not NUL-terminated): normal tokens
// through the byte alphabet back to their bytes, user-defined ones as
// their text; control tokens (BOS, EOS, ...) are left out unless
// `special`, when their text is written. An id outside the vocabulary:
// MHSA_ERR_INVALID_ARG. A buffer too small: MHSA_ERR_SHAPE with *len the
// size needed (buf then holds a prefix). Allocates nothing.
mhsa_status mhsa__tok_decode(const mhsa_tokenizer *t, const int32_t *ids,
                             size_t n, int special, char *buf, size_t cap,
                             size_t *len);

#endif
