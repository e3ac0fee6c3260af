// args_util.c — the value parsers every mhsa-train (and mhsa-generate)
// option goes through (args_util.h): strict numbers in range and ISA
// names, each problem one line naming the flag and the value, exit code 2.
// The floor the option parsers (args.c, dp_args.c, text_args.c) stand on.
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "args_util.h"

const char *args_prog = "mhsa-train";

int args_usage(FILE *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(err, "%s: ", args_prog);
    vfprintf(err, fmt, ap);
    fputc('\n', err);
    va_end(ap);
    return CLI_USAGE;
}

#define bad args_usage   // the short name of the messages below

int args_int(FILE *err, const char *flag, const char *s, long lo, long hi,
             int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE)
        return bad(err, "%s: '%s' is not an integer", flag, s);
    if (v < lo || v > hi)
        return bad(err, "%s %s is out of range (%ld..%ld)", flag, s, lo, hi);
    *out = (int)v;
    return CLI_OK;
}

int args_float(FILE *err, const char *flag, const char *s, int zero_ok,
               float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v))
        return bad(err, "%s: '%s' is not a finite number", flag, s);
    if (v < 0.0f || (!zero_ok && v == 0.0f))
        return bad(err, "%s %s must be %s 0", flag, s, zero_ok ? ">=" : ">");
    *out = v;
    return CLI_OK;
}

int args_u64(FILE *err, const char *flag, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*s == '-' || *s == '\0')
        return bad(err, "%s: '%s' is not a non-negative integer", flag, s);
    unsigned long long v = strtoull(s, &end, 0);
    if (*end != '\0' || errno == ERANGE)
        return bad(err, "%s: '%s' is not a non-negative integer", flag, s);
    *out = (uint64_t)v;
    return CLI_OK;
}

int args_isa(FILE *err, const char *flag, const char *s, mhsa_isa *out)
{
    static const mhsa_isa isas[] = { MHSA_ISA_AUTO, MHSA_ISA_SCALAR,
                                     MHSA_ISA_AVX2, MHSA_ISA_AVX512,
                                     MHSA_ISA_NEON };
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++)
        if (strcmp(s, mhsa_isa_name(isas[k])) == 0) {
            *out = isas[k];
            return CLI_OK;
        }
    return bad(err, "%s: unknown ISA '%s' (" ARGS_ISA_NAMES ")", flag, s);
}
