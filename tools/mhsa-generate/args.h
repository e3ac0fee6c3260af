// args.h — mhsa-generate's options: parsing argv (strictly: every value
// checked, each problem one line naming the flag and the value), --help,
// and reading the prompt from --file or stdin (--prompt -).
#ifndef MHSA_GENERATE_ARGS_H
#define MHSA_GENERATE_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mhsa.h"

// The largest prompt --file or --prompt - reads (64 MiB).
#define GEN_MAX_PROMPT_BYTES ((size_t)64 << 20)

// --weight-dtype file: the weights as the GGUF file stores them (the
// value of llama.h's MHSA__WEIGHTS_FILE).
enum { GEN_WEIGHTS_FILE = -1 };

// mhsa-generate's options (defaults: prompt "\n", n 200, top_k 40,
// temperature 0.8, seed 1, threads 0 = OpenMP's choice, isa auto,
// weight_dtype GEN_WEIGHTS_FILE, which a GPT checkpoint takes as F32;
// GGUF models only: kv_dtype F32, ids 0, bench 0, ctx 0 = prompt + n).
typedef struct gen_args {
    const char *model;            // non-NULL and non-empty once parsed
    const char *prompt;           // prompt_len bytes (may hold NULs once
    size_t prompt_len;            // read from a file)
    const char *prompt_file;      // --file PATH, or NULL
    int prompt_stdin;             // --prompt -: the prompt is stdin
    char *prompt_buf;             // what gen_read_prompt read (owned)
    int n, top_k, threads;        // n in [0, 2^30], top_k in [0, 2^24],
                                  // threads 0 or in [1, 1024]
    float temperature;            // finite, >= 0
    uint64_t seed;
    mhsa_isa isa;                 // auto, scalar, avx2, avx512 or neon
    mhsa_dtype kv_dtype;          // --kv-dtype f32|f16|bf16
    int weight_dtype;             // --weight-dtype file|f32|f16|bf16:
                                  // GEN_WEIGHTS_FILE or an mhsa_dtype
    int ids, bench;               // --ids, --bench (flags without a value)
    int no_parse_special;         // --no-parse-special: the prompt's
                                  // special tokens' text is plain text
    int special;                  // --special: control tokens printed
    int ctx;                      // --ctx: cache positions, 0 or >= 1
                                  // (with --perplexity: the chunk size)
    const char *perplexity;       // --perplexity FILE: score the text
                                  // of FILE instead of generating
    const char *gen_flag;         // the first option given that only
                                  // generation uses (--prompt, --file,
                                  // -n, --temperature, --top-k, --seed,
                                  // --ids, --bench, --special), or NULL
    int gguf_only;                // --kv-dtype, --ctx, --weight-dtype
                                  // file or a flag above was given
    int help;                     // --help or -h: nothing else is checked
} gen_args;

// Parses argv into *a (defaults first); reads no file. Returns CLI_OK, or
// CLI_USAGE after writing one line naming the bad flag or value to err;
// "--help" sets a->help and returns CLI_OK.
int parse_gen_args(int argc, char **argv, gen_args *a, FILE *err);

// The text of --help.
void print_gen_help(FILE *f);

// Reads the prompt of --file (a regular file; anything else, such as a
// FIFO or a device, is refused before a byte is read, without blocking)
// or of --prompt - (stdin, whatever it is) into a->prompt_buf, at most
// GEN_MAX_PROMPT_BYTES; nothing to do for --prompt TEXT. With
// --perplexity FILE, FILE's text is read the same way, less one final
// '\n' (as llama-perplexity -f reads it). CLI_OK, or CLI_USAGE after one
// line on err naming the flag.
int gen_read_prompt(gen_args *a, FILE *err);

// The flag the prompt came from, for messages: "--prompt", "--prompt -",
// "--file <path>" or "--perplexity <path>" (quoted as gen_quote does).
const char *gen_prompt_flag(const gen_args *a);

// Frees what gen_read_prompt read.
void gen_args_free(gen_args *a);

#endif
