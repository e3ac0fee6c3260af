// model.c — the public model API (include/mhsa_model.h) over the Llama
// runner (llama/llama.h) and the tokenizer (tokenizer/tokenizer.h): the
// model, its metadata, tokenize and detokenize, and sequences (one runner
// cache each). The checks a caller can get wrong are made here, so that
// messages name the public function and its argument; the runner's own
// checks stay as a second line.
//
// The runner holds one set of activation buffers per model, so the
// evaluations of one model are ordered by a mutex in it: a model can be
// shared by threads that each drive their own sequences. Tokenizing and
// the queries only read what the load built.
#include "mhsa_model.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "io/file_read.h"
#include "models/gguf/gguf.h"
#include "models/llama/llama.h"
#include "models/tokenizer/tokenizer.h"

struct mhsa_model {
    mhsa_llama *llama;          // NULL with vocab_only
    mhsa_tokenizer *tok;
    mhsa_llama_config cfg;
    int n_ctx;                  // a sequence's positions
    char *chat_template;        // NUL-terminated, or NULL
    pthread_mutex_t lock;       // orders the evaluations
    // mhsa_batch_eval's parts (under lock), grown to the largest batch
    // so far and kept, so that a server's steps do not allocate.
    mhsa_llama_part *parts;
    size_t parts_cap;
};

struct mhsa_seq {
    mhsa_model *m;
    mhsa_llama_cache *c;
};

static const int weight_dtypes[] = {
    [MHSA_WEIGHTS_AS_STORED] = MHSA__WEIGHTS_FILE,
    [MHSA_WEIGHTS_F32] = MHSA_F32,
    [MHSA_WEIGHTS_F16] = MHSA_F16,
    [MHSA_WEIGHTS_BF16] = MHSA_BF16,
};

// The tokenizer and the chat template, from the file's metadata.
static mhsa_status read_vocab(const char *path, mhsa_model *m)
{
    mhsa_gguf_file *f = NULL;
    mhsa_status st = mhsa__gguf_open(path, &f);
    if (st == MHSA_OK)
        st = mhsa__tok_load(f, &m->tok);
    const mhsa_gguf_val *v = st == MHSA_OK
        ? mhsa__gguf_find(f, "tokenizer.chat_template") : NULL;
    if (v) {
        const char *s;
        size_t len;
        st = mhsa__gguf_val_str(v, &s, &len);
        if (st != MHSA_OK)
            st = mhsa__fail(MHSA_ERR_FORMAT, "mhsa_model_load: %s: "
                            "tokenizer.chat_template is a %s, not a string",
                            path, mhsa__gguf_type_name(
                                mhsa__gguf_val_type(v)));
        else if (memchr(s, '\0', len))
            st = mhsa__fail(MHSA_ERR_FORMAT, "mhsa_model_load: %s: "
                            "tokenizer.chat_template holds a NUL byte",
                            path);
        else if (!(m->chat_template = malloc(len + 1)))
            st = mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_model_load: the "
                            "chat template (%zu bytes)", len);
        else {
            memcpy(m->chat_template, s, len);
            m->chat_template[len] = '\0';
        }
    }
    mhsa__gguf_close(f);
    return st;
}

void mhsa_model_free(mhsa_model *m)
{
    if (!m)
        return;
    mhsa__llama_destroy(m->llama);
    mhsa__tok_free(m->tok);
    pthread_mutex_destroy(&m->lock);
    MHSA_FREE_ALL(m->chat_template, m->parts, m);
}

mhsa_status mhsa_model_load(const char *path, const mhsa_model_params *params,
                            mhsa_model **out)
{
    static const char fn[] = "mhsa_model_load";
    if (!path || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !path ? "path" : "out");
    mhsa_model_params p = {0};
    if (params)
        p = *params;
    if (p.weights < MHSA_WEIGHTS_AS_STORED || p.weights > MHSA_WEIGHTS_BF16)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: params.weights = %d "
                          "is not an mhsa_model_weights", fn, p.weights);
    if (p.context < 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: params.context = %d "
                          "(need 0 for the default, or >= 1)", fn,
                          p.context);
    if (p.vocab_only != 0 && p.vocab_only != 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: params.vocab_only = "
                          "%d (need 0 or 1)", fn, p.vocab_only);
    mhsa_model *m = calloc(1, sizeof *m);
    if (!m)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: the model", fn);
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: the model's lock", fn);
    }
    mhsa_status st = read_vocab(path, m);
    if (st == MHSA_OK)
        st = mhsa__llama_read_config(path, &m->cfg);
    if (st == MHSA_OK && p.context > m->cfg.context) {
        char q[256];
        st = mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: params.context = %d is "
                        "more than the context length of %s (%d)", fn,
                        p.context, mhsa__esc(q, sizeof q, path,
                                             strlen(path)),
                        m->cfg.context);
    }
    if (st == MHSA_OK && !p.vocab_only) {
        st = mhsa__llama_load_ex(path, p.context, weight_dtypes[p.weights],
                                 &m->llama);
        if (st == MHSA_OK)
            m->n_ctx = mhsa__llama_capacity(m->llama);
    } else if (st == MHSA_OK) {
        m->n_ctx = m->cfg.context;
    }
    if (st != MHSA_OK) {
        mhsa_model_free(m);
        return st;
    }
    *out = m;
    return MHSA_OK;
}

