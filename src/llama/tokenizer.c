// tokenizer.c — byte-level BPE from a GGUF file's vocabulary: loading and
// checking the tokenizer.* keys, encoding, decoding (see tokenizer.h).
//
// Tokens and merges are copied into one arena and found through two open-
// addressing hash tables (FNV-1a): token text -> id, and "left right" ->
// merge rank, looked up from the two symbols without building the string.
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "core/alloc.h"
#include "pretok.h"
#include "tokenizer.h"
#include "unicode.h"

struct mhsa_tokenizer {
    size_t n_vocab, n_merges;
    char *arena;               // every token and merge, NUL-terminated
    const char **text;         // n_vocab
    uint32_t *text_len;
    unsigned char *type;       // n_vocab token types
    const char **merge;        // n_merges, in rank order
    uint32_t *merge_len;
    int32_t *tok_slot;         // tok_mask + 1 slots: id or -1
    int32_t *merge_slot;       // merge_mask + 1 slots: rank or -1
    size_t tok_mask, merge_mask;
    int32_t byte_token[256];   // the token of each byte's code point
    int32_t bos, eos;
    int add_bos, add_eos;
    mhsa_pretok pre;
};

typedef unsigned long long ull;   // for printf

// ---- hashing ----------------------------------------------------------------

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

#define FNV_BASIS 0xcbf29ce484222325ull

static int32_t find_token(const mhsa_tokenizer *t, const char *s, size_t n)
{
    for (size_t i = fnv(FNV_BASIS, s, n) & t->tok_mask;; i = (i + 1) &
         t->tok_mask) {
        int32_t id = t->tok_slot[i];
        if (id < 0)
            return -1;
        if (t->text_len[id] == n && !memcmp(t->text[id], s, n))
            return id;
    }
}

// Rank of merging symbols a and b: the merge "a b", or -1.
static int32_t find_merge(const mhsa_tokenizer *t, const char *a, size_t an,
                          const char *b, size_t bn)
{
    uint64_t h = fnv(fnv(fnv(FNV_BASIS, a, an), " ", 1), b, bn);
    for (size_t i = h & t->merge_mask;; i = (i + 1) & t->merge_mask) {
        int32_t r = t->merge_slot[i];
        if (r < 0)
            return -1;
        const char *m = t->merge[r];
        if (t->merge_len[r] == an + 1 + bn && !memcmp(m, a, an) &&
            m[an] == ' ' && !memcmp(m + an + 1, b, bn))
            return r;
    }
}

// A table of a power of two >= 2 n slots, all -1.
static int32_t *make_table(size_t n, size_t *mask)
{
    size_t slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    int32_t *s = mhsa__alloc(slots * sizeof *s);
    if (s)
        memset(s, 0xff, slots * sizeof *s);
    *mask = slots - 1;
    return s;
}

// ---- loading ----------------------------------------------------------------

// Copies the strings of array `key` into the arena at *pos (texts/lens).
static void copy_strings(const mhsa_gguf_val *a, char *arena, size_t *pos,
                         const char **texts, uint32_t *lens)
{
    for (uint64_t i = 0; i < mhsa__gguf_arr_count(a); i++) {
        const char *s;
        size_t n;
        mhsa__gguf_arr_str(a, i, &s, &n);   // checked by the caller
        memcpy(arena + *pos, s, n);
        arena[*pos + n] = '\0';
        texts[i] = arena + *pos;
        lens[i] = (uint32_t)n;
        *pos += n + 1;
    }
}

// Array `key` of strings, its count (1 .. INT32_MAX) and total bytes.
static mhsa_status string_array(const mhsa_gguf_file *f, const char *key,
                                const mhsa_gguf_val **a, size_t *bytes)
{
    mhsa_status s = mhsa__gguf_get_arr(f, key, a);
    if (s != MHSA_OK)
        return s;
    uint64_t n = mhsa__gguf_arr_count(*a);
    if (mhsa__gguf_arr_type(*a) != MHSA_GGUF_STRING || n < 1 ||
        n > INT32_MAX)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': must be an array of "
                          "1 to 2^31-1 strings", key);
    for (uint64_t i = 0; i < n; i++) {
        const char *str;
        size_t len;
        mhsa__gguf_arr_str(*a, i, &str, &len);
        if (len > UINT32_MAX)
            return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': string %llu is "
                              "too long", key, (ull)i);
        *bytes += len + 1;   // bounded by the file's size
    }
    return MHSA_OK;
}

