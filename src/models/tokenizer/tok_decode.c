// tok_decode.c — token ids back to bytes, each as llama.cpp's
// token_to_piece writes it (see tokenizer.h), with llama_detokenize's
// leading-space rule on request.
#include <string.h>

#include "core/status.h"
#include "tok_internal.h"
#include "tokenizer.h"
#include "unicode.h"

// ---- decoding ---------------------------------------------------------------

// Token id's bytes as llama.cpp's token_to_piece gives them, written at
// buf + *w (as far as cap allows; *w counts them all).
static void piece(const mhsa_tokenizer *t, int32_t id, unsigned flags,
                  int strip, char *buf, size_t cap, size_t *w)
{
    const unsigned char *s = (const unsigned char *)t->text[id];
    size_t sn = t->text_len[id];
    int type = t->type[id];
    int spm = t->kind == MHSA_TOK_SPM;
    if ((type == MHSA_TOKEN_CONTROL || type == MHSA_TOKEN_UNKNOWN) &&
        !(flags & MHSA_TOK_DECODE_SPECIAL))
        return;
    if (type == MHSA_TOKEN_UNUSED || (type == MHSA_TOKEN_BYTE && !spm))
        return;   // llama.cpp writes nothing for these
    int raw = type == MHSA_TOKEN_CONTROL || type == MHSA_TOKEN_USER_DEFINED ||
              type == MHSA_TOKEN_UNKNOWN;
    if (type == MHSA_TOKEN_BYTE) {
        if (*w < cap)
            buf[*w] = (char)mhsa__tok_byte_of((const char *)s, sn);
        ++*w;
        return;
    }
    for (size_t j = 0; j < sn;) {
        size_t l = 1, out = 1;
        int byte;
        if (raw) {
            byte = s[j];
        } else if (spm) {   // "▁" is a space
            if (sn - j >= 3 && !memcmp(s + j, "\xe2\x96\x81", 3))
                l = 3, byte = ' ';
            else
                byte = s[j];
        } else {
            uint32_t cp;
            l = mhsa__utf8_next(s + j, sn - j, &cp);
            byte = cp == MHSA_CP_INVALID ? -1 : mhsa__cp_to_byte(cp);
            // A code point outside the byte alphabet (only in a malformed
            // vocabulary) is written as it is.
            if (byte < 0)
                out = l;
        }
        if (strip && j == 0 && byte == ' ') {   // the first leading space
            j += l;
            continue;
        }
        for (size_t q = 0; q < out; q++, ++*w)
            if (*w < cap)
                buf[*w] = byte >= 0 ? (char)byte : (char)s[j + q];
        j += l;
    }
}

mhsa_status mhsa__tok_decode(const mhsa_tokenizer *t, const int32_t *ids,
                             size_t n, unsigned flags, char *buf, size_t cap,
                             size_t *len)
{
    if (!t || (!ids && n) || (!buf && cap) || !len)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__tok_decode: NULL "
                          "argument");
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= t->n_vocab)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__tok_decode: id "
                              "%d at %zu is not in the vocabulary (%zu "
                              "tokens)", ids[i], i, t->n_vocab);
        // llama_detokenize drops one leading space of the first token
        // when the vocabulary adds a space prefix.
        int strip = i == 0 && (flags & MHSA_TOK_STRIP_SPACE) &&
                    t->add_space_prefix;
        piece(t, ids[i], flags, strip, buf, cap, &w);
    }
    *len = w;
    if (w > cap)
        return mhsa__fail(MHSA_ERR_SHAPE, "mhsa__tok_decode: %zu bytes do "
                          "not fit in %zu", w, cap);
    return MHSA_OK;
}
