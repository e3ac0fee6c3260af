// generate.c — a language model from C through mhsa_model.h: load a GGUF
// file, tokenize a prompt, greedy-generate 16 tokens, print the text.
//   generate MODEL.gguf [PROMPT]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mhsa_model.h"

#define EXAMPLE_NAME "generate"
#include "example_util.h"   // CHECK: exits with mhsa_last_error()

int main(int argc, char **argv)
{
    const char *prompt = argc > 2 ? argv[2] : "Once upon a time";
    mhsa_model *m;
    mhsa_seq *seq;
    mhsa_sampler *greedy;
    mhsa_sampler_params sp = {0};   // temperature 0: greedy
    CHECK(mhsa_model_load(argc > 1 ? argv[1] : "", NULL, &m));
    size_t V = (size_t)mhsa_model_n_vocab(m), n;
    int32_t ids[512];
    float *logits = malloc(V * sizeof(float));
    CHECK(mhsa_tokenize(m, prompt, strlen(prompt), MHSA_TOKENIZE_ADD_SPECIAL,
                        ids, 512, &n));
    CHECK(mhsa_seq_create(m, MHSA_F32, &seq));
    CHECK(mhsa_sampler_create(&sp, (int)V, &greedy));
    CHECK(mhsa_seq_eval(seq, ids, n, MHSA_LOGITS_LAST, logits, V));
    printf("%s", prompt);
    for (int i = 0; i < 16 && mhsa_seq_len(seq) < mhsa_model_n_ctx(m); i++) {
        int32_t next;
        char piece[256];
        size_t len;
        CHECK(mhsa_sampler_sample(greedy, logits, V, NULL, 0, &next));
        if (mhsa_model_is_eog(m, next))
            break;
        CHECK(mhsa_detokenize(m, &next, 1, 0, piece, sizeof piece, &len));
        fwrite(piece, 1, len, stdout);
        CHECK(mhsa_seq_eval(seq, &next, 1, MHSA_LOGITS_LAST, logits, V));
    }
    printf("\n");
    mhsa_sampler_destroy(greedy);
    mhsa_seq_destroy(seq);
    mhsa_model_free(m);
    free(logits);
    return 0;
}
