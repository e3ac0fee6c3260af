// llama_logits.c — the C side of llama_ref.py (beside it): loads a Llama
// GGUF file with mhsa__llama_load, runs one token sequence through it twice and
// writes every position's logits, so the script can compare them with its
// own float64 PyTorch forward of the same file. Also encodes a text with
// the file's tokenizer, for the script's own BPE to check.
//
//   llama_logits [--isa NAME] [--text FILE] MODEL OUT PREFILL ID...
//
// Path 1 runs all the ids in one mhsa__llama_forward with all_logits; path
// 2 runs a fresh cache with the first PREFILL ids in one call (all_logits)
// and the rest one token at a time, which takes the decode kernels. OUT
// (little-endian, as the machine): int32 n, vocab, n_ids; float32 (n, V)
// of path 1, then of path 2; int32 ids[n_ids] of the text; int32 m and
// the m bytes decode(ids) gives. stdout: "isa NAME", the table in use.
// --isa an ISA this build or CPU lacks: exit 77, so that the script can
// tell "not here" from a failure.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gguf/gguf.h"
#include "models/llama/llama.h"
#include "models/tokenizer/tokenizer.h"

static int fail(const char *what, mhsa_status st)
{
    fprintf(stderr, "llama_logits: %s: %s (%s)\n", what,
            mhsa_status_str(st), mhsa_last_error());
    return 1;
}

static int put(FILE *f, const void *p, size_t size, size_t n)
{
    return fwrite(p, size, n, f) == n;
}

// The text of FILE's bytes and its tokenizer's ids and decoding of them.
static int encode_text(const char *model, const char *path, int32_t **ids,
                       size_t *n_ids, char **dec, size_t *n_dec)
{
    FILE *t = fopen(path, "rb");
    if (!t) {
        perror(path);
        return 1;
    }
    char text[4096];
    size_t len = fread(text, 1, sizeof text, t);
    fclose(t);
    mhsa_gguf_file *f = NULL;
    mhsa_tokenizer *tok = NULL;
    mhsa_status st = mhsa__gguf_open(model, &f);
    if (st == MHSA_OK)
        st = mhsa__tok_load(f, &tok);
    mhsa__gguf_close(f);
    if (st != MHSA_OK)
        return fail("tokenizer", st);
    *ids = malloc(mhsa__tok_max_ids(tok, len) * sizeof **ids);
    *dec = malloc(4 * len + 16);
    if (!*ids || !*dec)
        return fail("tokenizer", MHSA_ERR_NO_MEMORY);
    st = mhsa__tok_encode(tok, text, len, 0, *ids,
                          mhsa__tok_max_ids(tok, len), n_ids);
    if (st == MHSA_OK)
        st = mhsa__tok_decode(tok, *ids, *n_ids, 0, *dec, 4 * len + 16,
                              n_dec);
    mhsa__tok_free(tok);
    return st == MHSA_OK ? 0 : fail("encode/decode", st);
}

int main(int argc, char **argv)
{
    const char *isa = NULL, *text = NULL;
    int a = 1;
    for (; a + 1 < argc && argv[a][0] == '-'; a += 2) {
        if (!strcmp(argv[a], "--isa"))
            isa = argv[a + 1];
        else if (!strcmp(argv[a], "--text"))
            text = argv[a + 1];
        else
            break;
    }
    if (argc - a < 4) {
        fprintf(stderr, "usage: llama_logits [--isa NAME] [--text FILE] "
                "MODEL OUT PREFILL ID...\n");
        return 2;
    }
    const char *model = argv[a], *out = argv[a + 1];
    int prefill = atoi(argv[a + 2]);
    int n = argc - a - 3;
    if (prefill < 1 || prefill > n) {
        fprintf(stderr, "llama_logits: PREFILL must be in 1..%d\n", n);
        return 2;
    }
    if (isa) {
        static const mhsa_isa all[] = { MHSA_ISA_SCALAR, MHSA_ISA_AVX2,
                                        MHSA_ISA_NEON, MHSA_ISA_AVX512 };
        size_t i = 0;
        while (i < 4 && strcmp(mhsa_isa_name(all[i]), isa))
            i++;
        if (i == 4) {
            fprintf(stderr, "llama_logits: unknown ISA %s\n", isa);
            return 2;
        }
        if (mhsa_select_isa(all[i]) != MHSA_OK) {
            printf("isa %s unavailable\n", isa);
            return 77;
        }
    }
    printf("isa %s\n", mhsa_isa_name(mhsa_active_isa()));

    int32_t *tokens = malloc((size_t)n * sizeof *tokens);
    for (int i = 0; tokens && i < n; i++)
        tokens[i] = (int32_t)atoi(argv[a + 3 + i]);
    mhsa_llama *m = NULL;
    mhsa_status st = mhsa__llama_load(model, 0, &m);
    if (st != MHSA_OK)
        return fail(model, st);
    size_t V = (size_t)mhsa__llama_config(m)->vocab;
    float *one = malloc((size_t)n * V * sizeof *one);
    float *split = malloc((size_t)n * V * sizeof *split);
    if (!tokens || !one || !split)
        return fail("buffers", MHSA_ERR_NO_MEMORY);

    mhsa_llama_cache *c = NULL;
    if ((st = mhsa__llama_cache_create(m, MHSA_F32, &c)) ||
        (st = mhsa__llama_forward(m, c, tokens, n, 1, one)))
        return fail("one-call forward", st);
    mhsa__llama_cache_destroy(c);
    c = NULL;
    if ((st = mhsa__llama_cache_create(m, MHSA_F32, &c)) ||
        (st = mhsa__llama_forward(m, c, tokens, prefill, 1, split)))
        return fail("prefill", st);
    for (int i = prefill; i < n; i++)
        if ((st = mhsa__llama_forward(m, c, tokens + i, 1, 0,
                                      split + (size_t)i * V)))
            return fail("one-token forward", st);
    mhsa__llama_cache_destroy(c);
    mhsa__llama_destroy(m);

    int32_t *ids = NULL;
    char *dec = NULL;
    size_t n_ids = 0, n_dec = 0;
    if (text && encode_text(model, text, &ids, &n_ids, &dec, &n_dec))
        return 1;
    FILE *f = fopen(out, "wb");
    int32_t head[3] = { n, (int32_t)V, (int32_t)n_ids };
    int32_t m_dec = (int32_t)n_dec;
    if (!f || !put(f, head, sizeof *head, 3) ||
        !put(f, one, sizeof *one, (size_t)n * V) ||
        !put(f, split, sizeof *split, (size_t)n * V) ||
        !put(f, ids, sizeof *ids, n_ids) || !put(f, &m_dec, 4, 1) ||
        !put(f, dec, 1, n_dec) || fclose(f) != 0) {
        perror(out);
        return 1;
    }
    free(ids);
    free(dec);
    free(one);
    free(split);
    free(tokens);
    return 0;
}
