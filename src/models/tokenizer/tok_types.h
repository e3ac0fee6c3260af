// tok_types.h — the tokenizer's handle and its token types: what the
// loader and its calls (tokenizer.h) and the encoders, the special-token
// partition and the vocabulary (tok_internal.h) all stand on, so that the
// parts below the loader need not include the loader's header.
#ifndef MHSA_LLAMA_TOK_TYPES_H
#define MHSA_LLAMA_TOK_TYPES_H

typedef struct mhsa_tokenizer mhsa_tokenizer;

// Token types (tokenizer.ggml.token_type; all NORMAL when absent).
enum {
    MHSA_TOKEN_NORMAL = 1, MHSA_TOKEN_UNKNOWN = 2, MHSA_TOKEN_CONTROL = 3,
    MHSA_TOKEN_USER_DEFINED = 4, MHSA_TOKEN_UNUSED = 5, MHSA_TOKEN_BYTE = 6
};

#endif
