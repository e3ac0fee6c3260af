// gguf_generate.h — mhsa-generate on a Llama-architecture GGUF model
// (gguf_generate.c), on the options as args.h parsed and read them.
#ifndef MHSA_GENERATE_GGUF_GENERATE_H
#define MHSA_GENERATE_GGUF_GENERATE_H

#include "args.h"

// Runs a GGUF model: text (or --ids) to stdout, timings to stderr, or
// --bench's pp512/tg64 figures. a->prompt holds the whole prompt (read
// already). Returns a CLI_* code.
int mhsa_generate_gguf(const gen_args *a);

#endif
