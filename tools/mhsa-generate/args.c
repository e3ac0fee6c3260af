// args.c — mhsa-generate's options (args.h): the flags, their values
// checked strictly, --help, and the prompt read from --file or stdin.
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_util.h"

void print_gen_help(FILE *f)
{
    fprintf(f,
"usage: mhsa-generate --model FILE [options]\n"
"Samples text from a GPT checkpoint (mhsa-train --task text --save) or a\n"
"GGUF model (llama.cpp's format) of general.architecture llama (Llama 2\n"
"and 3, SmolLM, Mistral-style files), qwen2 (Qwen2, Qwen2.5) or gemma3\n"
"(Gemma 3 text models but 27B: sliding-window layers, Q/K norms, GeGLU):\n"
"prefills the prompt, then decodes token by token through the KV cache.\n"
"Tokenizers: SentencePiece, and byte-level BPE with the pre-tokenizers\n"
"gpt-2, smollm, llama-bpe and qwen2.\n"
"\n"
"  --model FILE        a checkpoint (.safetensors) or a GGUF model (a\n"
"                      regular file)\n"
"  --prompt TEXT       text to continue (default: a newline); GGUF models\n"
"                      take valid UTF-8 only. --prompt - reads it from\n"
"                      stdin\n"
"  --file PATH         read the prompt from a file (as llama-cli -f); a\n"
"                      prompt from a file or stdin is at most 64 MiB\n"
"  -n N                tokens (bytes for a GPT checkpoint) to generate\n"
"                      (200); 0: only the prompt is processed\n"
"  --temperature T     0: always the likeliest token; higher: more varied\n"
"                      (0.8); any finite T >= 0 a float can hold\n"
"  --top-k K           sample among the K likeliest tokens; 0: all (40)\n"
"  --seed S            seed of the sampling, in [0, 2^64-1]; same seed,\n"
"                      same text (1)\n"
"  --threads N         OpenMP threads, 1 to 1024 (default: OMP_NUM_THREADS\n"
"                      or all, at most 1024)\n"
"  --isa auto|scalar|avx2|avx512|neon  kernels to use (auto)\n"
"  --weight-dtype file|f32|f16|bf16  storage of the weight matrices: file\n"
"                      (the default for a GGUF model; a GPT checkpoint's is\n"
"                      f32): as the GGUF file stores them, computed on its\n"
"                      quantized blocks (q4_0 ... q6_K, q8_0; q2_K, q3_K,\n"
"                      iq4_nl and iq4_xs converted to q8_0), mapped from\n"
"                      the file; f32: dequantized to fp32; f16, bf16: that\n"
"                      rounded to 16 bits, half the bytes of f32 read per\n"
"                      token; the norms and biases stay f32\n"
"GGUF models only:\n"
"  --kv-dtype f32|f16|bf16  storage of the KV cache (f32)\n"
"  --ctx N             cache positions (default: prompt + -n tokens)\n"
"  --ids               print the prompt's and the new token ids\n"
"                      (prompt_ids: ... / new_ids: ...) instead of text\n"
"  --bench             time a 512-token prefill and 64 decoded tokens\n"
"                      (as llama-bench's pp512 and tg64) and the time to\n"
"                      first token of a 16-token prompt\n"
"  --no-parse-special  special tokens' text in the prompt (such as\n"
"                      <|im_start|>) is plain text, not the token\n"
"  --special           print control tokens' text (as llama-cli --special)\n"
"  --perplexity FILE   score FILE's text instead of generating, as\n"
"                      llama-perplexity -f FILE -c N: the text (less one\n"
"                      final newline, special tokens' text as plain text)\n"
"                      tokenized once, cut into chunks of N = --ctx tokens\n"
"                      (default 512, or the model's context when less; at\n"
"                      least 3), each run from an empty cache with BOS first\n"
"                      where the model adds one, scored on its second half;\n"
"                      needs at least 2N tokens. Prints 'perplexity: X' as\n"
"                      the last line of stdout, the running estimate of\n"
"                      each chunk and its +/- to stderr\n"
"  --help              this text\n"
"\n"
"The prompt and the text go to stdout; prefill and decode tokens/s (each\n"
"decoded token's model time and sampling) to stderr. Exit status: 0 done,\n"
"1 runtime failure, 2 bad option or model.\n");
}