// ---- queries ---------------------------------------------------------------

const char *mhsa_model_arch(const mhsa_model *m)
{
    return m ? (m->cfg.arch ? m->cfg.arch : "llama") : NULL;
}

int mhsa_model_n_vocab(const mhsa_model *m) { return m ? m->cfg.vocab : 0; }
int mhsa_model_n_ctx(const mhsa_model *m) { return m ? m->n_ctx : 0; }
int mhsa_model_n_ctx_train(const mhsa_model *m)
{
    return m ? m->cfg.context : 0;
}
int32_t mhsa_model_bos(const mhsa_model *m)
{
    return m ? mhsa__tok_bos(m->tok) : -1;
}
int32_t mhsa_model_eos(const mhsa_model *m)
{
    return m ? mhsa__tok_eos(m->tok) : -1;
}
int mhsa_model_adds_bos(const mhsa_model *m)
{
    return m ? mhsa__tok_adds_bos(m->tok) : 0;
}
int mhsa_model_adds_eos(const mhsa_model *m)
{
    return m ? mhsa__tok_adds_eos(m->tok) : 0;
}
int mhsa_model_is_eog(const mhsa_model *m, int32_t token)
{
    return m && token >= 0 && (size_t)token < mhsa__tok_vocab_size(m->tok) &&
           mhsa__tok_is_eog(m->tok, token);
}
const char *mhsa_model_chat_template(const mhsa_model *m)
{
    return m ? m->chat_template : NULL;
}
size_t mhsa_model_weight_bytes(const mhsa_model *m)
{
    return m && m->llama ? mhsa__llama_weight_bytes(m->llama) : 0;
}
const char *mhsa_model_weight_types(const mhsa_model *m)
{
    return !m ? NULL : m->llama ? mhsa__llama_weight_types(m->llama) : "";
}

// ---- text ------------------------------------------------------------------

// Flags with bits other than the call's own (named by `known`).
static mhsa_status bad_flags(const char *fn, unsigned flags,
                             const char *known)
{
    return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: flags = %#x has bits "
                      "other than %s", fn, flags, known);
}

mhsa_status mhsa_tokenize(const mhsa_model *m, const char *text, size_t len,
                          unsigned flags, int32_t *ids, size_t cap,
                          size_t *n)
{
    static const char fn[] = "mhsa_tokenize";
    if (!m || !text || !n || (!ids && cap))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL%s", fn,
                          !m ? "m" : !text ? "text" : !n ? "n" : "ids",
                          m && text && n ? " with cap > 0" : "");
    if (flags & ~(unsigned)(MHSA_TOKENIZE_ADD_SPECIAL |
                            MHSA_TOKENIZE_PARSE_SPECIAL))
        return bad_flags(fn, flags, "MHSA_TOKENIZE_ADD_SPECIAL and "
                         "_PARSE_SPECIAL");
    unsigned tf = (flags & MHSA_TOKENIZE_ADD_SPECIAL ? MHSA_TOK_ADD_SPECIAL
                                                     : 0u) |
                  (flags & MHSA_TOKENIZE_PARSE_SPECIAL
                       ? (unsigned)MHSA_TOK_PARSE_SPECIAL : 0u);
    size_t max = mhsa__tok_max_ids(m->tok, len);
    if (max < len || max > SIZE_MAX / sizeof(int32_t))
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: a text of %zu bytes is "
                          "too long", fn, len);
    // The tokenizer wants room for its worst case; a smaller buffer gets
    // the ids through scratch, so that ids is written only when they fit.
    int32_t *dst = cap >= max ? ids : malloc((max ? max : 1) *
                                             sizeof(int32_t));
    if (!dst)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: scratch for %zu ids",
                          fn, max);
    size_t got = 0;
    mhsa_status st = mhsa__tok_encode(m->tok, text, len, tf, dst, max, &got);
    if (st == MHSA_OK) {
        *n = got;
        if (dst != ids) {
            if (got <= cap) {
                if (got)   // (ids may be NULL with cap 0)
                    memcpy(ids, dst, got * sizeof(int32_t));
            }
            else
                st = mhsa__fail(MHSA_ERR_SHAPE, "%s: the text is %zu "
                                "tokens; ids has room for %zu", fn, got,
                                cap);
        }
    } else if (st == MHSA_ERR_INVALID_ARG) {
        // The tokenizer's message names the bad byte; say whose call it
        // was.
        char msg[512];
        snprintf(msg, sizeof msg, "%s", mhsa_last_error());
        st = mhsa__fail(st, "%s: %s", fn, msg);
    }
    if (dst != ids)
        free(dst);
    return st;
}

