// model_logits.c — the C side of the Python package's model tests
// (python/tests/test_model.py): the logits of a fresh sequence of a GGUF
// model, through the public model API alone (mhsa_model.h), as an
// embedder would call it.
//
//   model_logits MODEL CONTEXT OUT ID...
//
// Loads MODEL (weights as stored, CONTEXT positions per sequence), creates
// an F32 sequence, evaluates the ids in one mhsa_seq_eval with
// MHSA_LOGITS_ALL and writes the (n, n_vocab) float32 logits to OUT, in
// the machine's byte order, nothing else. Exit 1 with the library's
// message on an error, 2 on bad usage.
#include <stdio.h>
#include <stdlib.h>

#include "mhsa_model.h"

static int fail(const char *what)
{
    fprintf(stderr, "model_logits: %s: %s\n", what, mhsa_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: model_logits MODEL CONTEXT OUT ID...\n");
        return 2;
    }
    size_t n = (size_t)argc - 4;
    int32_t *ids = malloc(n * sizeof *ids);
    if (!ids)
        return 1;
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)strtol(argv[4 + i], NULL, 10);
    mhsa_model_params p = {0};
    p.context = atoi(argv[2]);
    mhsa_model *m = NULL;
    mhsa_seq *s = NULL;
    if (mhsa_model_load(argv[1], &p, &m) != MHSA_OK)
        return fail("load");
    if (mhsa_seq_create(m, MHSA_F32, &s) != MHSA_OK)
        return fail("sequence");
    size_t V = (size_t)mhsa_model_n_vocab(m);
    float *logits = malloc(n * V * sizeof *logits);
    if (!logits)
        return 1;
    if (mhsa_seq_eval(s, ids, n, MHSA_LOGITS_ALL, logits, n * V) != MHSA_OK)
        return fail("eval");
    FILE *f = fopen(argv[3], "wb");
    if (!f || fwrite(logits, sizeof *logits, n * V, f) != n * V ||
        fclose(f) != 0) {
        fprintf(stderr, "model_logits: cannot write %s\n", argv[3]);
        return 1;
    }
    mhsa_seq_destroy(s);
    mhsa_model_free(m);
    free(logits);
    free(ids);
    return 0;
}