// ---- values -------------------------------------------------------------------

static int parse_int(FILE *err, const char *flag, const char *s, long lo,
                     long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || isspace((unsigned char)*s) || *end != '\0')
        return gen_usage(err, "%s: '%s' is not an integer", flag,
                         gen_quote(s));
    if (errno == ERANGE || v < lo || v > hi)
        return gen_usage(err, "%s %s is out of range (%ld..%ld)", flag,
                         gen_quote(s), lo, hi);
    *out = (int)v;
    return CLI_OK;
}

// Any finite value >= 0 that a float holds: subnormals too (they sample
// as greedily as 0 would, but for ties); a positive value that rounds to
// float 0 or past FLT_MAX is refused rather than changed.
static int parse_temperature(FILE *err, const char *flag, const char *s,
                             float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || isspace((unsigned char)*s) || *end != '\0' ||
        isnan(v) || (isinf(v) && errno != ERANGE))
        return gen_usage(err, "%s: '%s' is not a finite number", flag,
                         gen_quote(s));
    if (v < 0.0)
        return gen_usage(err, "%s %s must be >= 0", flag, gen_quote(s));
    if (v > FLT_MAX)
        return gen_usage(err, "%s %s is larger than a float holds (%g)",
                         flag, gen_quote(s), (double)FLT_MAX);
    if (v > 0.0 && (float)v == 0.0f)
        return gen_usage(err, "%s %s rounds to 0 as a float (the least "
                         "above 0 is %g); give 0 for greedy sampling", flag,
                         gen_quote(s), (double)FLT_TRUE_MIN);
    *out = (float)v;
    return CLI_OK;
}

// Decimal, or 0x hexadecimal, as strtoull's base 0 reads it.
static int parse_seed(FILE *err, const char *flag, const char *s,
                      uint64_t *out)
{
    int neg = s[0] == '-' && isdigit((unsigned char)s[1]);
    char *end;
    errno = 0;
    unsigned long long v = neg ? 0 : strtoull(s, &end, 0);
    if (!neg && (!isdigit((unsigned char)*s) || *end != '\0'))
        return gen_usage(err, "%s: '%s' is not an integer", flag,
                         gen_quote(s));
    if (neg || errno == ERANGE)
        return gen_usage(err, "%s %s is out of range [0, 2^64-1]", flag,
                         gen_quote(s));
    *out = (uint64_t)v;
    return CLI_OK;
}

static int parse_isa(FILE *err, const char *flag, const char *s,
                     mhsa_isa *out)
{
    static const mhsa_isa isas[] = { MHSA_ISA_AUTO, MHSA_ISA_SCALAR,
                                     MHSA_ISA_AVX2, MHSA_ISA_AVX512,
                                     MHSA_ISA_NEON };
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++)
        if (strcmp(s, mhsa_isa_name(isas[k])) == 0) {
            *out = isas[k];
            return CLI_OK;
        }
    return gen_usage(err, "%s: unknown ISA '%s' (auto, scalar, avx2, avx512 "
                     "or neon)", flag, gen_quote(s));
}

static int parse_dtype(FILE *err, const char *flag, const char *s,
                       mhsa_dtype *out)
{
    if (!strcmp(s, "f32"))
        *out = MHSA_F32;
    else if (!strcmp(s, "f16"))
        *out = MHSA_F16;
    else if (!strcmp(s, "bf16"))
        *out = MHSA_BF16;
    else
        return gen_usage(err, "%s must be f32, f16 or bf16, not %s", flag,
                         gen_quote(s));
    return CLI_OK;
}

// ---- the flags ------------------------------------------------------------------