mhsa_status mhsa_detokenize(const mhsa_model *m, const int32_t *ids,
                            size_t n, unsigned flags, char *buf, size_t cap,
                            size_t *len)
{
    static const char fn[] = "mhsa_detokenize";
    if (!m || !len || (!ids && n) || (!buf && cap))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL%s", fn,
                          !m ? "m" : !len ? "len" : !ids && n ? "ids" : "buf",
                          !m || !len ? "" : !ids && n ? " with n > 0"
                                                      : " with cap > 0");
    if (flags & ~(unsigned)(MHSA_DETOKENIZE_SPECIAL |
                            MHSA_DETOKENIZE_STRIP_SPACE))
        return bad_flags(fn, flags, "MHSA_DETOKENIZE_SPECIAL and "
                         "_STRIP_SPACE");
    size_t V = mhsa__tok_vocab_size(m->tok);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= V)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: ids[%zu] = %d is "
                              "outside [0, %zu)", fn, i, (int)ids[i], V);
    unsigned tf = (flags & MHSA_DETOKENIZE_SPECIAL
                       ? (unsigned)MHSA_TOK_DECODE_SPECIAL : 0u) |
                  (flags & MHSA_DETOKENIZE_STRIP_SPACE
                       ? (unsigned)MHSA_TOK_STRIP_SPACE : 0u);
    // First the length (nothing written), then the text when it fits with
    // its NUL: buf is untouched otherwise.
    size_t need = 0;
    mhsa_status st = mhsa__tok_decode(m->tok, ids, n, tf, NULL, 0, &need);
    if (st != MHSA_OK && st != MHSA_ERR_SHAPE)
        return st;
    *len = need;
    if (need >= cap)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: the text is %zu bytes; buf "
                          "has room for %zu and the NUL (cap %zu)", fn, need,
                          cap ? cap - 1 : 0, cap);
    size_t w = 0;
    st = mhsa__tok_decode(m->tok, ids, n, tf, buf, cap - 1, &w);
    if (st != MHSA_OK)
        return st;
    buf[w] = '\0';
    return MHSA_OK;
}

// ---- sequences ---------------------------------------------------------------

mhsa_status mhsa_seq_create(mhsa_model *m, mhsa_dtype kv_dtype,
                            mhsa_seq **out)
{
    static const char fn[] = "mhsa_seq_create";
    if (!m || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !m ? "m" : "out");
    if (kv_dtype != MHSA_F32 && kv_dtype != MHSA_F16 &&
        kv_dtype != MHSA_BF16)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: kv_dtype = %d is not "
                          "MHSA_F32, MHSA_F16 or MHSA_BF16", fn,
                          (int)kv_dtype);
    if (!m->llama)
        return mhsa__fail(MHSA_ERR_STATE, "%s: the model was loaded with "
                          "vocab_only (no weights)", fn);
    mhsa_seq *s = calloc(1, sizeof *s);
    if (!s)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: the sequence", fn);
    mhsa_status st = mhsa__llama_cache_create(m->llama, kv_dtype, &s->c);
    if (st != MHSA_OK) {
        free(s);
        return st;
    }
    s->m = m;
    *out = s;
    return MHSA_OK;
}

void mhsa_seq_destroy(mhsa_seq *s)
{
    if (!s)
        return;
    mhsa__llama_cache_destroy(s->c);
    free(s);
}

