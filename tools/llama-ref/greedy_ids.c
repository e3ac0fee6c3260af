// greedy_ids.c — llama.cpp's greedy continuation of a prompt as token ids,
// the reference that tests/data/llama/smollm2_greedy.txt (and, with
// --gaps, smollm2_greedy_q4_1.txt) was made with.
// Built against a llama.cpp checkout outside this repository (see
// make_greedy_ids.sh); not part of mhsa's build.
//
//   greedy_ids [--gaps] [--kv-f32] MODEL.gguf N PROMPT
//
// Prints "prompt_ids: ..." (the prompt tokenized as llama-simple does, with
// add_special, so BOS only where the model asks for it, and parse_special,
// so "<|im_start|>" in the prompt is that token) and "new_ids: ..."
// (up to N tokens, each the argmax of the logits, stopping before an
// end-of-generation token), the lines mhsa-generate --ids prints.
// --gaps adds "top2_gaps: ...": for each step, the largest logit minus the
// second largest, one per new id and, when an end-of-generation token
// stopped it, one more for that step. A step whose gap is small is one
// where another engine's rounding may pick the other token.
// --kv-f32 keeps the KV cache in F32 (llama.cpp's default is F16, which
// also rounds the queries and the attention weights to F16), the cache
// mhsa-generate keeps by default: on a quantized model, whose int8
// activations turn a last-bit difference into a whole step, that F16
// rounding alone moves llama.cpp's own greedy ids where the top two
// logits are 0.3 apart.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

int main(int argc, char **argv)
{
    int gaps = 0, kv_f32 = 0;
    while (argc > 1 && argv[1][0] == '-' && argv[1][1] == '-') {
        if (!strcmp(argv[1], "--gaps"))
            gaps = 1;
        else if (!strcmp(argv[1], "--kv-f32"))
            kv_f32 = 1;
        else
            break;
        argv++;
        argc--;
    }
    if (argc != 4) {
        fprintf(stderr,
                "usage: greedy_ids [--gaps] [--kv-f32] MODEL.gguf N PROMPT\n");
        return 2;
    }
    int n = atoi(argv[2]);
    const char *prompt = argv[3];
    static float gap[4096];
    if (n < 0 || n > 4096)
        return 2;
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model)
        return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    static int32_t toks[4096];
    int np = llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), toks,
                            4096, 1, 1);
    if (np < 1)
        return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = 2048;
    if (kv_f32) {
        cp.type_k = GGML_TYPE_F32;
        cp.type_v = GGML_TYPE_F32;
    }
    struct llama_context *ctx = llama_init_from_model(model, cp);
    printf("prompt_ids:");
    for (int i = 0; i < np; i++)
        printf(" %d", toks[i]);
    printf("\nnew_ids:");
    struct llama_batch b = llama_batch_get_one(toks, np);
    int V = llama_vocab_n_tokens(vocab);
    int32_t t;
    int steps = 0;
    for (int s = 0; s < n; s++) {
        if (llama_decode(ctx, b))
            return 1;
        const float *lg = llama_get_logits_ith(ctx, -1);
        int best = 0, second = -1;
        for (int v = 1; v < V; v++) {
            if (lg[v] > lg[best]) {
                second = best;
                best = v;
            } else if (second < 0 || lg[v] > lg[second]) {
                second = v;
            }
        }
        gap[steps++] = lg[best] - lg[second];
        if (llama_vocab_is_eog(vocab, best))
            break;
        printf(" %d", best);
        t = best;
        b = llama_batch_get_one(&t, 1);
    }
    printf("\n");
    if (gaps) {
        printf("top2_gaps:");
        for (int s = 0; s < steps; s++)
            printf(" %.4f", gap[s]);
        printf("\n");
    }
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
