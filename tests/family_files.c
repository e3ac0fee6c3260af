// family_files.c — see family_files.h. The weights come from a fixed
// xorshift generator, so the test and the reference tool write the same
// bytes; the vocabulary is GPT-2's 256 byte symbols, merges that build a
// few dozen words, one word reachable by no merge (Llama 3's
// ignore_merges takes it whole) and chat-style special tokens.
#include "family_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_writer.h"
#include "kernels/half.h"

enum { GGUF_U32 = 4, GGUF_I32 = 5, GGUF_F32 = 6, GGUF_STR = 8,
       GGUF_ARR = 9, GGML_F32 = 0, GGML_Q8_0 = 8 };

// ---- the vocabulary ----------------------------------------------------

enum { MAX_TOK = 512, MAX_MERGE = 256, TOK_LEN = 48 };
static char tok[MAX_TOK][TOK_LEN];
static int32_t tok_type[MAX_TOK];
static int n_tok;
static char merge[MAX_MERGE][2 * TOK_LEN];
static int n_merge;

// GPT-2's byte alphabet: printable Latin-1 bytes stand for themselves, the
// other 68 for U+0100 on, in byte order.
static uint32_t byte_cp(unsigned b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
        return b;
    uint32_t n = 0;
    for (unsigned c = 0; c < b; c++)
        n += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174);
    return 256 + n;
}

static size_t put_utf8(uint32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    o[0] = (char)(0xc0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;   // (the alphabet stays below U+0800)
}

static int find_tok(const char *s)
{
    for (int i = 0; i < n_tok; i++)
        if (!strcmp(tok[i], s))
            return i;
    return -1;
}

static void add_tok(const char *s, int32_t type)
{
    if (find_tok(s) < 0 && n_tok < MAX_TOK) {
        snprintf(tok[n_tok], TOK_LEN, "%s", s);
        tok_type[n_tok++] = type;
    }
}

// The symbols of plain UTF-8 text w, merged left to right: a merge and a
// token per step ("Ġ" + "t" -> "Ġt", "Ġt" + "h" -> "Ġth", ...).
static void add_word(const char *w)
{
    char acc[TOK_LEN] = "", sym[8];
    for (const unsigned char *p = (const unsigned char *)w; *p; p++) {
        sym[put_utf8(byte_cp(*p), sym)] = '\0';
        if (acc[0]) {
            char m[2 * TOK_LEN];
            snprintf(m, sizeof m, "%s %s", acc, sym);
            int seen = 0;
            for (int i = 0; i < n_merge; i++)
                seen |= !strcmp(merge[i], m);
            if (!seen && n_merge < MAX_MERGE)
                snprintf(merge[n_merge++], sizeof merge[0], "%s", m);
        }
        strncat(acc, sym, TOK_LEN - strlen(acc) - 1);
        add_tok(acc, 1);
    }
}

static void build_vocab(void)
{
    static const char *const words[] = {
        " the", "the", " quick", " brown", " fox", "'s", "'re", "'ll",
        " don", "'t", "12", "123", " 1", "\n\n", "  ", "   ", " hello",
        "hello", " world", " caf\xc3\xa9", "\xc3\xa9", " \xe4\xb8\x96\xe7\x95\x8c",
        " \xc3\xbc" "ber", "!!", " !", "...", "\t", " a", "bc", "ab", "ing",
        " line", " one", " two", " and", "\r\n",
    };
    if (n_tok)
        return;
    for (unsigned b = 0; b < 256; b++) {
        char s[4];
        s[put_utf8(byte_cp(b), s)] = '\0';
        add_tok(s, 1);
    }
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        add_word(words[i]);
    add_tok("\xc4\xa0" "abc", 1);   // " abc": no merge makes it
    add_tok("<|begin_of_text|>", 3);
    add_tok("<|end_of_text|>", 3);
    add_tok("<|im_start|>", 3);
    add_tok("<|im_end|>", 3);
    add_tok("<tool>", 4);           // user-defined: parsed always
}

int family_vocab_size(void)
{
    build_vocab();
    return n_tok;
}

// ---- the weights -------------------------------------------------------

static uint64_t rng_state;

static float uniform(float a)   // in [-a, a)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return a * (2.0f * (float)(rng_state >> 40) / 16777216.0f - 1.0f);
}

enum { MAX_TENSORS = 64 };
typedef struct files {
    gw_tensor t[MAX_TENSORS];
    char name[MAX_TENSORS][48];
    void *data[MAX_TENSORS];
    size_t n;
} files;

