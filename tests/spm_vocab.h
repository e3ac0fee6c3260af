// spm_vocab.h — a small SentencePiece-style ("llama") vocabulary as a
// vocabulary-only GGUF file, for the SPM tokenizer's test
// (test_tokenizer.c) and for recording llama.cpp's ids on it
// (tools/llama-ref/make_spm_ids.sh), so that both read the same file. Also
// the escaping of the cases file (tests/data/llama/spm_ids.txt).
#ifndef MHSA_TEST_SPM_VOCAB_H
#define MHSA_TEST_SPM_VOCAB_H

#include <stddef.h>

// Ids of the vocabulary: <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258,
// then the pieces, then a user-defined and two control tokens.
enum { SPM_UNK = 0, SPM_BOS = 1, SPM_EOS = 2, SPM_BYTE0 = 3 };

// Writes the vocabulary to path (general.architecture "llama" and the
// tokenizer.* keys, no tensors). prefix: tokenizer.ggml.add_space_prefix
// 0 or 1, or -1 for no such key (llama.cpp's default: 1). 0 on success.
int spm_vocab_save(const char *path, int prefix);
size_t spm_vocab_size(void);

// "\xNN", "\n" and "\\" in s (NUL-terminated) to bytes in out (room for
// strlen(s) bytes); returns the byte count.
size_t spm_unescape(const char *s, char *out);
// Bytes b[0..n) as a line: bytes below 0x20, above 0x7e, a backslash, and
// a space at either end as "\xNN"; out needs 4 n + 1 bytes (NUL-ended).
void spm_escape(const char *b, size_t n, char *out);

#endif
