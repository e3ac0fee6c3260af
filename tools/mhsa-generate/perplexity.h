// perplexity.h — mhsa-generate --perplexity FILE on a Llama-architecture
// GGUF model (perplexity.c): the perplexity of a text, computed as
// llama.cpp's llama-perplexity computes it, so that the two compare.
#ifndef MHSA_GENERATE_PERPLEXITY_H
#define MHSA_GENERATE_PERPLEXITY_H

#include "args.h"

// The default chunk size (llama-perplexity's -c default), lowered to the
// model's context when that is less.
enum { GEN_PPL_DEFAULT_CTX = 512 };

// Scores a->prompt (the text of --perplexity FILE, read already) with the
// GGUF model a->model in chunks of a->ctx tokens (0: the default above).
// Prints "perplexity: X" (%.4f) as the last line of stdout; the running
// estimate after each chunk ("[1]x,[2]y,...", as llama-perplexity), the
// final estimate with its +/- and the timing to stderr. Returns a CLI_*
// code: CLI_USAGE for a model, --ctx or text it cannot score (a text
// shorter than 2 chunks among them), CLI_FAIL for a failure while running.
int mhsa_generate_perplexity(const gen_args *a);

#endif