int parse_gen_args(int argc, char **argv, gen_args *a, FILE *err)
{
    memset(a, 0, sizeof *a);
    a->prompt = "\n";
    a->prompt_len = 1;
    a->n = 200;
    a->top_k = 40;
    a->temperature = 0.8f;
    a->seed = 1;
    a->isa = MHSA_ISA_AUTO;
    a->kv_dtype = MHSA_F32;
    a->weight_dtype = GEN_WEIGHTS_FILE;
    int has_prompt = 0, has_file = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            a->help = 1;
            return CLI_OK;
        }
        static const char *const flags[] = {
            "--ids", "--bench", "--no-parse-special", "--special",
        };
        int *const flag_of[] = {
            &a->ids, &a->bench, &a->no_parse_special, &a->special,
        };
        int is_flag = 0;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            if (!strcmp(arg, flags[k])) {
                *flag_of[k] = is_flag = 1;
                // All but --no-parse-special are for generating only.
                if (flag_of[k] != &a->no_parse_special && !a->gen_flag)
                    a->gen_flag = flags[k];
            }
        if (is_flag) {
            a->gguf_only = 1;
            continue;
        }
        char flag[32];
        const char *eq = strncmp(arg, "--", 2) ? NULL : strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof flag || arg[0] != '-')
            return gen_usage(err, "%s: unexpected argument (see --help)",
                             gen_quote(arg));
        memcpy(flag, arg, len);
        flag[len] = '\0';
        static const char *const known[] = {
            "--model", "--prompt", "--file", "-n", "--temperature",
            "--top-k", "--seed", "--threads", "--isa", "--kv-dtype",
            "--weight-dtype", "--ctx", "--perplexity",
        };
        int found = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            found |= !strcmp(flag, known[k]);
        if (!found)
            return gen_usage(err, "%s: unknown option (see --help)",
                             gen_quote(flag));
        const char *val;
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return gen_usage(err, "%s needs a value", flag);
        int rc = CLI_OK;
        static const char *const gen_flags[] = {
            "--prompt", "--file", "-n", "--temperature", "--top-k", "--seed",
        };
        for (size_t k = 0; k < sizeof gen_flags / sizeof gen_flags[0]; k++)
            if (!strcmp(flag, gen_flags[k]) && !a->gen_flag)
                a->gen_flag = gen_flags[k];
        if (!strcmp(flag, "--perplexity")) {
            if (!*val)
                return gen_usage(err, "%s needs a file name", flag);
            a->perplexity = val;
            a->gguf_only = 1;
        } else if (!strcmp(flag, "--model") || !strcmp(flag, "--file")) {
            if (!*val)
                return gen_usage(err, "%s needs a file name", flag);
            if (flag[2] == 'm')
                a->model = val;
            else
                a->prompt_file = val;
            has_file |= flag[2] == 'f';
        } else if (!strcmp(flag, "--prompt")) {
            a->prompt = val;
            a->prompt_len = strlen(val);
            a->prompt_stdin = !strcmp(val, "-");
            has_prompt = 1;
        } else if (!strcmp(flag, "-n")) {
            rc = parse_int(err, flag, val, 0, 1 << 30, &a->n);
        } else if (!strcmp(flag, "--temperature")) {
            rc = parse_temperature(err, flag, val, &a->temperature);
        } else if (!strcmp(flag, "--top-k")) {
            rc = parse_int(err, flag, val, 0, 1 << 24, &a->top_k);
        } else if (!strcmp(flag, "--seed")) {
            rc = parse_seed(err, flag, val, &a->seed);
        } else if (!strcmp(flag, "--threads")) {
            rc = parse_int(err, flag, val, 1, GEN_MAX_THREADS, &a->threads);
        } else if (!strcmp(flag, "--ctx")) {
            rc = parse_int(err, flag, val, 1, 1 << 24, &a->ctx);
            a->gguf_only = 1;
        } else if (!strcmp(flag, "--kv-dtype")) {
            rc = parse_dtype(err, flag, val, &a->kv_dtype);
            a->gguf_only = 1;
        } else if (!strcmp(flag, "--weight-dtype")) {
            mhsa_dtype dt = MHSA_F32;
            if (!strcmp(val, "file")) {
                a->weight_dtype = GEN_WEIGHTS_FILE;
                a->gguf_only = 1;
            } else if (strcmp(val, "f32") && strcmp(val, "f16") &&
                       strcmp(val, "bf16")) {
                return gen_usage(err, "%s must be file, f32, f16 or bf16, "
                                 "not %s", flag, gen_quote(val));
            } else {
                rc = parse_dtype(err, flag, val, &dt);
                a->weight_dtype = (int)dt;
            }
        } else {
            rc = parse_isa(err, flag, val, &a->isa);
        }
        if (rc != CLI_OK)
            return rc;
        if (has_prompt && has_file)
            return gen_usage(err, "--prompt and --file: give one of them");
    }
    if (!a->model)
        return gen_usage(err, "--model FILE is required");
    if (a->perplexity && a->gen_flag)
        return gen_usage(err, "--perplexity scores a text and generates "
                         "nothing: %s does not apply", a->gen_flag);
    return CLI_OK;
}

