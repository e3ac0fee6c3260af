// gguf_generate.h — mhsa-generate on a Llama-architecture GGUF model
// (gguf_generate.c), on the options as args.h parsed and read them.
#ifndef MHSA_GENERATE_GGUF_GENERATE_H
#define MHSA_GENERATE_GGUF_GENERATE_H

#include "args.h"
#include "models/tokenizer/tokenizer.h"

// Runs a GGUF model: text (or --ids) to stdout, timings to stderr, or
// --bench's pp512/tg64 figures. a->prompt holds the whole prompt (read
// already). Returns a CLI_* code.
int mhsa_generate_gguf(const gen_args *a);

// What both GGUF modes (generation and --perplexity) do first: the
// threads and --isa, then the model file's tokenizer into *tok. Returns
// CLI_OK, or a CLI_* code with the error printed.
int gen_gguf_start(const gen_args *a, mhsa_tokenizer **tok);

// Prints "--model FILE: <mhsa_last_error()>"; returns CLI_USAGE.
int gen_model_error(const gen_args *a);

#endif