// A tensor of n values (a matrix (rows, cols) when rows > 0), each
// base + uniform(a); matrices as Q8_0 when q8.
static void tensor(files *fs, const char *name, size_t rows, size_t cols,
                   float base, float a, int q8)
{
    size_t n = (rows ? rows : 1) * cols, i = fs->n++;
    float *x = malloc(n * sizeof *x);
    for (size_t j = 0; j < n; j++)
        x[j] = base + uniform(a);
    snprintf(fs->name[i], sizeof fs->name[i], "%s", name);
    gw_tensor *t = &fs->t[i];
    t->name = fs->name[i];
    t->n_dims = rows ? 2 : 1;
    t->ne[0] = cols;
    t->ne[1] = rows;
    t->type = GGML_F32;
    t->data = x;
    t->bytes = n * sizeof *x;
    fs->data[i] = x;
    if (!(q8 && rows))
        return;
    // ggml's quantize_row_q8_0_ref: d = amax / 127 (as f16), q = round(x/d)
    unsigned char *q = malloc(n / 32 * 34);
    for (size_t b = 0; b < n / 32; b++) {
        float amax = 0.0f, *v = x + 32 * b;
        for (int k = 0; k < 32; k++)
            amax = fabsf(v[k]) > amax ? fabsf(v[k]) : amax;
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t h = mhsa_f32_to_f16(d);
        q[34 * b] = (unsigned char)(h & 0xff);
        q[34 * b + 1] = (unsigned char)(h >> 8);
        for (int k = 0; k < 32; k++)
            q[34 * b + 2 + k] = (unsigned char)(int8_t)roundf(v[k] * id);
    }
    free(x);
    t->type = GGML_Q8_0;
    t->data = fs->data[i] = q;
    t->bytes = n / 32 * 34;
}

static void key_u32(gw *w, const char *k, uint32_t v)
{
    gw_key(w, k, GGUF_U32);
    gw_u32(w, v);
}

static void key_f32(gw *w, const char *k, float v)
{
    gw_key(w, k, GGUF_F32);
    gw_f32(w, v);
}

static void key_str(gw *w, const char *k, const char *v)
{
    gw_key(w, k, GGUF_STR);
    gw_str(w, v);
}

const char *family_name(family f)
{
    return f == FAMILY_QWEN2 ? "qwen2" : "llama3";
}

int family_write(family f, int q8, const char *path)
{
    return family_write_ex(f, q8, NULL, path);
}

int family_write_ex(family f, int q8, const char *chat_template,
                    const char *path)
{
    build_vocab();
    int qwen = f == FAMILY_QWEN2;
    const char *arch = qwen ? "qwen2" : "llama";
    size_t D = FAM_D, kvd = FAM_KV * (FAM_D / FAM_H), F = FAM_F, V = n_tok;
    files fs = {0};
    rng_state = qwen ? 0x9e3779b97f4a7c15ull : 0xd1b54a32d192ed03ull;
    tensor(&fs, "token_embd.weight", V, D, 0.0f, 1.0f, q8);
    tensor(&fs, "output_norm.weight", 0, D, 1.0f, 0.2f, 0);
    if (!qwen)
        tensor(&fs, "output.weight", V, D, 0.0f, 0.2f, q8);
    if (!qwen) {   // factors as Llama 3.1's: 1 for high frequencies, more
        tensor(&fs, "rope_freqs.weight", 0, FAM_D / FAM_H / 2, 1.0f, 0.0f,
               0);
        float *r = fs.data[fs.n - 1];
        static const float fac[8] = {1, 1, 1, 1.5f, 2.5f, 5, 8, 8};
        memcpy(r, fac, sizeof fac);
    }
    for (int l = 0; l < FAM_L; l++) {
        char n[48];
#define T(what, rows, cols, base, a, q)                                   \
        (snprintf(n, sizeof n, "blk.%d.%s", l, what),                    \
         tensor(&fs, n, rows, cols, base, a, q))
        T("attn_norm.weight", 0, D, 1.0f, 0.2f, 0);
        T("attn_q.weight", D, D, 0.0f, 0.25f, q8);
        T("attn_k.weight", kvd, D, 0.0f, 0.25f, q8);
        T("attn_v.weight", kvd, D, 0.0f, 0.25f, q8);
        T("attn_output.weight", D, D, 0.0f, 0.2f, q8);
        if (qwen) {
            T("attn_q.bias", 0, D, 0.0f, 0.5f, 0);
            T("attn_k.bias", 0, kvd, 0.0f, 0.5f, 0);
            T("attn_v.bias", 0, kvd, 0.0f, 0.5f, 0);
        }
        T("ffn_norm.weight", 0, D, 1.0f, 0.2f, 0);
        T("ffn_gate.weight", F, D, 0.0f, 0.2f, q8);
        T("ffn_up.weight", F, D, 0.0f, 0.2f, q8);
        T("ffn_down.weight", D, F, 0.0f, 0.15f, q8);
#undef T
    }
    gw w = {0};
    gw_header(&w, 3, fs.n, 0);
    uint64_t nkv = 0;
    char k[80];
#define KEY(what) (snprintf(k, sizeof k, "%s.%s", arch, what), nkv++, k)
    nkv++;
    key_str(&w, "general.architecture", arch);
    key_u32(&w, KEY("block_count"), FAM_L);
    key_u32(&w, KEY("context_length"), FAM_CTX);
    key_u32(&w, KEY("embedding_length"), FAM_D);
    key_u32(&w, KEY("feed_forward_length"), FAM_F);
    key_u32(&w, KEY("attention.head_count"), FAM_H);
    key_u32(&w, KEY("attention.head_count_kv"), FAM_KV);
    key_f32(&w, KEY("attention.layer_norm_rms_epsilon"), 1e-6f);
    key_f32(&w, KEY("rope.freq_base"), qwen ? 1e6f : 5e5f);
    key_u32(&w, KEY("rope.dimension_count"), FAM_D / FAM_H);
#undef KEY
    key_str(&w, "tokenizer.ggml.model", "gpt2");
    key_str(&w, "tokenizer.ggml.pre", qwen ? "qwen2" : "llama-bpe");
    gw_key(&w, "tokenizer.ggml.tokens", GGUF_ARR);
    gw_arr(&w, GGUF_STR, (uint64_t)n_tok);
    for (int i = 0; i < n_tok; i++)
        gw_str(&w, tok[i]);
    gw_key(&w, "tokenizer.ggml.token_type", GGUF_ARR);
    gw_arr(&w, GGUF_I32, (uint64_t)n_tok);
    for (int i = 0; i < n_tok; i++)
        gw_u32(&w, (uint32_t)tok_type[i]);
    gw_key(&w, "tokenizer.ggml.merges", GGUF_ARR);
    gw_arr(&w, GGUF_STR, (uint64_t)n_merge);
    for (int i = 0; i < n_merge; i++)
        gw_str(&w, merge[i]);
    key_u32(&w, "tokenizer.ggml.bos_token_id",
            (uint32_t)find_tok("<|begin_of_text|>"));
    key_u32(&w, "tokenizer.ggml.eos_token_id",
            (uint32_t)find_tok(qwen ? "<|im_end|>" : "<|end_of_text|>"));
    nkv += 7;
    if (chat_template) {
        key_str(&w, "tokenizer.chat_template", chat_template);
        nkv++;
    }
    gw_put_u64(&w, 16, nkv);
    gw_tensors(&w, fs.t, fs.n, 32);
    int rc = gw_save(&w, path);
    gw_free(&w);
    for (size_t i = 0; i < fs.n; i++)
        free(fs.data[i]);
    return rc;
}

