// make_gpt_seeds.c — writes fuzz_gpt's checkpoint seeds: real checkpoints
// of tiny GPTs written by mhsa_gpt_save (learned positions, RoPE, tied
// embeddings, no attention projection; with and without the optimiser
// state after one AdamW step; with and without the caller's metadata),
// each prefixed by fuzz_gpt's odd mode byte. Deterministic (init_random
// and the step are the same bits everywhere). Built with -Dfuzz=true:
//   build-fuzz/fuzz/make_gpt_seeds fuzz/corpus/fuzz_gpt
// The seeds are committed; this program documents how they were made.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mhsa_train.h"

// fuzz.sh's -max_len: a longer seed would be cut short.
enum { MAX_SEED = 4096 };

typedef struct seed {
    const char *name;
    mhsa_gpt_config cfg;
    int optim;                 // save the AdamW state after one step
    int n_meta;                // how many of the caller's entries to add
    unsigned char mode;        // fuzz_gpt's first byte (odd)
} seed;

static const mhsa_meta meta[2] = {
    { "data", "fortunes" }, { "note", "seed \"one\"\n" },
};

static int fail(const char *what)
{
    fprintf(stderr, "make_gpt_seeds: %s: %s\n", what, mhsa_last_error());
    return 1;
}

// One training step on a fixed batch, so the moments and step are real.
static int one_step(mhsa_gpt *g, const mhsa_gpt_config *c)
{
    int T = c->block_size;
    int32_t tok[16], tgt[16];
    for (int t = 0; t < T; t++) {
        tok[t] = (int32_t)((3 * t + 1) % c->vocab);
        tgt[t] = (int32_t)((3 * t + 4) % c->vocab);
    }
    float loss;
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    oc.lr = 0.01f;
    return mhsa_gpt_forward(g, tok, tgt, 1, T, 0.0, &loss) == MHSA_OK &&
           mhsa_gpt_backward(g) == MHSA_OK &&
           mhsa_gpt_step(g, &oc, NULL) == MHSA_OK;
}

static int write_seed(const char *dir, const seed *s, const char *tmp)
{
    mhsa_gpt *g = NULL;
    if (mhsa_gpt_create(&s->cfg, &g) != MHSA_OK ||
        mhsa_gpt_init_random(g, 5) != MHSA_OK)
        return fail(s->name);
    if (s->optim && !one_step(g, &s->cfg)) {
        mhsa_gpt_destroy(g);
        return fail(s->name);
    }
    mhsa_status st = mhsa_gpt_save(g, tmp, s->optim, meta,
                                   (size_t)s->n_meta);
    mhsa_gpt_destroy(g);
    if (st != MHSA_OK)
        return fail(s->name);
    static unsigned char buf[MAX_SEED];
    buf[0] = s->mode;
    FILE *f = fopen(tmp, "rb");
    size_t n = f ? fread(buf + 1, 1, sizeof buf - 1, f) : 0;
    int too_long = f && fgetc(f) != EOF;
    if (f)
        fclose(f);
    unlink(tmp);
    if (!n || too_long) {
        fprintf(stderr, "make_gpt_seeds: %s: %s\n", s->name,
                n ? "longer than the fuzzer's 4096 bytes" : "unreadable");
        return 1;
    }
    char out[4096];
    snprintf(out, sizeof out, "%s/%s", dir, s->name);
    f = fopen(out, "wb");
    if (!f || fwrite(buf, 1, n + 1, f) != n + 1 || fclose(f) != 0) {
        fprintf(stderr, "make_gpt_seeds: cannot write %s\n", out);
        return 1;
    }
    printf("%s: %zu bytes\n", out, n + 1);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_gpt_seeds DIR\n");
        return 2;
    }
    // vocab, n_layer, n_embd, n_head, block_size, max_batch, rope_dim,
    // tie_embeddings, no_proj
    static const seed seeds[] = {
        { "ckpt_plain_optim_meta", { 4, 1, 2, 2, 2, 1, 0, 0, 0 }, 1, 2, 1 },
        { "ckpt_plain", { 5, 1, 2, 1, 3, 1, 0, 0, 0 }, 0, 0, 3 },
        { "ckpt_rope_tied_meta", { 6, 1, 4, 1, 4, 1, 4, 1, 0 }, 0, 1, 5 },
        { "ckpt_rope_half", { 4, 1, 4, 1, 3, 1, 2, 0, 0 }, 0, 0, 0x27 },
        { "ckpt_rope_optim", { 3, 1, 2, 1, 2, 1, 2, 0, 0 }, 1, 0, 7 },
        { "ckpt_tied_noproj_optim", { 5, 1, 2, 2, 2, 1, 0, 1, 1 }, 1, 1, 9 },
        { "ckpt_two_layers_rope_noproj", { 3, 2, 2, 1, 2, 1, 2, 1, 1 },
          0, 0, 0x23 },
    };
    char tmp[512];
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/make_gpt_seeds_%ld.safetensors",
             t && *t && strlen(t) < 256 ? t : "/tmp", (long)getpid());
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        if (write_seed(argv[1], &seeds[i], tmp))
            return 1;
    return 0;
}
