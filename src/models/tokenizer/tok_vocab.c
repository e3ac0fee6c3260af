// tok_vocab.c — a token's id from its text: the lookup every encoder
// (tok_bpe.c, tok_spm.c) and the loader (tokenizer.c) use, over the hash
// table the loader builds.
#include <string.h>

#include "tok_internal.h"

int32_t mhsa__tok_find(const mhsa_tokenizer *t, const char *s, size_t n)
{
    for (size_t i = mhsa__fnv(MHSA_FNV_BASIS, s, n) & t->tok_mask;;
         i = (i + 1) & t->tok_mask) {
        int32_t id = t->tok_slot[i];
        if (id < 0)
            return -1;
        if (t->text_len[id] == n && !memcmp(t->text[id], s, n))
            return id;
    }
}
