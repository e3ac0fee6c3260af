// tokenizer.c — a GGUF file's tokenizer: loading and checking the
// tokenizer.* keys, and encoding: special tokens cut out (tok_special.c),
// the rest through BPE (tok_bpe.c) or SPM (tok_spm.c). See tokenizer.h.
//
// Tokens and merges are copied into one arena and found through two open-
// addressing hash tables (FNV-1a): token text -> id, and "left right" ->
// merge rank, looked up from the two symbols without building the string.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "io/file_read.h"
#include "pretok.h"
#include "tok_internal.h"
#include "tokenizer.h"
#include "unicode.h"

typedef unsigned long long ull;   // for printf

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
                       "vocabulary (%zu tokens)",
                       mhsa__esc((char[96]){0}, 96, key, strlen(key)), v,
                       n_vocab);
    if (s == MHSA_OK)
        *id = (int32_t)v;
    return s;
}

static mhsa_status optional_bool(const mhsa_gguf_file *f, const char *key,
                                 int def, int *out)
{
    *out = def;
    return mhsa__gguf_find(f, key) ? mhsa__gguf_get_bool(f, key, out)
                                   : MHSA_OK;
}

// tokenizer.ggml.model and, for BPE, .pre: which tokenizer this is.
static mhsa_status kind(const mhsa_gguf_file *f, mhsa_tok_kind *k,
                        mhsa_pretok *pre)
{
    const char *model, *name;
    size_t len = 0;
    char q[48];
    mhsa_status s = mhsa__gguf_get_str(f, "tokenizer.ggml.model", &model,
                                       &len);
    if (s != MHSA_OK)
        return s;
    if (!strcmp(model, "llama")) {   // SPM has no pre-tokenizer
        *k = MHSA_TOK_SPM;
        return MHSA_OK;
    }
    if (strcmp(model, "gpt2"))
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "tokenizer.ggml.model is "
                          "'%s': only 'gpt2' (byte-level BPE) and 'llama' "
                          "(SentencePiece) are supported",
                          mhsa__esc(q, sizeof q, model, len));
    *k = MHSA_TOK_BPE;
    if ((s = mhsa__gguf_get_str(f, "tokenizer.ggml.pre", &name, &len)))
        return s;
    // The names llama.cpp c392e50 maps to each regex (llama-vocab.cpp).
    static const struct { const char *name; mhsa_pretok pre; } names[] = {
        {"gpt-2", MHSA_PRETOK_GPT2}, {"smollm", MHSA_PRETOK_SMOLLM},
        {"llama-bpe", MHSA_PRETOK_LLAMA3}, {"llama3", MHSA_PRETOK_LLAMA3},
        {"llama-v3", MHSA_PRETOK_LLAMA3}, {"qwen2", MHSA_PRETOK_QWEN2},
        {"deepseek-r1-qwen", MHSA_PRETOK_QWEN2},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name) && strlen(name) == len) {
            *pre = names[i].pre;
            return MHSA_OK;
        }
    return mhsa__fail(MHSA_ERR_UNSUPPORTED, "tokenizer.ggml.pre is '%s': "
                      "only 'gpt-2', 'smollm', 'llama-bpe' and 'qwen2' are "
                      "supported", mhsa__esc(q, sizeof q, name, len));
}

// One element of a per-token array: checked and stored at token i.
typedef mhsa_status (*token_take)(mhsa_tokenizer *t, const char *key,
                                  size_t i, const mhsa_gguf_num *n);

// An optional per-token array: nothing when key is absent, else an array
// of n_vocab elements of type (type_name for the message), each handed to
// take in token order up to its first error.
static mhsa_status per_token_each(const mhsa_gguf_file *f, const char *key,
                                  int type, const char *type_name,
                                  mhsa_tokenizer *t, token_take take)
{
    if (!mhsa__gguf_find(f, key))
        return MHSA_OK;
    const mhsa_gguf_val *a;
    mhsa_status s = mhsa__gguf_get_arr(f, key, &a);
    if (s != MHSA_OK)
        return s;
    if (mhsa__gguf_arr_type(a) != type ||
        mhsa__gguf_arr_count(a) != t->n_vocab)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': must be an array of "
                          "%zu %s (one per token)", key, t->n_vocab,
                          type_name);
    for (size_t i = 0; i < t->n_vocab && s == MHSA_OK; i++) {
        mhsa_gguf_num n;
        mhsa__gguf_arr_num(a, i, &n);
        s = take(t, key, i, &n);
    }
    return s;
}