const int32_t family_ids[FAMILY_N_IDS] = {
    256 + 34, 7, 100, 200, 65, 66, 255, 281, 3, 300,
};

const char *const family_texts[] = {
    "Hello world",
    "the quick brown fox's  tail",
    "1234567 12 1 0",
    "I'm, you're, we'll, they'VE, DON'T it's",
    "  leading spaces and trailing   ",
    "line one\n\nline two\r\n\tTabbed\n   \n x",
    "caf\xc3\xa9 \xc3\xbc" "ber \xe4\xb8\x96\xe7\x95\x8c na\xc3\xafve",
    "emoji \xf0\x9f\x99\x82 and ZWJ \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|>abc abc <tool>x",
    " abc ab bc abcd",
    "pi 3.14159, 2025-01-01, \xd9\xa1\xd9\xa2\xd9\xa3\xd9\xa4",
    "!!! ... ?!\n\n\n   \n x",
    "",
    "a\xc2\xa0" "b\xe3\x80\x80" "c \t\t d",
    "12345678901234567890",
};
const size_t family_n_texts = sizeof family_texts / sizeof *family_texts;

static char temp_paths[N_FAMILIES][2][2][512];   // [family][q8][template]

const char *family_temp_file(family f, int q8, const char *chat_template)
{
    char *p = temp_paths[f][q8 != 0][chat_template != NULL];
    if (!p[0]) {
        const char *d = getenv("TMPDIR");
        snprintf(p, sizeof temp_paths[0][0][0], "%s/mhsa-%s-q%d-t%d-%ld.gguf",
                 d && d[0] ? d : "/tmp", family_name(f), q8 != 0,
                 chat_template != NULL, (long)getpid());
        if (family_write_ex(f, q8, chat_template, p) != 0) {
            p[0] = '\0';
            return NULL;
        }
    }
    return p;
}

void family_temp_remove(void)
{
    for (int f = 0; f < N_FAMILIES; f++)
        for (int q = 0; q < 2; q++)
            for (int t = 0; t < 2; t++) {
                char *p = temp_paths[f][q][t];
                if (p[0]) {
                    unlink(p);
                    p[0] = '\0';
                }
            }
}
