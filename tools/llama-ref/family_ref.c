// family_ref.c — llama.cpp's reference for tests/models/test_families.c:
// writes the small Qwen2 and Llama 3 files of tests/family_files.c (F32,
// and Q8_0) into a directory, and prints, for each, llama.cpp's logits of
// every position for family_ids (an F32 KV cache, one thread), and its
// token ids for every text of family_texts (add_special, parse_special).
// Built against a llama.cpp checkout outside this repository by
// make_family_refs.sh; not part of mhsa's build.
//
//   family_ref DIR > tests/data/llama/family_refs.txt
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_files.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user)
{
    (void)level;
    (void)text;
    (void)user;
}

// "logits NAME TYPE T V", then T lines of V logits.
static int print_logits(struct llama_model *model, const char *name,
                        const char *type)
{
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = FAM_CTX;
    cp.n_batch = FAM_CTX;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx)
        return 1;
    struct llama_batch b = llama_batch_init(FAMILY_N_IDS, 0, 1);
    for (int i = 0; i < FAMILY_N_IDS; i++) {
        b.token[i] = family_ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = FAMILY_N_IDS;
    if (llama_decode(ctx, b))
        return 1;
    int V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    printf("logits %s %s %d %d\n", name, type, FAMILY_N_IDS, V);
    for (int i = 0; i < FAMILY_N_IDS; i++) {
        const float *lg = llama_get_logits_ith(ctx, i);
        for (int v = 0; v < V; v++)
            printf("%.9g%c", lg[v], v + 1 < V ? ' ' : '\n');
    }
    llama_batch_free(b);
    llama_free(ctx);
    return 0;
}

// "tokens NAME I: ids" for every text.
static int print_tokens(struct llama_model *model, const char *name)
{
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    static int32_t ids[4096];
    for (size_t i = 0; i < family_n_texts; i++) {
        const char *s = family_texts[i];
        int n = llama_tokenize(vocab, s, (int32_t)strlen(s), ids, 4096, 1,
                               1);
        if (n < 0)
            return 1;
        printf("tokens %s %zu:", name, i);
        for (int k = 0; k < n; k++)
            printf(" %d", ids[k]);
        printf("\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: family_ref DIR\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    for (int f = 0; f < N_FAMILIES; f++)
        for (int q8 = 0; q8 < 2; q8++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s_%s.gguf", argv[1],
                     family_name((family)f), q8 ? "q8_0" : "f32");
            if (family_write((family)f, q8, path)) {
                fprintf(stderr, "cannot write %s\n", path);
                return 1;
            }
            struct llama_model_params mp = llama_model_default_params();
            struct llama_model *model = llama_model_load_from_file(path, mp);
            if (!model) {
                fprintf(stderr, "llama.cpp refused %s\n", path);
                return 1;
            }
            if (print_logits(model, family_name((family)f),
                             q8 ? "q8_0" : "f32") ||
                (!q8 && print_tokens(model, family_name((family)f)))) {
                fprintf(stderr, "llama.cpp failed on %s\n", path);
                return 1;
            }
            llama_model_free(model);
        }
    return 0;
}