static mhsa_status take_type(mhsa_tokenizer *t, const char *key, size_t i,
                             const mhsa_gguf_num *n)
{
    if (n->as.i < MHSA_TOKEN_NORMAL || n->as.i > MHSA_TOKEN_BYTE)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': token %zu has "
                          "type %lld (1 to 6)", key, i, (long long)n->as.i);
    t->type[i] = (unsigned char)n->as.i;
    return MHSA_OK;
}

static mhsa_status take_score(mhsa_tokenizer *t, const char *key, size_t i,
                              const mhsa_gguf_num *n)
{
    // NaN would leave the order of merges undefined.
    if (n->as.f != n->as.f)
        return mhsa__fail(MHSA_ERR_FORMAT, "key '%s': token %zu's "
                          "score is NaN", key, i);
    t->score[i] = (float)n->as.f;
    return MHSA_OK;
}

// Token types (optional i32 array of n_vocab) into t->type.
static mhsa_status token_types(const mhsa_gguf_file *f, mhsa_tokenizer *t)
{
    memset(t->type, MHSA_TOKEN_NORMAL, t->n_vocab);
    return per_token_each(f, "tokenizer.ggml.token_type", MHSA_GGUF_INT32,
                          "i32", t, take_type);
}

// Scores (SPM: optional f32 array of n_vocab, 0 when absent) into t->score.
static mhsa_status token_scores(const mhsa_gguf_file *f, mhsa_tokenizer *t)
{
    memset(t->score, 0, t->n_vocab * sizeof *t->score);
    return per_token_each(f, "tokenizer.ggml.scores", MHSA_GGUF_FLOAT32,
                          "f32", t, take_score);
}

int mhsa__tok_byte_of(const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF0123456789abcdef";
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>')
        return -1;
    const char *h = memchr(hex, s[3], 32), *l = memchr(hex, s[4], 32);
    if (!h || !l || !s[3] || !s[4])
        return -1;
    return (int)(((h - hex) & 15) << 4 | ((l - hex) & 15));
}

// Hash tables, the merges' form, and a token for every byte.
static mhsa_status index_vocab(mhsa_tokenizer *t)
{
    t->tok_slot = make_table(t->n_vocab, &t->tok_mask);
    t->merge_slot = make_table(t->n_merges, &t->merge_mask);
    if (!t->tok_slot || !t->merge_slot)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tokenizer: no memory");
    for (size_t id = 0; id < t->n_vocab; id++) {
        if (t->type[id] == MHSA_TOKEN_BYTE && t->kind == MHSA_TOK_SPM &&
            mhsa__tok_byte_of(t->text[id], t->text_len[id]) < 0)
            return mhsa__fail(MHSA_ERR_FORMAT, "key 'tokenizer.ggml.tokens':"
                              " token %zu ('%s') is of type byte but not "
                              "'<0xXX>'", id,
                              mhsa__esc((char[48]){0}, 48, t->text[id],
                                        t->text_len[id]));
        if (mhsa__tok_find(t, t->text[id], t->text_len[id]) >= 0)
            continue;   // a repeated text keeps its first id
        size_t i = mhsa__fnv(MHSA_FNV_BASIS, t->text[id], t->text_len[id]) &
                   t->tok_mask;
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
                              " merge %zu ('%s') is not 'left right'", r,
                              mhsa__esc((char[48]){0}, 48, m,
                                        t->merge_len[r]));
        size_t an = (size_t)(sp - m);
        if (mhsa__tok_find_merge(t, m, an, sp + 1,
                                 t->merge_len[r] - an - 1) >= 0)
            continue;   // a repeated merge keeps its first rank
        size_t i = mhsa__fnv(MHSA_FNV_BASIS, m, t->merge_len[r]) &
                   t->merge_mask;
        while (t->merge_slot[i] >= 0)
            i = (i + 1) & t->merge_mask;
        t->merge_slot[i] = (int32_t)r;
    }
    for (int b = 0; b < 256; b++) {
        unsigned char u[7];
        if (t->kind == MHSA_TOK_SPM) {
            // llama.cpp's byte_to_token: "<0xXX>", else the byte itself;
            // where it would fail, unk (or nothing without one).
            static const char hex[] = "0123456789ABCDEF";
            char x[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
            char c = (char)b;
            int32_t id = mhsa__tok_find(t, x, 6);
            if (id < 0)
                id = mhsa__tok_find(t, &c, 1);
            t->byte_token[b] = id >= 0 ? id : t->unk;
            continue;
        }
        size_t n = mhsa__utf8_put(mhsa__byte_to_cp((unsigned char)b), u);
        // -1 when the vocabulary lacks it: SmolLM2's has no token for
        // most control bytes (0x00-0x08, ...); such a byte is dropped when
        // no merge covers it, as llama.cpp drops it.
        t->byte_token[b] = mhsa__tok_find(t, (const char *)u, n);
    }
    return MHSA_OK;
}