// Optional u32 token id `key` (< n_vocab) into *id, else -1.
static mhsa_status token_id(const mhsa_gguf_file *f, const char *key,
                            size_t n_vocab, int32_t *id)
{
    uint32_t v;
    *id = -1;
    if (!mhsa__gguf_find(f, key))
        return MHSA_OK;
    mhsa_status s = mhsa__gguf_get_u32(f, key, &v);
    if (s == MHSA_OK && v >= n_vocab)
        s = mhsa__fail(MHSA_ERR_FORMAT, "key '%s': token %u is past the "
                       "vocabulary (%zu tokens)", key, v, n_vocab);
    if (s == MHSA_OK)
        *id = (int32_t)v;
    return s;
}

static mhsa_status optional_bool(const mhsa_gguf_file *f, const char *key,
                                 int *out)
{
    *out = 0;
    return mhsa__gguf_find(f, key) ? mhsa__gguf_get_bool(f, key, out)
                                   : MHSA_OK;
}

// tokenizer.ggml.model and .pre: which tokenizer this is.
static mhsa_status kind(const mhsa_gguf_file *f, mhsa_pretok *pre)
{
    const char *model, *name;
    mhsa_status s = mhsa__gguf_get_str(f, "tokenizer.ggml.model", &model,
                                       NULL);
    if (s != MHSA_OK)
        return s;
    if (strcmp(model, "gpt2"))
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "tokenizer.ggml.model is "
                          "'%.40s': only 'gpt2' (byte-level BPE) is "
                          "supported", model);
    if ((s = mhsa__gguf_get_str(f, "tokenizer.ggml.pre", &name, NULL)))
        return s;
    if (!strcmp(name, "smollm"))
        *pre = MHSA_PRETOK_SMOLLM;
    else if (!strcmp(name, "gpt-2"))
        *pre = MHSA_PRETOK_GPT2;
    else
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "tokenizer.ggml.pre is "
                          "'%.40s': only 'gpt-2' and 'smollm' are "
                          "supported", name);
    return MHSA_OK;
}

// Token types (optional i32 array of n_vocab) into t->type.
static mhsa_status token_types(const mhsa_gguf_file *f, mhsa_tokenizer *t)
{
    static const char key[] = "tokenizer.ggml.token_type";
    memset(t->type, MHSA_TOKEN_NORMAL, t->n_vocab);
    if (!mhsa__gguf_find(f, key))
        return MHSA_OK;
    const mhsa_gguf_val *a;
    mhsa_status s = mhsa__gguf_get_arr(f, key, &a);
    if (s != MHSA_OK)
        return s;
    if (mhsa__gguf_arr_type(a) != MHSA_GGUF_INT32 ||
        mhsa__gguf_arr_count(a) != t->n_vocab)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': must be an array of "
                          "%zu i32 (one per token)", key, t->n_vocab);
    for (size_t i = 0; i < t->n_vocab; i++) {
        mhsa_gguf_num n;
        mhsa__gguf_arr_num(a, i, &n);
        if (n.as.i < MHSA_TOKEN_NORMAL || n.as.i > MHSA_TOKEN_BYTE)
            return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': token %zu has "
                              "type %lld (1 to 6)", key, i,
                              (long long)n.as.i);
        t->type[i] = (unsigned char)n.as.i;
    }
    return MHSA_OK;
}

