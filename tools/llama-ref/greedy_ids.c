// greedy_ids.c — llama.cpp's greedy continuation of a prompt as token ids,
// the reference that tests/data/llama/smollm2_greedy.txt was made with.
// Built against a llama.cpp checkout outside this repository (see
// make_greedy_ids.sh); not part of mhsa's build.
//
//   greedy_ids MODEL.gguf N PROMPT
//
// Prints "prompt_ids: ..." (the prompt tokenized as llama-simple does, with
// add_special, so BOS only where the model asks for it, and parse_special,
// so "<|im_start|>" in the prompt is that token) and "new_ids: ..."
// (up to N tokens, each the argmax of the logits, stopping before an
// end-of-generation token), the lines mhsa-generate --ids prints.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: greedy_ids MODEL.gguf N PROMPT\n");
        return 2;
    }
    int n = atoi(argv[2]);
    const char *prompt = argv[3];
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
    struct llama_context *ctx = llama_init_from_model(model, cp);
    printf("prompt_ids:");
    for (int i = 0; i < np; i++)
        printf(" %d", toks[i]);
    printf("\nnew_ids:");
    struct llama_batch b = llama_batch_get_one(toks, np);
    int V = llama_vocab_n_tokens(vocab);
    int32_t t;
    for (int s = 0; s < n; s++) {
        if (llama_decode(ctx, b))
            return 1;
        const float *lg = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[best])
                best = v;
        if (llama_vocab_is_eog(vocab, best))
            break;
        printf(" %d", best);
        t = best;
        b = llama_batch_get_one(&t, 1);
    }
    printf("\n");
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