// End-of-generation tokens and the texts llama.cpp takes for control
// tokens whatever the file says (llama_vocab::impl::load, "auto-detect
// special tokens by text"): the EOS, EOT and EOM ids and every token
// spelled as one of these.
static mhsa_status end_tokens(const mhsa_gguf_file *f, mhsa_tokenizer *t)
{
    static const char *const eog_text[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
        "<|endoftext|>", "<|eom_id|>", "<EOT>",
    };
    int32_t ids[2 + sizeof eog_text / sizeof eog_text[0]];
    int n = 0;
    mhsa_status s = token_id(f, "tokenizer.ggml.eot_token_id", t->n_vocab,
                             &ids[n]);
    n += ids[n] >= 0;
    if (s == MHSA_OK)
        s = token_id(f, "tokenizer.ggml.eom_token_id", t->n_vocab, &ids[n]);
    if (s != MHSA_OK)
        return s;
    n += ids[n] >= 0;
    for (size_t i = 0; i < sizeof eog_text / sizeof eog_text[0]; i++) {
        int32_t id = mhsa__tok_find(t, eog_text[i], strlen(eog_text[i]));
        if (id >= 0) {
            t->type[id] = MHSA_TOKEN_CONTROL;
            ids[n++] = id;
        }
    }
    t->n_eog = 0;
    if (t->eos >= 0)
        t->eog[t->n_eog++] = t->eos;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < t->n_eog; j++)
            seen |= t->eog[j] == ids[i];
        if (!seen)
            t->eog[t->n_eog++] = ids[i];
    }
    return MHSA_OK;
}

typedef struct by_length { uint32_t len; int32_t id; } by_length;