// Hash tables, the merges' form, and a token for every byte.
static mhsa_status index_vocab(mhsa_tokenizer *t)
{
    t->tok_slot = make_table(t->n_vocab, &t->tok_mask);
    t->merge_slot = make_table(t->n_merges, &t->merge_mask);
    if (!t->tok_slot || !t->merge_slot)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tokenizer: no memory");
    for (size_t id = 0; id < t->n_vocab; id++) {
        if (find_token(t, t->text[id], t->text_len[id]) >= 0)
            continue;   // a repeated text keeps its first id
        size_t i = fnv(FNV_BASIS, t->text[id], t->text_len[id]) & t->tok_mask;
        while (t->tok_slot[i] >= 0)
            i = (i + 1) & t->tok_mask;
        t->tok_slot[i] = (int32_t)id;
    }
    for (size_t r = 0; r < t->n_merges; r++) {
        // "left right": the first space after the first byte (as
        // llama.cpp splits them); byte-level symbols hold no space.
        const char *m = t->merge[r];
        const char *sp = t->merge_len[r] > 1
                         ? memchr(m + 1, ' ', t->merge_len[r] - 1) : NULL;
        if (!sp)
            return mhsa__fail(MHSA_ERR_FORMAT, "key 'tokenizer.ggml.merges':"
                              " merge %zu ('%.40s') is not 'left right'", r,
                              m);
        size_t an = (size_t)(sp - m);
        if (find_merge(t, m, an, sp + 1, t->merge_len[r] - an - 1) >= 0)
            continue;   // a repeated merge keeps its first rank
        size_t i = fnv(FNV_BASIS, m, t->merge_len[r]) & t->merge_mask;
        while (t->merge_slot[i] >= 0)
            i = (i + 1) & t->merge_mask;
        t->merge_slot[i] = (int32_t)r;
    }
    for (int b = 0; b < 256; b++) {
        unsigned char u[4];
        size_t n = mhsa__utf8_put(mhsa__byte_to_cp((unsigned char)b), u);
        // -1 when the vocabulary lacks it: SmolLM2's has no token for
        // most control bytes (0x00-0x08, ...); such a byte is dropped when
        // no merge covers it, as llama.cpp drops it.
        t->byte_token[b] = find_token(t, (const char *)u, n);
    }
    return MHSA_OK;
}

mhsa_status mhsa__tok_load(const mhsa_gguf_file *f, mhsa_tokenizer **out)
{
    if (!f || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__tok_load: %s is NULL",
                          !f ? "f" : "out");
    mhsa_pretok pre = MHSA_PRETOK_GPT2;
    const mhsa_gguf_val *toks, *merges;
    size_t bytes = 0;
    mhsa_status s = kind(f, &pre);
    if (s == MHSA_OK)
        s = string_array(f, "tokenizer.ggml.tokens", &toks, &bytes);
    if (s == MHSA_OK)
        s = string_array(f, "tokenizer.ggml.merges", &merges, &bytes);
    if (s != MHSA_OK)
        return s;
    mhsa_tokenizer *t = mhsa__alloc(sizeof *t);
    if (!t)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tokenizer: no memory");
    t->pre = pre;
    t->n_vocab = (size_t)mhsa__gguf_arr_count(toks);
    t->n_merges = (size_t)mhsa__gguf_arr_count(merges);
    // Each count is bounded by the file's bytes (8 per string at least).
    t->arena = mhsa__alloc(bytes);
    t->text = mhsa__alloc(t->n_vocab * sizeof *t->text);
    t->text_len = mhsa__alloc(t->n_vocab * sizeof *t->text_len);
    t->type = mhsa__alloc(t->n_vocab);
    t->merge = mhsa__alloc(t->n_merges * sizeof *t->merge);
    t->merge_len = mhsa__alloc(t->n_merges * sizeof *t->merge_len);
    if (!t->arena || !t->text || !t->text_len || !t->type || !t->merge ||
        !t->merge_len) {
        mhsa__tok_free(t);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tokenizer: no memory");
    }
    size_t pos = 0;
    copy_strings(toks, t->arena, &pos, t->text, t->text_len);
    copy_strings(merges, t->arena, &pos, t->merge, t->merge_len);
    s = token_types(f, t);
    if (s == MHSA_OK)
        s = index_vocab(t);
    if (s == MHSA_OK)
        s = token_id(f, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos);
    if (s == MHSA_OK)
        s = token_id(f, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos);
    if (s == MHSA_OK)
        s = optional_bool(f, "tokenizer.ggml.add_bos_token", &t->add_bos);
    if (s == MHSA_OK)
        s = optional_bool(f, "tokenizer.ggml.add_eos_token", &t->add_eos);
    if (s == MHSA_OK && ((t->add_bos && t->bos < 0) ||
                         (t->add_eos && t->eos < 0)))
        s = mhsa__fail(MHSA_ERR_FORMAT, "tokenizer.ggml.add_%s_token is "
                       "set but the file has no %s_token_id",
                       t->bos < 0 ? "bos" : "eos", t->bos < 0 ? "bos" : "eos");
    if (s != MHSA_OK) {
        mhsa__tok_free(t);
        return s;
    }
    *out = t;
    return MHSA_OK;
}