void mhsa_seq_reset(mhsa_seq *s)
{
    if (s)
        mhsa__llama_cache_reset(s->c);
}

int mhsa_seq_len(const mhsa_seq *s)
{
    return s ? mhsa__llama_cache_len(s->c) : 0;
}

// The checks of one sequence's tokens and logits buffer (fn names the
// call, at the item: "" alone, "items[3]: " in a batch).
static mhsa_status check_eval(const char *fn, const char *at,
                              const mhsa_seq *s, const int32_t *tokens,
                              size_t n, mhsa_logits which,
                              const float *logits, size_t cap)
{
    if (!s || !tokens || !logits)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s%s is NULL", fn, at,
                          !s ? (*at ? "seq" : "s")
                             : !tokens ? "tokens" : "logits");
    if (which != MHSA_LOGITS_LAST && which != MHSA_LOGITS_ALL)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %swhich = %d is not "
                          "MHSA_LOGITS_LAST or MHSA_LOGITS_ALL", fn, at,
                          (int)which);
    if (n == 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %sn = 0 (need >= 1)",
                          fn, at);
    const mhsa_model *m = s->m;
    size_t V = (size_t)m->cfg.vocab, len = (size_t)mhsa_seq_len(s);
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (size_t)tokens[i] >= V)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %stokens[%zu] = %d "
                              "is outside [0, %zu)", fn, at, i,
                              (int)tokens[i], V);
    if (n > (size_t)m->n_ctx - len)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: %s%zu tokens in the sequence "
                          "+ %zu new > its %d positions (the model's "
                          "context)", fn, at, len, n, m->n_ctx);
    size_t rows = which == MHSA_LOGITS_ALL ? n : 1;
    if (cap / V < rows)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: %slogits has room for %zu "
                          "floats; %zu rows of %zu logits need %zu", fn, at,
                          cap, rows, V, rows * V);
    return MHSA_OK;
}

mhsa_status mhsa_seq_eval(mhsa_seq *s, const int32_t *tokens, size_t n,
                          mhsa_logits which, float *logits, size_t cap)
{
    mhsa_status st = check_eval("mhsa_seq_eval", "", s, tokens, n, which,
                                logits, cap);
    if (st != MHSA_OK)
        return st;
    pthread_mutex_lock(&s->m->lock);
    st = mhsa__llama_forward(s->m->llama, s->c, tokens, (int)n,
                             which == MHSA_LOGITS_ALL, logits);
    pthread_mutex_unlock(&s->m->lock);
    return st;
}

mhsa_status mhsa_batch_eval(mhsa_model *m, const mhsa_batch_item *items,
                            size_t n_items)
{
    static const char fn[] = "mhsa_batch_eval";
    if (!m || (!items && n_items))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL%s", fn,
                          !m ? "m" : "items", m ? " with n_items > 0" : "");
    if (n_items == 0)
        return MHSA_OK;
    for (size_t i = 0; i < n_items; i++) {
        const mhsa_batch_item *it = &items[i];
        char at[40];
        snprintf(at, sizeof at, "items[%zu]: ", i);
        if (it->seq && it->seq->m != m)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %sthe sequence is "
                              "of another model", fn, at);
        mhsa_status st = check_eval(fn, at, it->seq, it->tokens, it->n,
                                    it->which, it->logits, it->cap);
        if (st != MHSA_OK)
            return st;
        for (size_t j = 0; j < i; j++)
            if (items[j].seq == it->seq)
                return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: items[%zu] "
                                  "and items[%zu] are the same sequence", fn,
                                  j, i);
    }
    pthread_mutex_lock(&m->lock);
    mhsa_status st = MHSA_OK;
    if (n_items > m->parts_cap) {
        mhsa_llama_part *p = malloc(n_items * sizeof *p);
        if (p) {
            free(m->parts);
            m->parts = p;
            m->parts_cap = n_items;
        } else {
            st = mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: %zu items", fn,
                            n_items);
        }
    }
    for (size_t i = 0; st == MHSA_OK && i < n_items; i++)
        m->parts[i] = (mhsa_llama_part){ items[i].seq->c, items[i].tokens,
                                         (int)items[i].n,
                                         items[i].which == MHSA_LOGITS_ALL,
                                         items[i].logits };
    if (st == MHSA_OK)
        st = mhsa__llama_forward_parts(m->llama, m->parts, n_items);
    pthread_mutex_unlock(&m->lock);
    return st;
}
