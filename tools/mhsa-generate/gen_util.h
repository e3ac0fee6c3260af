// gen_util.h — what both of mhsa-generate's model paths (generate.c,
// gguf_generate.c) and its option parser (args.c) stand on: the exit
// codes, messages on stderr, quoting of what the user or a file gave, the
// clock, and the thread count. It knows nothing of the options
// themselves (args.h stands on it, not the other way).
#ifndef MHSA_GENERATE_GEN_UTIL_H
#define MHSA_GENERATE_GEN_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "args_util.h"   // CLI_OK, CLI_FAIL, CLI_USAGE, value parsers
                         // (shared with mhsa-train)
#include "mhsa_model.h"

// The most threads mhsa-generate runs on (--threads, OMP_NUM_THREADS).
enum { GEN_MAX_THREADS = 1024 };

// s as it may be shown in a message: printable ASCII and well-formed
// UTF-8 of printable characters as they are, every other byte (controls,
// C1 controls, DEL, invalid UTF-8, the backslash) as \xNN, and at most
// about 200 bytes of s (then "..."). The result lives until the 4th call
// after this one (a ring of buffers), so a message may quote a few values.
const char *gen_quote(const char *s);
// The same for the n bytes at s (which may hold NULs).
const char *gen_quote_n(const char *s, size_t n);

// "mhsa-generate: <message>" as one line on err; returns CLI_USAGE.
int gen_usage(FILE *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// "mhsa-generate: <what>: <mhsa_last_error()>" on stderr, returning
// CLI_FAIL.
int gen_fail(const char *what);

// Monotonic seconds.
double gen_now_s(void);

// Sets OpenMP's thread count: threads when it is > 0 (--threads, already
// in [1, GEN_MAX_THREADS]); else OpenMP's own count (OMP_NUM_THREADS, or
// the CPUs), lowered to GEN_MAX_THREADS with a warning on stderr when it
// is more.
void gen_set_threads(int threads);

#endif

// Opens path for reading without blocking (O_NONBLOCK: a FIFO with no
// writer or a device does not hang the open) and refuses, before reading a
// byte, what is not a regular file: "<flag> <path>: is not a regular file
// (a FIFO)" and the like, or "<flag> <path>: cannot open: <reason>", on
// err. CLI_OK with the descriptor in *fd and the size in *size, else
// CLI_USAGE.
int gen_open_regular(FILE *err, const char *flag, const char *path, int *fd,
                     long long *size);

// What --model names: a GGUF file (*is_gguf 1: it starts with "GGUF"), or
// a file that could be a safetensors one (*is_gguf 0: an 8-byte header
// length that fits the file, then '{'), for the loaders to read. Anything
// else is refused with one line on err: not a regular file, cannot be
// opened, or "neither a GGUF file (magic 'GGUF') nor a safetensors file".
// CLI_OK or CLI_USAGE.
int gen_model_kind(FILE *err, const char *path, int *is_gguf);