void mhsa__tok_free(mhsa_tokenizer *t)
{
    if (!t)
        return;
    mhsa__free(t->arena);
    mhsa__free(t->text);
    mhsa__free(t->text_len);
    mhsa__free(t->type);
    mhsa__free(t->merge);
    mhsa__free(t->merge_len);
    mhsa__free(t->tok_slot);
    mhsa__free(t->merge_slot);
    mhsa__free(t);
}

size_t mhsa__tok_vocab_size(const mhsa_tokenizer *t) { return t->n_vocab; }
int32_t mhsa__tok_bos(const mhsa_tokenizer *t) { return t->bos; }
int32_t mhsa__tok_eos(const mhsa_tokenizer *t) { return t->eos; }
int mhsa__tok_adds_bos(const mhsa_tokenizer *t) { return t->add_bos; }
int mhsa__tok_adds_eos(const mhsa_tokenizer *t) { return t->add_eos; }

const char *mhsa__tok_text(const mhsa_tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t)id < t->n_vocab ? t->text[id] : NULL;
}

int mhsa__tok_type(const mhsa_tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t)id < t->n_vocab ? t->type[id] : 0;
}

// ---- encoding ---------------------------------------------------------------

// Scratch for one encode call of a text of n bytes.
typedef struct bpe_scratch {
    char *enc;           // a piece in the byte alphabet (<= 2 bytes a byte)
    size_t *off;         // symbols: offset and length in enc
    size_t *len;
    int32_t *rank;       // rank of merging symbol i with i + 1, or -1
} bpe_scratch;

static int32_t pair_rank(const mhsa_tokenizer *t, const bpe_scratch *b,
                         size_t i)
{
    return find_merge(t, b->enc + b->off[i], b->len[i], b->enc +
                      b->off[i + 1], b->len[i + 1]);
}

// BPE of one piece p[0..n) (n >= 1), its tokens appended at ids + *k.
static void encode_piece(const mhsa_tokenizer *t, const unsigned char *p,
                         size_t n, const bpe_scratch *b, int32_t *ids,
                         size_t *k)
{
    size_t m = 0, e = 0;
    for (size_t i = 0; i < n; i++, m++) {   // one symbol per byte
        b->off[m] = e;
        b->len[m] = mhsa__utf8_put(mhsa__byte_to_cp(p[i]),
                                   (unsigned char *)b->enc + e);
        e += b->len[m];
    }
    for (size_t i = 0; i + 1 < m; i++)
        b->rank[i] = pair_rank(t, b, i);
    // Merge the pair of lowest rank, leftmost among equals, until none is
    // left; symbols are contiguous in enc, so a merge only adds lengths.
    for (;;) {
        size_t best = m;
        for (size_t i = 0; i + 1 < m; i++)
            if (b->rank[i] >= 0 &&
                (best == m || b->rank[i] < b->rank[best]))
                best = i;
        if (best == m)
            break;
        b->len[best] += b->len[best + 1];
        for (size_t i = best + 1; i + 1 < m; i++) {
            b->off[i] = b->off[i + 1];
            b->len[i] = b->len[i + 1];
            b->rank[i] = b->rank[i + 1];
        }
        m--;
        if (best + 1 < m)
            b->rank[best] = pair_rank(t, b, best);
        if (best > 0)
            b->rank[best - 1] = pair_rank(t, b, best - 1);
    }
    size_t byte = 0;   // which input byte each symbol starts at
    for (size_t i = 0; i < m; i++) {
        int32_t id = find_token(t, b->enc + b->off[i], b->len[i]);
        // A symbol counts one byte per code point of the byte alphabet.
        size_t nb = 0;
        for (size_t j = 0; j < b->len[i]; nb++) {
            uint32_t cp;
            j += mhsa__utf8_next((const unsigned char *)b->enc + b->off[i] + j,
                                 b->len[i] - j, &cp);
        }
        if (id >= 0) {
            ids[(*k)++] = id;
        } else {   // not in the vocabulary: its bytes one by one
            for (size_t j = 0; j < nb; j++)
                if (t->byte_token[p[byte + j]] >= 0)
                    ids[(*k)++] = t->byte_token[p[byte + j]];
        }
        byte += nb;
    }
}

