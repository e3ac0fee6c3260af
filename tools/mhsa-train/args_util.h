// args_util.h — the command's exit codes and the strict value parsers
// every option parser of mhsa-train (args.c, dp_args.c, text_args.c) and
// mhsa-generate shares (args_util.c), so each flag is checked the same way.
#ifndef MHSA_TRAIN_ARGS_UTIL_H
#define MHSA_TRAIN_ARGS_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "mhsa.h"

// Exit codes of the command.
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

// One value of a flag, parsed strictly (the whole string a number in
// range): CLI_OK, or CLI_USAGE after one line "<args_prog>: ..." naming
// flag and value on err.
extern const char *args_prog;   // "mhsa-train" unless a command sets it
// Writes "<args_prog>: <message>" as one line; returns CLI_USAGE.
int args_usage(FILE *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// An ISA name as mhsa_isa_name gives it (the list: ARGS_ISA_NAMES).
#define ARGS_ISA_NAMES "auto, scalar, avx2, avx512 or neon"
int args_isa(FILE *err, const char *flag, const char *s, mhsa_isa *out);
int args_int(FILE *err, const char *flag, const char *s, long lo, long hi,
             int *out);
int args_float(FILE *err, const char *flag, const char *s, int zero_ok,
               float *out);
int args_u64(FILE *err, const char *flag, const char *s, uint64_t *out);

#endif
