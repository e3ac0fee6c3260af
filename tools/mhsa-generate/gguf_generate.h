// gguf_generate.h — mhsa-generate on a Llama-architecture GGUF model
// (gguf_generate.c), on the options as args.h parsed and read them.
#ifndef MHSA_GENERATE_GGUF_GENERATE_H
#define MHSA_GENERATE_GGUF_GENERATE_H

#include "args.h"
#include "mhsa_model.h"

// Runs a GGUF model: text (or --ids) to stdout, timings to stderr, or
// --bench's pp512/tg64 figures. a->prompt holds the whole prompt (read
// already). Returns a CLI_* code.
int mhsa_generate_gguf(const gen_args *a);

// What both GGUF modes (generation and --perplexity) do first: the
// threads and --isa, then the model file's tokenizer and metadata into
// *vocab (a vocab_only model). Returns CLI_OK, or a CLI_* code with the
// error printed.
int gen_gguf_start(const gen_args *a, mhsa_model **vocab);

// --weight-dtype as the model API names it.
mhsa_model_weights gen_weights(const gen_args *a);

// The prompt's ids (flags: MHSA_TOKENIZE_*) into a new *ids with room for
// `extra` more; *n the prompt's, *cap the room. Returns CLI_OK, or a CLI_*
// code with the error printed (text that is not UTF-8 is a usage error).
int gen_tokenize(const gen_args *a, const mhsa_model *vocab, unsigned flags,
                 size_t extra, int32_t **ids, size_t *n, size_t *cap);

// Prints "--model FILE: <mhsa_last_error()>"; returns CLI_USAGE.
int gen_model_error(const gen_args *a);

// The library's sampler for a's --temperature (0: greedy), --top-k and
// --seed over n_vocab logits, into *out. CLI_OK, or CLI_FAIL with the
// error printed.
int gen_sampler(const gen_args *a, int n_vocab, mhsa_sampler **out);

#endif