mhsa_status mhsa__tok_encode(const mhsa_tokenizer *t, const char *text,
                             size_t len, int add_special, int32_t *ids,
                             size_t cap, size_t *n)
{
    if (!t || (!text && len) || !ids || !n || len > SIZE_MAX / 8 - 2 ||
        cap < len + 2)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__tok_encode: NULL "
                          "argument, or cap %zu < len + 2 = %zu", cap,
                          len + 2);
    size_t k = 0;
    if (add_special && t->add_bos)
        ids[k++] = t->bos;
    if (len) {
        size_t units = len + 1;
        size_t *sz = mhsa__alloc(4 * units * sizeof *sz);
        uint32_t *cps = mhsa__alloc(units * sizeof *cps);
        unsigned char *cls = mhsa__alloc(units);
        int32_t *rank = mhsa__alloc(units * sizeof *rank);
        char *enc = mhsa__alloc(2 * units);
        if (!sz || !cps || !cls || !rank || !enc) {
            mhsa__free(sz);
            mhsa__free(cps);
            mhsa__free(cls);
            mhsa__free(rank);
            mhsa__free(enc);
            return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa__tok_encode: no "
                              "memory for %zu bytes of text", len);
        }
        mhsa_pretok_scratch ps = {sz, cps, cls};
        size_t *ends = sz + units;
        bpe_scratch b = {enc, sz + 2 * units, sz + 3 * units, rank};
        const unsigned char *p = (const unsigned char *)text;
        size_t pieces = mhsa__pretok_split(t->pre, p, len, &ps, ends);
        for (size_t i = 0, start = 0; i < pieces; start = ends[i++])
            encode_piece(t, p + start, ends[i] - start, &b, ids, &k);
        mhsa__free(sz);
        mhsa__free(cps);
        mhsa__free(cls);
        mhsa__free(rank);
        mhsa__free(enc);
    }
    if (add_special && t->add_eos)
        ids[k++] = t->eos;
    *n = k;
    return MHSA_OK;
}

// ---- decoding ---------------------------------------------------------------

mhsa_status mhsa__tok_decode(const mhsa_tokenizer *t, const int32_t *ids,
                             size_t n, int special, char *buf, size_t cap,
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
        const unsigned char *s = (const unsigned char *)t->text[ids[i]];
        size_t sn = t->text_len[ids[i]];
        int type = t->type[ids[i]];
        if (type == MHSA_TOKEN_CONTROL && !special)
            continue;
        int raw = type == MHSA_TOKEN_CONTROL ||
                  type == MHSA_TOKEN_USER_DEFINED;
        for (size_t j = 0; j < sn;) {
            uint32_t cp;
            size_t l = mhsa__utf8_next(s + j, sn - j, &cp);
            int byte = raw || cp == MHSA_CP_INVALID ? -1
                                                    : mhsa__cp_to_byte(cp);
            // A code point outside the byte alphabet (only in a malformed
            // vocabulary) is written as it is.
            size_t out = byte >= 0 ? 1 : l;
            for (size_t q = 0; q < out; q++, w++)
                if (w < cap)
                    buf[w] = byte >= 0 ? (char)byte : (char)s[j + q];
            j += l;
        }
    }
    *len = w;
    if (w > cap)
        return mhsa__fail(MHSA_ERR_SHAPE, "mhsa__tok_decode: %zu bytes do "
                          "not fit in %zu", w, cap);
    return MHSA_OK;
}
