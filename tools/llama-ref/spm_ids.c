// spm_ids.c — llama.cpp's ids on the test SPM vocabulary (tests/
// spm_vocab.c), the reference of tests/data/llama/spm_ids.txt. Built
// against a llama.cpp checkout outside this repository (see
// make_spm_ids.sh); not part of mhsa's build.
//
//   spm_ids PREFIX CASES.txt
//
// Writes the vocabulary (PREFIX: add_space_prefix 0, 1 or -1 for no key)
// to a temporary file, loads it with vocab_only, and for every "case: T"
// line of CASES.txt (T escaped as spm_vocab.h says) prints it again, then
//   ids: ...      llama_tokenize(add_special, parse_special), as
//                 llama-simple tokenizes a prompt
//   plain: ...    llama_tokenize with neither
//   decoded: D    llama_detokenize(plain ids, remove_special false,
//                 unparse_special false), escaped
//   special: D    llama_detokenize(ids, false, unparse_special true)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llama.h"
#include "spm_vocab.h"

static void print_ids(const char *label, const llama_token *t, int n)
{
    printf("%s", label);
    for (int i = 0; i < n; i++)
        printf(" %d", t[i]);
    printf("\n");
}

static void print_text(const char *label, const struct llama_vocab *v,
                       const llama_token *t, int n, int unparse)
{
    static char buf[8192], esc[4 * 8192 + 1];
    int len = llama_detokenize(v, t, n, buf, sizeof buf, 0, unparse);
    if (len < 0)
        exit(1);
    spm_escape(buf, (size_t)len, esc);
    printf("%s %s\n", label, esc);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: spm_ids PREFIX CASES.txt\n");
        return 2;
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/spm-vocab-%ld.gguf", (long)getpid());
    if (spm_vocab_save(path, atoi(argv[1])))
        return 1;
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = 1;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    unlink(path);
    if (!model)
        return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    FILE *f = fopen(argv[2], "r");
    if (!f)
        return 1;
    static char line[4096], text[4096];
    static llama_token ids[8192], plain[8192];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "case: ", 6) && strcmp(line, "case:"))
            continue;
        const char *t = line[5] ? line + 6 : "";
        size_t n = spm_unescape(t, text);
        int ni = llama_tokenize(vocab, text, (int)n, ids, 8192, 1, 1);
        int np = llama_tokenize(vocab, text, (int)n, plain, 8192, 0, 0);
        if (ni < 0 || np < 0)
            return 1;
        printf("case: %s\n", t);
        print_ids("ids:", ids, ni);
        print_ids("plain:", plain, np);
        print_text("decoded:", vocab, plain, np, 0);
        print_text("special:", vocab, ids, ni, 1);
    }
    fclose(f);
    llama_model_free(model);
    return 0;
}
