// family_files.h — small Qwen2 and Llama 3 GGUF files (random weights, the
// real structure at a small size) with a byte-level BPE vocabulary written
// for the test, and the texts their tokenizers are checked on. Shared by
// tests/models/test_families.c and tools/llama-ref/family_ref.c, which
// computes llama.cpp's reference on the very same files
// (tests/data/llama/family_refs.txt).
#ifndef MHSA_TEST_FAMILY_FILES_H
#define MHSA_TEST_FAMILY_FILES_H

#include <stddef.h>
#include <stdint.h>

typedef enum family { FAMILY_QWEN2, FAMILY_LLAMA3, N_FAMILIES } family;

// The shape of both: d_model 64, 4 heads of 16 sharing 2 KV heads (GQA),
// d_ff 128, 2 layers, context 64. Qwen2: biases on Q, K and V, tied head,
// rope base 1e6, pre-tokenizer "qwen2". Llama 3: rope_freqs.weight, an
// output.weight, rope base 5e5, pre-tokenizer "llama-bpe" (adds BOS).
enum { FAM_D = 64, FAM_H = 4, FAM_KV = 2, FAM_F = 128, FAM_L = 2,
       FAM_CTX = 64 };

// The model's name in the reference file: "qwen2", "llama3".
const char *family_name(family f);
// Writes family f's file to path, its matrices as F32 (q8 = 0) or Q8_0
// (q8 = 1; norms, biases and rope factors stay F32). 0 on success.
int family_write(family f, int q8, const char *path);
// The same with tokenizer.chat_template = chat_template (NULL: no key).
int family_write_ex(family f, int q8, const char *chat_template,
                    const char *path);
// The tests' fixture: family f's file (q8 as family_write; chat_template
// or NULL), written once per process under $TMPDIR (else /tmp) with the
// process id in its name, and its path; NULL if it cannot be written. A
// process uses one template: the file is keyed on whether one is given.
const char *family_temp_file(family f, int q8, const char *chat_template);
// Deletes every file family_temp_file wrote (a test case's teardown).
void family_temp_remove(void);
// Tokens of the vocabulary (the same for both).
int family_vocab_size(void);
// The token ids the logits are compared on (FAMILY_N_IDS of them).
enum { FAMILY_N_IDS = 10 };
extern const int32_t family_ids[FAMILY_N_IDS];

// The texts each tokenizer is checked on.
extern const char *const family_texts[];
extern const size_t family_n_texts;

#endif