static int longer_first(const void *a, const void *b)
{
    const by_length *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

// The tokens the text is cut at (control, user-defined, unknown; not
// empty), longest first (llama.cpp's cache_special_tokens; equal lengths
// by id, where its sort leaves the order open).
static mhsa_status special_tokens(mhsa_tokenizer *t)
{
    size_t n = 0;
    for (size_t id = 0; id < t->n_vocab; id++) {
        int ty = t->type[id];
        n += (ty == MHSA_TOKEN_CONTROL || ty == MHSA_TOKEN_USER_DEFINED ||
              ty == MHSA_TOKEN_UNKNOWN) && t->text_len[id] > 0;
    }
    t->n_special = n;
    if (n == 0)
        return MHSA_OK;
    by_length *v = mhsa__alloc(n * sizeof *v);
    t->special = mhsa__alloc(n * sizeof *t->special);
    if (!v || !t->special) {
        mhsa__free(v);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tokenizer: no memory");
    }
    n = 0;
    for (size_t id = 0; id < t->n_vocab; id++) {
        int ty = t->type[id];
        if ((ty == MHSA_TOKEN_CONTROL || ty == MHSA_TOKEN_USER_DEFINED ||
             ty == MHSA_TOKEN_UNKNOWN) && t->text_len[id] > 0)
            v[n++] = (by_length){t->text_len[id], (int32_t)id};
    }
    qsort(v, n, sizeof *v, longer_first);
    for (size_t i = 0; i < n; i++)
        t->special[i] = v[i].id;
    mhsa__free(v);
    return MHSA_OK;
}

// BOS/EOS/unk ids and the add_* flags, with llama.cpp's defaults where the
// file has no key: SPM BOS 1, EOS 2, unk 0, adds BOS and a space prefix;
// BPE none of these, but Llama 3's pre-tokenizer adds BOS.
static mhsa_status special_ids(const mhsa_gguf_file *f, mhsa_tokenizer *t)
{
    int spm = t->kind == MHSA_TOK_SPM;
    int llama3 = t->kind == MHSA_TOK_BPE && t->pre == MHSA_PRETOK_LLAMA3;
    mhsa_status s = token_id(f, "tokenizer.ggml.bos_token_id", t->n_vocab,
                             &t->bos);
    if (s == MHSA_OK)
        s = token_id(f, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos);
    if (s == MHSA_OK)
        s = token_id(f, "tokenizer.ggml.unknown_token_id", t->n_vocab,
                     &t->unk);
    if (s == MHSA_OK)
        s = optional_bool(f, "tokenizer.ggml.add_bos_token", spm || llama3,
                          &t->add_bos);
    if (s == MHSA_OK)
        s = optional_bool(f, "tokenizer.ggml.add_eos_token", 0, &t->add_eos);
    if (s == MHSA_OK)
        s = optional_bool(f, "tokenizer.ggml.add_space_prefix", spm,
                          &t->add_space_prefix);
    if (s != MHSA_OK)
        return s;
    // Every other special token id the file names (padding, cls, mask,
    // separator, the fill-in-the-middle ones, ...), though none is used
    // here: an id past the vocabulary is a malformed file whichever it is.
    static const char pre[] = "tokenizer.ggml.", suf[] = "_token_id";
    for (size_t i = 0; i < mhsa__gguf_kv_count(f); i++) {
        const char *key = mhsa__gguf_kv_key(f, i);
        size_t n = strlen(key);
        int32_t id;
        if (n > sizeof pre + sizeof suf - 2 &&
            !strncmp(key, pre, sizeof pre - 1) &&
            !strcmp(key + n - (sizeof suf - 1), suf) &&
            (s = token_id(f, key, t->n_vocab, &id)) != MHSA_OK)
            return s;
    }
    if (spm && !mhsa__gguf_find(f, "tokenizer.ggml.bos_token_id") &&
        t->n_vocab > 1)
        t->bos = 1;
    if (spm && !mhsa__gguf_find(f, "tokenizer.ggml.eos_token_id") &&
        t->n_vocab > 2)
        t->eos = 2;
    if (spm && !mhsa__gguf_find(f, "tokenizer.ggml.unknown_token_id"))
        t->unk = 0;
    if ((t->add_bos && t->bos < 0) || (t->add_eos && t->eos < 0))
        return mhsa__fail(MHSA_ERR_FORMAT, "tokenizer.ggml.add_%s_token is "
                          "set but the file has no %s_token_id",
                          t->bos < 0 ? "bos" : "eos",
                          t->bos < 0 ? "bos" : "eos");
    return MHSA_OK;
}

// A model file's tokenizer has a token for every row of the model's
// embedding and head (when the file has them), and no more: the model
// and the ids it samples would otherwise disagree with the tokenizer
// only at run time, on the seeds that reach such an id.
static mhsa_status fits_the_model(const mhsa_gguf_file *f, uint64_t n_vocab)
{
    static const char *const names[] = {"token_embd.weight",
                                        "output.weight"};
    for (size_t i = 0; i < 2; i++) {
        const mhsa_gguf_tensor *w = mhsa__gguf_tensor(f, names[i]);
        if (w && w->n_dims == 2 && w->dims[0] != n_vocab)
            return mhsa__fail(MHSA_ERR_FORMAT, "key 'tokenizer.ggml.tokens'"
                              ": %llu tokens, but %s has %zu rows (one per "
                              "token)", (ull)n_vocab, names[i], w->dims[0]);
    }
    return MHSA_OK;
}

void mhsa__tok_free(mhsa_tokenizer *t)
{
    if (!t)
        return;
    MHSA_FREE_ALL(t->arena, t->text, t->text_len, t->type, t->score, t->merge,
                  t->merge_len, t->tok_slot, t->merge_slot, t->special, t);
}

mhsa_status mhsa__tok_load(const mhsa_gguf_file *f, mhsa_tokenizer **out)
{
    if (!f || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__tok_load: %s is NULL",
                          !f ? "f" : "out");
    mhsa_pretok pre = MHSA_PRETOK_GPT2;
    mhsa_tok_kind k = MHSA_TOK_BPE;
    const mhsa_gguf_val *toks, *merges = NULL;
    size_t bytes = 0;
    mhsa_status s = kind(f, &k, &pre);
    if (s == MHSA_OK)
        s = string_array(f, "tokenizer.ggml.tokens", &toks, &bytes);
    if (s == MHSA_OK && k == MHSA_TOK_BPE)
        s = string_array(f, "tokenizer.ggml.merges", &merges, &bytes);
    if (s != MHSA_OK)
        return s;
    if ((s = fits_the_model(f, mhsa__gguf_arr_count(toks))) != MHSA_OK)
        return s;
    mhsa_tokenizer *t = mhsa__alloc(sizeof *t);
    if (!t)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tokenizer: no memory");
    memset(t, 0, sizeof *t);
    t->kind = k;
    t->pre = pre;
    // Llama 3's: a piece that is a token is that token, whatever the
    // merges would make of it (llama.cpp's ignore_merges).
    t->ignore_merges = k == MHSA_TOK_BPE && pre == MHSA_PRETOK_LLAMA3;
    t->n_vocab = (size_t)mhsa__gguf_arr_count(toks);
    t->n_merges = merges ? (size_t)mhsa__gguf_arr_count(merges) : 0;
    // Each count is bounded by the file's bytes (8 per string at least).
    t->arena = mhsa__alloc(bytes);
    t->text = mhsa__alloc(t->n_vocab * sizeof *t->text);
    t->text_len = mhsa__alloc(t->n_vocab * sizeof *t->text_len);
    t->type = mhsa__alloc(t->n_vocab);
    t->score = mhsa__alloc(t->n_vocab * sizeof *t->score);
    t->merge = mhsa__alloc((t->n_merges + 1) * sizeof *t->merge);
    t->merge_len = mhsa__alloc((t->n_merges + 1) * sizeof *t->merge_len);
    if (!t->arena || !t->text || !t->text_len || !t->type || !t->score ||
        !t->merge || !t->merge_len) {
        mhsa__tok_free(t);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tokenizer: no memory");
    }
    size_t pos = 0;
    copy_strings(toks, t->arena, &pos, t->text, t->text_len);
    if (merges)
        copy_strings(merges, t->arena, &pos, t->merge, t->merge_len);
    s = token_types(f, t);
    if (s == MHSA_OK && k == MHSA_TOK_SPM)
        s = token_scores(f, t);
    if (s == MHSA_OK)
        s = special_ids(f, t);
    if (s == MHSA_OK)
        s = index_vocab(t);
    if (s == MHSA_OK)
        s = end_tokens(f, t);
    if (s == MHSA_OK)
        s = special_tokens(t);
    if (s != MHSA_OK) {
        mhsa__tok_free(t);
        return s;
    }
    *out = t;
    return MHSA_OK;
}

size_t mhsa__tok_vocab_size(const mhsa_tokenizer *t) { return t->n_vocab; }
int32_t mhsa__tok_bos(const mhsa_tokenizer *t) { return t->bos; }
int32_t mhsa__tok_eos(const mhsa_tokenizer *t) { return t->eos; }
int mhsa__tok_adds_bos(const mhsa_tokenizer *t) { return t->add_bos; }
int mhsa__tok_adds_eos(const mhsa_tokenizer *t) { return t->add_eos; }
int mhsa__tok_is_spm(const mhsa_tokenizer *t)
{
    return t->kind == MHSA_TOK_SPM;
}

int mhsa__tok_is_eog(const mhsa_tokenizer *t, int32_t id)
{
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id)
            return 1;
    return 0;
}

