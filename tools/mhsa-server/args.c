// args.c — mhsa-server's command line (args.h).
#include "args.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
"usage: mhsa-server --model FILE [options]\n"
"An OpenAI-compatible HTTP server (POST /v1/completions,\n"
"/v1/chat/completions; GET /v1/models, /health) with continuous batching.\n"
"  --model FILE         a GGUF model file\n"
"  --host ADDR          address to listen on (127.0.0.1)\n"
"  --port N             port, 0 to 65535; 0 picks a free one (8080)\n"
"  --parallel N         requests computed at once (slots), 1 to 256 (4)\n"
"  --ctx N              positions per slot: prompt + answer (default:\n"
"                       the model's context, at most 2048)\n"
"  --threads N          OpenMP threads, 1 to 1024 (OMP_NUM_THREADS)\n"
"  --queue N            requests waiting for a slot before 503, 1 to\n"
"                       65536 (64)\n"
"  --max-body BYTES     largest request body before 413 (1048576)\n"
"  --max-tokens N       max_tokens when a request gives none (256)\n"
"  --chat-template NAME chatml, llama3, gemma or llama2 (default: the\n"
"                       format the model's template is recognised as)\n"
"  --kv-dtype f32|f16|bf16  the slots' KV cache type (f32)\n"
"It prints \"listening on http://HOST:PORT\" once it accepts requests;\n"
"SIGINT or SIGTERM stops it.\n";

// A whole decimal integer in [lo, hi] into *out; else a message on err.
static int parse_long(FILE *err, const char *flag, const char *v, long lo,
                      long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(err, "mhsa-server: %s '%s': expected an integer in [%ld, "
                "%ld]\n", flag, v, lo, hi);
        return ARGS_BAD;
    }
    *out = x;
    return ARGS_OK;
}

static int parse_int(FILE *err, const char *flag, const char *v, long lo,
                     long hi, int *out)
{
    long x = 0;
    int rc = parse_long(err, flag, v, lo, hi, &x);
    *out = (int)x;
    return rc;
}

static int parse_kv(FILE *err, const char *v, mhsa_dtype *out)
{
    if (!strcmp(v, "f32"))
        *out = MHSA_F32;
    else if (!strcmp(v, "f16"))
        *out = MHSA_F16;
    else if (!strcmp(v, "bf16"))
        *out = MHSA_BF16;
    else {
        fprintf(err, "mhsa-server: --kv-dtype '%s': expected f32, f16 or "
                "bf16\n", v);
        return ARGS_BAD;
    }
    return ARGS_OK;
}

// One flag and its value.
static int parse_flag(srv_args *a, const char *f, const char *v, FILE *err)
{
    if (!strcmp(f, "--model"))
        a->model = v;
    else if (!strcmp(f, "--host"))
        a->host = v;
    else if (!strcmp(f, "--chat-template"))
        a->chat_template = v;
    else if (!strcmp(f, "--port"))
        return parse_int(err, f, v, 0, 65535, &a->port);
    else if (!strcmp(f, "--parallel"))
        return parse_int(err, f, v, 1, 256, &a->parallel);
    else if (!strcmp(f, "--ctx"))
        return parse_int(err, f, v, 1, INT_MAX, &a->ctx);
    else if (!strcmp(f, "--threads"))
        return parse_int(err, f, v, 1, 1024, &a->threads);
    else if (!strcmp(f, "--queue"))
        return parse_int(err, f, v, 1, 65536, &a->queue);
    else if (!strcmp(f, "--max-body"))
        return parse_long(err, f, v, 1, 1L << 30, &a->max_body);
    else if (!strcmp(f, "--max-tokens"))
        return parse_long(err, f, v, 0, 1L << 30, &a->max_tokens);
    else if (!strcmp(f, "--kv-dtype"))
        return parse_kv(err, v, &a->kv);
    else {
        fprintf(err, "mhsa-server: unknown option '%s' (--help lists them)\n",
                f);
        return ARGS_BAD;
    }
    return ARGS_OK;
}

int srv_args_parse(int argc, char **argv, srv_args *a, FILE *out, FILE *err)
{
    memset(a, 0, sizeof *a);
    a->host = "127.0.0.1";
    a->port = 8080;
    a->parallel = 4;
    a->queue = 64;
    a->max_body = 1L << 20;
    a->max_tokens = 256;
    a->kv = MHSA_F32;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            fputs(usage, out);
            return ARGS_HELP;
        }
        if (i + 1 >= argc) {
            fprintf(err, "mhsa-server: %s needs a value\n", f);
            return ARGS_BAD;
        }
        int rc = parse_flag(a, f, argv[++i], err);
        if (rc != ARGS_OK)
            return rc;
    }
    if (!a->model) {
        fprintf(err, "mhsa-server: --model FILE is required (--help)\n");
        return ARGS_BAD;
    }
    return ARGS_OK;
}
