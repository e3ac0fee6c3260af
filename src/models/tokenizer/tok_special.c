// tok_special.c — cutting a text at the special tokens it spells, before
// either encoder sees it (as llama.cpp's tokenizer_st_partition does; see
// tok_internal.h): so that "<|im_start|>" in a prompt is that one token.
#include <string.h>

#include "tok_internal.h"

// The first occurrence of w[0..wn) in s[0..n), or n.
static size_t find(const unsigned char *s, size_t n, const char *w,
                   size_t wn)
{
    for (size_t i = 0; wn <= n && i <= n - wn; i++) {
        const unsigned char *c = memchr(s + i, (unsigned char)w[0],
                                        n - wn + 1 - i);
        if (!c)
            break;
        i = (size_t)(c - s);
        if (!memcmp(c, w, wn))
            return i;
    }
    return n;
}

size_t mhsa__tok_partition(const mhsa_tokenizer *t, const unsigned char *s,
                           size_t len, int parse_special, mhsa_tok_frag *fr,
                           mhsa_tok_frag *tmp)
{
    if (len == 0)
        return 0;
    size_t n = 1;
    fr[0] = (mhsa_tok_frag){0, len, -1};
    for (size_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        int type = t->type[id];
        if (!parse_special && (type == MHSA_TOKEN_CONTROL ||
                               type == MHSA_TOKEN_UNKNOWN))
            continue;
        const char *w = t->text[id];
        size_t wn = t->text_len[id];
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            mhsa_tok_frag f = fr[i];
            if (f.id >= 0 || f.len < wn) {
                tmp[m++] = f;
                continue;
            }
            for (;;) {
                size_t at = find(s + f.off, f.len, w, wn);
                if (at == f.len) {
                    if (f.len)
                        tmp[m++] = f;
                    break;
                }
                if (at)
                    tmp[m++] = (mhsa_tok_frag){f.off, at, -1};
                tmp[m++] = (mhsa_tok_frag){0, 0, id};
                f.off += at + wn;
                f.len -= at + wn;
            }
        }
        memcpy(fr, tmp, m * sizeof *fr);
        n = m;
    }
    return n;
}