// ---- the prompt from a file or stdin ----------------------------------------------

// Appends what fd holds (to its end) to a->prompt_buf, at most
// GEN_MAX_PROMPT_BYTES; waits when fd would block (stdin may be a pipe
// its writer has not filled yet).
static int read_all(FILE *err, int fd, const char *what, size_t hint,
                    gen_args *a)
{
    size_t cap = hint + 1 < 4096 ? 4096 : hint + 1, len = 0;
    if (cap > GEN_MAX_PROMPT_BYTES + 1)
        cap = GEN_MAX_PROMPT_BYTES + 1;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(err, "mhsa-generate: %s: out of memory\n", what);
            return CLI_FAIL;
        }
        if (len == cap) {
            size_t more = cap * 2 > GEN_MAX_PROMPT_BYTES + 1
                          ? GEN_MAX_PROMPT_BYTES + 1 : cap * 2;
            if (more == cap) {
                free(buf);
                return gen_usage(err, "%s: the %s is more than %zu "
                                 "bytes (64 MiB)", what,
                                 a->perplexity ? "text" : "prompt",
                                 GEN_MAX_PROMPT_BYTES);
            }
            char *b = realloc(buf, more);
            if (!b)
                free(buf);
            buf = b;
            cap = more;
            continue;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r > 0) {
            len += (size_t)r;
            continue;
        }
        if (r == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            struct pollfd p = { fd, POLLIN, 0 };
            poll(&p, 1, -1);
            continue;
        }
        int e = errno;
        free(buf);
        return gen_usage(err, "%s: cannot read: %s", what, strerror(e));
    }
    a->prompt_buf = buf;
    a->prompt = buf;
    a->prompt_len = len;
    return CLI_OK;
}

int gen_read_prompt(gen_args *a, FILE *err)
{
    if (a->prompt_stdin)
        return read_all(err, STDIN_FILENO, "--prompt - (stdin)", 0, a);
    const char *path = a->perplexity ? a->perplexity : a->prompt_file;
    const char *flag = a->perplexity ? "--perplexity" : "--file";
    if (!path)
        return CLI_OK;
    int fd;
    long long size;
    int rc = gen_open_regular(err, flag, path, &fd, &size);
    if (rc != CLI_OK)
        return rc;
    if (size > (long long)GEN_MAX_PROMPT_BYTES) {
        close(fd);
        return gen_usage(err, "%s %s: %lld bytes is more than the %zu "
                         "(64 MiB) a %s may have", flag, gen_quote(path),
                         size, GEN_MAX_PROMPT_BYTES,
                         a->perplexity ? "text" : "prompt");
    }
    rc = read_all(err, fd, gen_prompt_flag(a), (size_t)size, a);
    close(fd);
    // llama-perplexity -f drops the file's last newline (common/arg.cpp).
    if (rc == CLI_OK && a->perplexity && a->prompt_len > 0 &&
        a->prompt[a->prompt_len - 1] == '\n')
        a->prompt_len--;
    return rc;
}

const char *gen_prompt_flag(const gen_args *a)
{
    static char buf[1024];
    if (a->perplexity) {
        snprintf(buf, sizeof buf, "--perplexity %s",
                 gen_quote(a->perplexity));
        return buf;
    }
    if (a->prompt_file) {
        snprintf(buf, sizeof buf, "--file %s", gen_quote(a->prompt_file));
        return buf;
    }
    return a->prompt_stdin ? "--prompt -" : "--prompt";
}

void gen_args_free(gen_args *a)
{
    free(a->prompt_buf);
    a->prompt_buf = NULL;
}