const char *mhsa__tok_text(const mhsa_tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t)id < t->n_vocab ? t->text[id] : NULL;
}

int mhsa__tok_type(const mhsa_tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t)id < t->n_vocab ? t->type[id] : 0;
}

// ---- encoding ---------------------------------------------------------------

size_t mhsa__tok_max_ids(const mhsa_tokenizer *t, size_t len)
{
    // BPE: a token per byte at most. SPM: a run of m plain bytes is at
    // most 3 (m + 1) byte tokens (a space prefix; a space is 3 bytes once
    // escaped), and there is at most one run more than special tokens
    // (of a byte at least): 4 len + 3. Both + BOS, EOS.
    if (len > SIZE_MAX / 8 - 8)
        return SIZE_MAX;
    return (t && t->kind == MHSA_TOK_SPM ? 4 * len + 3 : len) + 2;
}

mhsa_status mhsa__tok_encode(const mhsa_tokenizer *t, const char *text,
                             size_t len, unsigned flags, int32_t *ids,
                             size_t cap, size_t *n)
{
    size_t need = mhsa__tok_max_ids(t, len);
    if (!t || (!text && len) || !ids || !n || need == SIZE_MAX ||
        cap < need)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa__tok_encode: NULL "
                          "argument, or cap %zu < %zu (mhsa__tok_max_ids)",
                          cap, need);
    // Invalid UTF-8 is refused before anything is written: a byte-level
    // vocabulary has no tokens for bytes UTF-8 never uses (such as 0xff),
    // which would be left out without a word.
    for (size_t i = 0; i < len && !(flags & MHSA_TOK_ALLOW_INVALID_UTF8);) {
        uint32_t cp;
        size_t step = mhsa__utf8_next((const unsigned char *)text + i,
                                      len - i, &cp);
        if (cp == MHSA_CP_INVALID)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "the text is not valid "
                              "UTF-8: byte offset %zu (0x%02x) starts no "
                              "well-formed sequence", i,
                              (unsigned)(unsigned char)text[i]);
        i += step;
    }
    size_t k = 0;
    if ((flags & MHSA_TOK_ADD_SPECIAL) && t->add_bos)
        ids[k++] = t->bos;
    if (len) {
        size_t nf = 2 * len + 1;
        size_t frag_bytes = 2 * nf * sizeof(mhsa_tok_frag);
        size_t enc_bytes = t->kind == MHSA_TOK_SPM
                           ? mhsa__spm_scratch_bytes(len)
                           : mhsa__bpe_scratch_bytes(len);
        char *mem = mhsa__alloc(frag_bytes + enc_bytes);
        if (!mem)
            return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa__tok_encode: no "
                              "memory for %zu bytes of text", len);
        mhsa_tok_frag *fr = (mhsa_tok_frag *)mem;
        const unsigned char *p = (const unsigned char *)text;
        size_t frags = mhsa__tok_partition(t, p, len,
                                           (flags & MHSA_TOK_PARSE_SPECIAL)
                                           != 0, fr, fr + nf);
        mhsa_bpe_scratch b;
        mhsa_spm_scratch sp;
        if (t->kind == MHSA_TOK_SPM)
            mhsa__spm_scratch_init(&sp, mem + frag_bytes, len);
        else
            mhsa__bpe_scratch_init(&b, mem + frag_bytes, len);
        int after_special = 1;   // SPM: a space before the first text too
        for (size_t i = 0; i < frags; i++) {
            if (fr[i].id >= 0) {
                ids[k++] = fr[i].id;
                after_special = 1;
            } else if (t->kind == MHSA_TOK_SPM) {
                mhsa__spm_encode(t, p + fr[i].off, fr[i].len,
                                 t->add_space_prefix && after_special, &sp,
                                 ids, &k);
                after_special = 0;
            } else {
                mhsa__bpe_encode(t, p + fr[i].off, fr[i].len, &b, ids, &k);
            }
        }
        mhsa__free(mem);
    }
    if ((flags & MHSA_TOK_ADD_SPECIAL) && t->add_eos)
        ids[k++] = t->eos;
    *n = k;
    return MHSA_OK;
}
