// test_tokenizer.c — the byte-level BPE tokenizer (src/models/tokenizer/): GPT-2's
// byte alphabet, the pre-tokenizer's pieces (GPT-2 and SmolLM, ASCII and
// beyond), BPE merges against results worked out by hand on a small
// vocabulary, BOS/EOS, exact round trips on awkward UTF-8 (emoji,
// combining marks, random bytes; invalid and truncated sequences refused
// at their first bad byte, or taken with MHSA_TOK_ALLOW_INVALID_UTF8), and the
// errors for unsupported or malformed tokenizers. The vocabularies are
// written as GGUF files with tests/gguf_writer.c.
//
// SentencePiece-style ("llama") vocabularies: the ids and decoded text of
// awkward strings on the vocabulary of tests/spm_vocab.c against those
// llama.cpp gives (tests/data/llama/spm_ids.txt, recorded with
// tools/llama-ref/make_spm_ids.sh), with and without the space prefix,
// special tokens parsed or not; round trips; byte fallback to unk.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "models/gguf/gguf.h"
#include "gguf_writer.h"
#include "models/tokenizer/pretok.h"
#include "models/tokenizer/tokenizer.h"
#include "models/tokenizer/unicode.h"
#include "spm_vocab.h"
#include "util.h"

// ---- the byte alphabet and the pre-tokenizer --------------------------------

// GPT-2's bytes_to_unicode(), written out the way its Python does it.
START_TEST(byte_alphabet_is_gpt2s)
{
    uint32_t want[256];
    int n = 0;
    for (int b = 0; b < 256; b++)
        want[b] = 0;
    for (int b = '!'; b <= '~'; b++)
        want[b] = (uint32_t)b;
    for (int b = 0xa1; b <= 0xac; b++)
        want[b] = (uint32_t)b;
    for (int b = 0xae; b <= 0xff; b++)
        want[b] = (uint32_t)b;
    for (int b = 0; b < 256; b++)
        if (!want[b])
            want[b] = 256u + (uint32_t)n++;
    ck_assert_int_eq(n, 68);
    for (int b = 0; b < 256; b++) {
        ck_assert_uint_eq(mhsa__byte_to_cp((unsigned char)b), want[b]);
        ck_assert_int_eq(mhsa__cp_to_byte(want[b]), b);
    }
    ck_assert_uint_eq(mhsa__byte_to_cp(' '), 0x120);    // 'Ġ'
    ck_assert_uint_eq(mhsa__byte_to_cp('\n'), 0x10a);   // 'Ċ'
    ck_assert_int_eq(mhsa__cp_to_byte(0x20), -1);
    ck_assert_int_eq(mhsa__cp_to_byte(256 + 68), -1);
}
END_TEST

START_TEST(utf8_decoding_is_strict)
{
    static const struct { const char *s; size_t len; uint32_t cp; } c[] = {
        {"A", 1, 'A'}, {"\xc3\xa9", 2, 0xe9}, {"\xe2\x82\xac", 3, 0x20ac},
        {"\xf0\x9f\x98\x80", 4, 0x1f600}, {"\xf4\x8f\xbf\xbf", 4, 0x10ffff},
        {"\x80", 1, MHSA_CP_INVALID},            // stray continuation
        {"\xc0\xaf", 1, MHSA_CP_INVALID},        // overlong '/'
        {"\xe0\x80\xaf", 1, MHSA_CP_INVALID},    // overlong, 3 bytes
        {"\xed\xa0\x80", 1, MHSA_CP_INVALID},    // surrogate D800
        {"\xf4\x90\x80\x80", 1, MHSA_CP_INVALID},   // past U+10FFFF
        {"\xe2\x82", 1, MHSA_CP_INVALID},        // truncated
        {"\xff", 1, MHSA_CP_INVALID},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint32_t cp;
        size_t n = mhsa__utf8_next((const unsigned char *)c[i].s,
                                   strlen(c[i].s), &cp);
        ck_assert_msg(n == c[i].len && cp == c[i].cp, "case %zu: %zu %x",
                      i, n, cp);
    }
    ck_assert_int_eq(mhsa__cp_class('a'), MHSA_CP_LETTER);
    ck_assert_int_eq(mhsa__cp_class(0x65e5), MHSA_CP_LETTER);   // 日
    ck_assert_int_eq(mhsa__cp_class(0x663), MHSA_CP_NUMBER);    // ٣
    ck_assert_int_eq(mhsa__cp_class(0xbd), MHSA_CP_NUMBER);     // ½
    ck_assert_int_eq(mhsa__cp_class(0x301), MHSA_CP_OTHER);     // a mark
    ck_assert_int_eq(mhsa__cp_class(0xa0), MHSA_CP_SPACE);
    ck_assert_int_eq(mhsa__cp_class(0x3000), MHSA_CP_SPACE);
    ck_assert_int_eq(mhsa__cp_class(0x1f600), MHSA_CP_OTHER);
    ck_assert_int_eq(mhsa__cp_class(MHSA_CP_INVALID), MHSA_CP_OTHER);
}
END_TEST

// Splits text and checks the pieces: want is the pieces joined by '|'.
static void check_split(mhsa_pretok kind, const char *text, const char *want)
{
    size_t n = strlen(text);
    size_t off[256], ends[256];
    uint32_t cps[256];
    unsigned char cls[256];
    ck_assert_uint_lt(n, 255);
    mhsa_pretok_scratch s = {off, cps, cls};
    size_t k = mhsa__pretok_split(kind, (const unsigned char *)text, n, &s,
                                  ends);
    char got[600];
    size_t g = 0;
    for (size_t i = 0, start = 0; i < k; start = ends[i++]) {
        if (i)
            got[g++] = '|';
        memcpy(got + g, text + start, ends[i] - start);
        g += ends[i] - start;
    }
    got[g] = '\0';
    ck_assert_msg(!strcmp(got, want), "%s split of \"%s\": \"%s\", "
                  "expected \"%s\"", kind ? "smollm" : "gpt-2", text, got,
                  want);
}

START_TEST(pretokenizer_pieces)
{
    const mhsa_pretok G = MHSA_PRETOK_GPT2, S = MHSA_PRETOK_SMOLLM;
    check_split(G, "Hello world", "Hello| world");
    check_split(G, "it's they're I'M", "it|'s| they|'re| I|'|M");
    check_split(G, "a  b", "a| | b");
    check_split(G, "a   \n", "a|   \n");
    check_split(G, "x\n\ny", "x|\n|\n|y");   // \n cannot lead a word
    check_split(G, "pay 1234 now!!", "pay| 1234| now|!!");
    check_split(S, "pay 1234 now!!", "pay| |1|2|3|4| now|!!");
    check_split(S, "v2.0", "v|2|.|0");
    check_split(G, " \xc3\x9cn\xc3\xaf""c\xc3\xb6""d\xc3\xa9 \xe6\x97\xa5"
                "\xe6\x9c\xac", " \xc3\x9cn\xc3\xaf""c\xc3\xb6""d\xc3\xa9| "
                "\xe6\x97\xa5\xe6\x9c\xac");
    // A combining mark is not a letter: it splits the word, as in GPT-2.
    check_split(G, "cafe\xcc\x81s", "cafe|\xcc\x81|s");
    check_split(G, "ok \xf0\x9f\x98\x80\xf0\x9f\x98\x80!",
                "ok| \xf0\x9f\x98\x80\xf0\x9f\x98\x80!");
    check_split(S, "\xd9\xa3\xc2\xbd", "\xd9\xa3|\xc2\xbd");   // ٣½
    // Only ' ' may lead a word; a no-break space stays a piece.
    check_split(G, "a\xc2\xa0\xc2\xa0" "b", "a|\xc2\xa0|\xc2\xa0|b");
    check_split(G, "ab\xff\xfe" "cd", "ab|\xff\xfe|cd");
    check_split(G, "'", "'");
    check_split(G, " ", " ");
}
END_TEST

// ---- a small vocabulary -----------------------------------------------------

static const char *const merged[] = {
    "he", "ll", "hell", "hello", "\xc4\xa0w", "or", "\xc4\xa0wor", "ld",
    "\xc4\xa0world", "'s", "aa", "bc", "cd",
};
static const char *const merges[] = {
    "h e", "l l", "he ll", "hell o", "\xc4\xa0 w", "o r", "\xc4\xa0w or",
    "l d", "\xc4\xa0wor ld", "' s", "a a", "b c", "c d",
    "x y",   // "xy" is no token
};
enum { N_MERGED = 13, N_MERGES = 14, ID_MERGED = 256,
       ID_BOS = ID_MERGED + N_MERGED, ID_EOS, ID_USER, N_VOCAB };

typedef struct vocab_opts {
    const char *model, *pre;
    int bos_id, add_bos;      // bos_id -1: no key
    int drop_byte;            // a byte without a token, or -1
    const char *bad_merge;    // replaces the last merge
    int types;                // 1: token_type array, 2: of the wrong size
} vocab_opts;

static vocab_opts std_opts(void)
{
    return (vocab_opts){"gpt2", "smollm", ID_BOS, 1, -1, NULL, 1};
}

static char tok_path[512];

// Writes the vocabulary as a GGUF file and loads its tokenizer.
static mhsa_status load(vocab_opts o, mhsa_tokenizer **t)
{
    gw w = {0};
    uint64_t nkv = 3 + (o.pre != NULL) + (o.bos_id >= 0) + 2 + (o.types > 0);
    gw_header(&w, 3, 0, nkv);
    gw_key(&w, "tokenizer.ggml.model", MHSA_GGUF_STRING);
    gw_str(&w, o.model);
    if (o.pre) {
        gw_key(&w, "tokenizer.ggml.pre", MHSA_GGUF_STRING);
        gw_str(&w, o.pre);
    }
    gw_key(&w, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
    gw_arr(&w, MHSA_GGUF_STRING, N_VOCAB);
    for (int b = 0; b < 256; b++) {
        unsigned char u[4];
        size_t n = mhsa__utf8_put(mhsa__byte_to_cp((unsigned char)b), u);
        if (b == o.drop_byte)
            gw_str(&w, "<dropped>");
        else
            gw_strn(&w, (const char *)u, n);
    }
    for (int i = 0; i < N_MERGED; i++)
        gw_str(&w, merged[i]);
    gw_str(&w, "<|endoftext|>");
    gw_str(&w, "<|im_end|>");
    gw_str(&w, "<user>");
    gw_key(&w, "tokenizer.ggml.merges", MHSA_GGUF_ARRAY);
    gw_arr(&w, MHSA_GGUF_STRING, N_MERGES);
    for (int i = 0; i < N_MERGES; i++)
        gw_str(&w, i == N_MERGES - 1 && o.bad_merge ? o.bad_merge
                                                    : merges[i]);
    if (o.types > 0) {
        gw_key(&w, "tokenizer.ggml.token_type", MHSA_GGUF_ARRAY);
        gw_arr(&w, MHSA_GGUF_INT32, N_VOCAB - (o.types == 2));
        for (int i = 0; i < N_VOCAB - (o.types == 2); i++)
            gw_u32(&w, i == ID_BOS || i == ID_EOS ? MHSA_TOKEN_CONTROL
                       : i == ID_USER ? MHSA_TOKEN_USER_DEFINED
                       : MHSA_TOKEN_NORMAL);
    }
    if (o.bos_id >= 0) {
        gw_key(&w, "tokenizer.ggml.bos_token_id", MHSA_GGUF_UINT32);
        gw_u32(&w, (uint32_t)o.bos_id);
    }
    gw_key(&w, "tokenizer.ggml.eos_token_id", MHSA_GGUF_UINT32);
    gw_u32(&w, ID_EOS);
    gw_key(&w, "tokenizer.ggml.add_bos_token", MHSA_GGUF_BOOL);
    gw_u8(&w, (uint8_t)o.add_bos);
    const char *d = getenv("TMPDIR");
    snprintf(tok_path, sizeof tok_path, "%s/mhsa-tok-%ld.gguf",
             d && d[0] ? d : "/tmp", (long)getpid());
    ck_assert_int_eq(gw_save(&w, tok_path), 0);
    gw_free(&w);
    mhsa_gguf_file *f;
    *t = NULL;
    mhsa_status s = mhsa__gguf_open(tok_path, &f);
    if (s != MHSA_OK) {   // only when alloc_failures makes it fail
        unlink(tok_path);
        return s;
    }
    s = mhsa__tok_load(f, t);
    mhsa__gguf_close(f);   // the tokenizer keeps its own copies
    unlink(tok_path);
    return s;
}

// Encodes text (no BOS) and compares the ids with want[0..n).
static void check_ids(const mhsa_tokenizer *t, const char *text,
                      const int32_t *want, size_t n)
{
    int32_t ids[64];
    size_t k;
    ck_assert_int_eq(mhsa__tok_encode(t, text, strlen(text), 0, ids, 64,
                                      &k), MHSA_OK);
    int same = k == n;
    for (size_t i = 0; same && i < n; i++)
        same = ids[i] == want[i];
    if (!same) {
        char got[256];
        size_t g = 0;
        for (size_t i = 0; i < k && g < 200; i++)
            g += (size_t)snprintf(got + g, sizeof got - g, " %d", ids[i]);
        got[g] = '\0';
        ck_abort_msg("\"%s\": ids%s", text, got);
    }
}

START_TEST(bpe_merges_by_rank)
{
    mhsa_tokenizer *t;
    ck_assert_int_eq(load(std_opts(), &t), MHSA_OK);
    ck_assert_uint_eq(mhsa__tok_vocab_size(t), N_VOCAB);
    const int32_t M = ID_MERGED;
    // h e l l o -> he l l o -> he ll o -> hell o -> hello; " world" the
    // same way through Ġw, or, Ġwor, ld, Ġworld.
    check_ids(t, "hello world", (int32_t[]){M + 3, M + 8}, 2);
    // Pieces bound the merges: "hel" and " lo" are encoded apart.
    check_ids(t, "hel lo", (int32_t[]){M + 0, 'l', ' ', 'l', 'o'}, 5);
    // "a a" merges leftmost first: aaa -> aa a, aaaa -> aa aa.
    check_ids(t, "aaa", (int32_t[]){M + 10, 'a'}, 2);
    check_ids(t, "aaaa", (int32_t[]){M + 10, M + 10}, 2);
    // The lower rank first: "b c" before "c d", wherever they stand.
    check_ids(t, "bcd", (int32_t[]){M + 11, 'd'}, 2);
    check_ids(t, "abcd", (int32_t[]){'a', M + 11, 'd'}, 3);
    // "x y" merges into a symbol that is no token: its bytes instead.
    check_ids(t, "xy", (int32_t[]){'x', 'y'}, 2);
    // The contraction piece "'s"; SmolLM's digits alone; a space before
    // digits stays a piece of its own.
    check_ids(t, "it's", (int32_t[]){'i', 't', M + 9}, 3);
    check_ids(t, "a 12", (int32_t[]){'a', ' ', '1', '2'}, 4);
    // Bytes outside ASCII: one byte token each (byte b is token b here).
    check_ids(t, "\xc3\xa9\xc3\xbf", (int32_t[]){0xc3, 0xa9, 0xc3, 0xbf},
              4);
    // BOS first when add_special and add_bos_token say so; no EOS.
    int32_t ids[16];
    size_t k;
    ck_assert_int_eq(mhsa__tok_encode(t, "hello", 5, 1, ids, 16, &k),
                     MHSA_OK);
    ck_assert_uint_eq(k, 2);
    ck_assert_int_eq(ids[0], ID_BOS);
    ck_assert_int_eq(ids[1], M + 3);
    ck_assert_int_eq(mhsa__tok_encode(t, "", 0, 1, ids, 16, &k), MHSA_OK);
    ck_assert_uint_eq(k, 1);
    ck_assert_int_eq(mhsa__tok_bos(t), ID_BOS);
    ck_assert_int_eq(mhsa__tok_eos(t), ID_EOS);
    ck_assert_int_eq(mhsa__tok_adds_bos(t), 1);
    ck_assert_int_eq(mhsa__tok_adds_eos(t), 0);
    ck_assert_str_eq(mhsa__tok_text(t, ID_EOS), "<|im_end|>");
    ck_assert_int_eq(mhsa__tok_type(t, ID_EOS), MHSA_TOKEN_CONTROL);
    ck_assert_ptr_null(mhsa__tok_text(t, N_VOCAB));
    mhsa__tok_free(t);
}
END_TEST

// GPT-2's pre-tokenizer keeps a space with the digits after it.
START_TEST(bpe_gpt2_pre)
{
    vocab_opts o = std_opts();
    o.pre = "gpt-2";
    mhsa_tokenizer *t;
    ck_assert_int_eq(load(o, &t), MHSA_OK);
    check_ids(t, "a 12", (int32_t[]){'a', ' ', '1', '2'}, 4);
    check_ids(t, "hello world", (int32_t[]){ID_MERGED + 3, ID_MERGED + 8},
              2);
    mhsa__tok_free(t);
}
END_TEST

// The offset of the first byte of x[0..n) that starts no well-formed
// UTF-8 sequence (the Unicode standard's table 3-7, written out here
// apart from unicode.c), or n when x is valid.
static size_t first_invalid_utf8(const unsigned char *x, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char b = x[i];
        size_t len = b <= 0x7f ? 1 : b >= 0xc2 && b <= 0xdf ? 2
                   : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4
                   : 0;
        if (len == 0 || i + len > n)
            return i;
        // The second byte's range depends on the first; the rest are
        // 80..BF.
        unsigned char lo = b == 0xe0 ? 0xa0 : b == 0xf0 ? 0x90 : 0x80;
        unsigned char hi = b == 0xed ? 0x9f : b == 0xf4 ? 0x8f : 0xbf;
        if (len > 1 && (x[i + 1] < lo || x[i + 1] > hi))
            return i;
        for (size_t j = 2; j < len; j++)
            if (x[i + j] < 0x80 || x[i + j] > 0xbf)
                return i;
        i += len;
    }
    return n;
}

// decode(encode(x)) == x, byte for byte, for both pre-tokenizers, when x
// is valid UTF-8; else the encoding is refused (MHSA_ERR_INVALID_ARG
// naming the first bad byte's offset and value, nothing written), and
// round-trips with MHSA_TOK_ALLOW_INVALID_UTF8.
static void round_trip(const mhsa_tokenizer *t, const char *x, size_t n)
{
    int32_t *ids = malloc((n + 2) * sizeof *ids);
    char *back = malloc(n + 1);
    size_t k = 12345, len;
    size_t bad = first_invalid_utf8((const unsigned char *)x, n);
    unsigned flags = 1;
    if (bad < n) {
        ids[0] = -7;
        ck_assert_int_eq(mhsa__tok_encode(t, x, n, 1, ids, n + 2, &k),
                         MHSA_ERR_INVALID_ARG);
        ck_assert(k == 12345 && ids[0] == -7);
        char want[64];
        snprintf(want, sizeof want, "byte offset %zu (0x%02x)", bad,
                 (unsigned char)x[bad]);
        ck_assert_msg(strstr(mhsa_last_error(), want) &&
                      strstr(mhsa_last_error(), "not valid UTF-8"),
                      "'%s' not in: %s", want, mhsa_last_error());
        flags |= MHSA_TOK_ALLOW_INVALID_UTF8;
    }
    ck_assert_int_eq(mhsa__tok_encode(t, x, n, flags, ids, n + 2, &k),
                     MHSA_OK);
    ck_assert_int_eq(mhsa__tok_decode(t, ids, k, 0, back, n + 1, &len),
                     MHSA_OK);
    ck_assert_msg(len == n && !memcmp(back, x, n),
                  "round trip of %zu bytes gave %zu", n, len);
    free(ids);
    free(back);
}

START_TEST(round_trips_awkward_utf8)
{
    static const char *const texts[] = {
        "hello world", "  leading and trailing  ", "\n\n\t tabs\r\n",
        "emoji \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd family "
        "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f"
        "\x91\xa7",
        "combining: e\xcc\x81 a\xcc\x8a\xcc\x81 \xe0\xa4\xa8\xe0\xa4\xbf",
        "CJK \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e, Arabic \xd9\xa3\xd9\xa4",
        "invalid \xff\xfe \x80 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 end",
        "truncated at the end \xe2\x82",
        "it's we'll they've I'D 2024-12-01 3.14159",
        "nbsp\xc2\xa0here\xe3\x80\x80ideographic space",
    };
    vocab_opts o = std_opts();
    for (int pre = 0; pre < 2; pre++) {
        o.pre = pre ? "gpt-2" : "smollm";
        mhsa_tokenizer *t;
        ck_assert_int_eq(load(o, &t), MHSA_OK);
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
            round_trip(t, texts[i], strlen(texts[i]));
        round_trip(t, "nul\0inside", 10);
        // Each kind of bad byte alone: refused at its offset.
        static const char *const bad[] = {
            "\x80", "x\xbf", "\xc0\xaf", "\xc1\x81", "\xe0\x80\xaf",
            "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x8f\xbf\xbf",
            "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xfe", "\xff",
            "ab\xe2\x82", "\xf0\x9f\x98", "\xc3(",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            size_t n = strlen(bad[i]);
            ck_assert_uint_lt(first_invalid_utf8((const unsigned char *)
                                                 bad[i], n), n);
            round_trip(t, bad[i], n);
        }
        rng r = {99};
        char buf[300];
        for (int i = 0; i < 500; i++) {
            size_t n = (size_t)rng_int(&r, 0, 299);
            // Mostly ASCII with some high bytes: spaces, digits, quotes
            // and broken sequences all turn up.
            for (size_t j = 0; j < n; j++) {
                uint64_t v = rng_u64(&r);
                buf[j] = (char)(v % 4 ? " 0a'\n\xc3\xa9\xe2"[v / 4 % 8]
                                      : (char)(v >> 8));
            }
            round_trip(t, buf, n);
            // The same, valid: each byte of a broken sequence replaced by
            // U+FFFD (so both outcomes are exercised at every length).
            char ok[900];
            size_t m = 0;
            for (size_t j = 0; j < n;) {
                size_t at = first_invalid_utf8((const unsigned char *)buf +
                                               j, n - j);
                memcpy(ok + m, buf + j, at);
                m += at;
                j += at;
                if (j < n) {
                    memcpy(ok + m, "\xef\xbf\xbd", 3);
                    m += 3;
                    j++;
                }
            }
            ck_assert_uint_eq(first_invalid_utf8((const unsigned char *)ok,
                                                 m), m);
            round_trip(t, ok, m);
        }
        mhsa__tok_free(t);
    }
}
END_TEST

START_TEST(decode_specials_and_errors)
{
    mhsa_tokenizer *t;
    ck_assert_int_eq(load(std_opts(), &t), MHSA_OK);
    int32_t ids[] = {ID_BOS, ID_MERGED + 3, ID_USER, ' ', ID_EOS};
    char buf[64];
    size_t len;
    ck_assert_int_eq(mhsa__tok_decode(t, ids, 5, 0, buf, sizeof buf, &len),
                     MHSA_OK);
    ck_assert_uint_eq(len, 12);
    ck_assert(!memcmp(buf, "hello<user> ", len));
    ck_assert_int_eq(mhsa__tok_decode(t, ids, 5, 1, buf, sizeof buf, &len),
                     MHSA_OK);
    ck_assert(len == 35 && !memcmp(buf, "<|endoftext|>hello<user> "
                                   "<|im_end|>", len));
    ck_assert_int_eq(mhsa__tok_decode(t, ids, 5, 1, buf, 10, &len),
                     MHSA_ERR_SHAPE);
    ck_assert_uint_eq(len, 35);
    ck_assert(!memcmp(buf, "<|endofte", 9));
    int32_t bad = N_VOCAB;
    ck_assert_int_eq(mhsa__tok_decode(t, &bad, 1, 0, buf, sizeof buf, &len),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "not in the vocab"));
    size_t k;
    ck_assert_int_eq(mhsa__tok_encode(t, "hello", 5, 0, ids, 6, &k),
                     MHSA_ERR_INVALID_ARG);
    mhsa__tok_free(t);
}
END_TEST

// Loads with one thing changed and expects status s with `needle` in the
// message.
static void expect_refused(vocab_opts o, mhsa_status s, const char *needle)
{
    mhsa_tokenizer *t = NULL;
    mhsa_status got = load(o, &t);
    ck_assert_msg(got == s && strstr(mhsa_last_error(), needle),
                  "expected %s with '%s', got %s: %s", mhsa_status_str(s),
                  needle, mhsa_status_str(got), mhsa_last_error());
    ck_assert_ptr_null(t);
}

// A vocabulary without a byte's token (SmolLM2's has none for most
// control bytes) still loads: that byte, where no merge covers it, is left
// out of the ids, as llama.cpp leaves it out; the rest encodes as usual.
START_TEST(missing_byte_token_is_dropped)
{
    vocab_opts o = std_opts();
    o.drop_byte = 0x0a;
    mhsa_tokenizer *t = NULL;
    ck_assert_int_eq(load(o, &t), MHSA_OK);
    int32_t ids[16], ids_ab[16];
    size_t n = 0, n_ab = 0;   // "a\nb" encodes as "ab" does
    ck_assert_int_eq(mhsa__tok_encode(t, "a\nb", 3, 0, ids, 16, &n),
                     MHSA_OK);
    ck_assert_int_eq(mhsa__tok_encode(t, "ab", 2, 0, ids_ab, 16, &n_ab),
                     MHSA_OK);
    ck_assert_uint_eq(n, n_ab);   // the newline has no token
    ck_assert(!memcmp(ids, ids_ab, n * sizeof ids[0]));
    char buf[16];
    size_t len = 0;
    ck_assert_int_eq(mhsa__tok_decode(t, ids, n, 0, buf, sizeof buf, &len),
                     MHSA_OK);
    ck_assert(len == 2 && !memcmp(buf, "ab", 2));
    mhsa__tok_free(t);
}
END_TEST

START_TEST(load_errors)
{
    vocab_opts o = std_opts();
    o.model = "bert";
    expect_refused(o, MHSA_ERR_UNSUPPORTED, "tokenizer.ggml.model is "
                   "'bert': only 'gpt2' (byte-level BPE) and 'llama' "
                   "(SentencePiece) are supported");
    o = std_opts();
    o.pre = "falcon";
    expect_refused(o, MHSA_ERR_UNSUPPORTED, "tokenizer.ggml.pre is "
                   "'falcon': only 'gpt-2', 'smollm'");
    o.pre = NULL;
    expect_refused(o, MHSA_ERR_FORMAT, "key 'tokenizer.ggml.pre' not found");
    o = std_opts();
    o.bos_id = N_VOCAB;
    expect_refused(o, MHSA_ERR_FORMAT, "key 'tokenizer.ggml.bos_token_id': "
                   "token 272 is past the vocabulary");
    o = std_opts();
    o.bos_id = -1;
    expect_refused(o, MHSA_ERR_FORMAT, "add_bos_token is set but the file "
                   "has no bos_token_id");
    o = std_opts();
    o = std_opts();
    o.bad_merge = "xy";
    expect_refused(o, MHSA_ERR_FORMAT, "merge 13 ('xy') is not 'left "
                   "right'");
    o.bad_merge = " x";
    expect_refused(o, MHSA_ERR_FORMAT, "merge 13 (' x')");
    o = std_opts();
    o.types = 2;
    expect_refused(o, MHSA_ERR_FORMAT, "key 'tokenizer.ggml.token_type': "
                   "must be an array of 272 i32");
}
END_TEST

// Every allocation of a load and an encode fails in turn: NO_MEMORY.
START_TEST(alloc_failures)
{
    mhsa_tokenizer *t;
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(load(std_opts(), &t), MHSA_OK);
    size_t n = mhsa__alloc_fail_at(0);
    mhsa__tok_free(t);
    // load() opens the file first (its allocations are counted too).
    for (size_t i = 1; i <= n; i++) {
        mhsa__alloc_fail_at(i);
        mhsa_status s = load(std_opts(), &t);
        mhsa__alloc_fail_at(0);
        ck_assert_int_eq(s, MHSA_ERR_NO_MEMORY);
        ck_assert_ptr_null(t);
    }
    ck_assert_int_eq(load(std_opts(), &t), MHSA_OK);
    int32_t ids[16];
    size_t k;
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa__tok_encode(t, "hello", 5, 0, ids, 16, &k),
                     MHSA_OK);
    n = mhsa__alloc_fail_at(0);
    ck_assert_uint_ge(n, 1);
    for (size_t i = 1; i <= n; i++) {
        mhsa__alloc_fail_at(i);
        ck_assert_int_eq(mhsa__tok_encode(t, "hello", 5, 0, ids, 16, &k),
                         MHSA_ERR_NO_MEMORY);
    }
    mhsa__alloc_fail_at(0);
    mhsa__tok_free(t);
}
END_TEST

// ---- SentencePiece-style vocabularies ----------------------------------------

static mhsa_status load_spm(int prefix, mhsa_tokenizer **t)
{
    const char *d = getenv("TMPDIR");
    snprintf(tok_path, sizeof tok_path, "%s/mhsa-spm-%ld.gguf",
             d && d[0] ? d : "/tmp", (long)getpid());
    ck_assert_int_eq(spm_vocab_save(tok_path, prefix), 0);
    mhsa_gguf_file *f;
    *t = NULL;
    mhsa_status s = mhsa__gguf_open(tok_path, &f);
    if (s == MHSA_OK) {
        s = mhsa__tok_load(f, t);
        mhsa__gguf_close(f);
    }
    unlink(tok_path);
    return s;
}

// "label: 1 2 3" into ids; returns the count.
static size_t parse_ids(const char *line, const char *label, int32_t *ids,
                        size_t cap)
{
    size_t ll = strlen(label), n = 0;
    ck_assert_msg(!strncmp(line, label, ll), "expected '%s', got '%s'",
                  label, line);
    const char *p = line + ll;
    char *end;
    for (long v; (v = strtol(p, &end, 10)), end != p; p = end) {
        ck_assert_uint_lt(n, cap);
        ids[n++] = (int32_t)v;
    }
    return n;
}

static void expect_ids(const char *what, const char *text,
                       const int32_t *got, size_t n, const int32_t *want,
                       size_t m)
{
    int same = n == m;
    for (size_t i = 0; same && i < n; i++)
        same = got[i] == want[i];
    if (!same) {
        char g[512];
        size_t k = 0;
        for (size_t i = 0; i < n && k < 480; i++)
            k += (size_t)snprintf(g + k, sizeof g - k, " %d", got[i]);
        g[k] = '\0';
        ck_abort_msg("case '%s' %s: got%s (%zu ids, want %zu)", text, what,
                     g, n, m);
    }
}

static void expect_text(const char *what, const char *text,
                        const mhsa_tokenizer *t, const int32_t *ids,
                        size_t n, unsigned flags, const char *want_esc)
{
    static char buf[8192], got[4 * 8192 + 1];
    size_t len;
    ck_assert_int_eq(mhsa__tok_decode(t, ids, n, flags, buf, sizeof buf,
                                      &len), MHSA_OK);
    spm_escape(buf, len, got);
    ck_assert_msg(!strcmp(got, want_esc), "case '%s' %s: got '%s', want "
                  "'%s'", text, what, got, want_esc);
}

static char *next_line(FILE *f, char *line, size_t cap)
{
    if (!fgets(line, (int)cap, f))
        return NULL;
    line[strcspn(line, "\n")] = '\0';
    return line;
}

START_TEST(spm_matches_llama_cpp)
{
    FILE *f = fopen(data_path("llama/spm_ids.txt"), "r");
    ck_assert_msg(f != NULL, "%s", data_path("llama/spm_ids.txt"));
    static char line[8192], esc[8192], dec[8192], spec[8192], text[8192];
    static int32_t want[4096], want_plain[4096], got[4096];
    mhsa_tokenizer *t = NULL;
    int cases = 0, vocabs = 0;
    while (next_line(f, line, sizeof line)) {
        int prefix;
        if (sscanf(line, "vocab: add_space_prefix %d", &prefix) == 1) {
            mhsa__tok_free(t);
            ck_assert_int_eq(load_spm(prefix, &t), MHSA_OK);
            ck_assert(mhsa__tok_is_spm(t) && mhsa__tok_adds_bos(t));
            ck_assert_int_eq(mhsa__tok_bos(t), SPM_BOS);
            vocabs++;
            continue;
        }
        if (strncmp(line, "case:", 5))
            continue;
        ck_assert_ptr_nonnull(t);
        snprintf(esc, sizeof esc, "%s", line[5] ? line + 6 : "");
        size_t n = spm_unescape(esc, text);
        ck_assert(next_line(f, line, sizeof line));
        size_t nw = parse_ids(line, "ids:", want, 4096);
        ck_assert(next_line(f, line, sizeof line));
        size_t np = parse_ids(line, "plain:", want_plain, 4096);
        ck_assert(next_line(f, dec, sizeof dec) &&
                  !strncmp(dec, "decoded:", 8));
        ck_assert(next_line(f, spec, sizeof spec) &&
                  !strncmp(spec, "special:", 8));
        size_t k;
        ck_assert_uint_le(mhsa__tok_max_ids(t, n), 4096);
        // The reference has invalid UTF-8 too, as llama.cpp encodes it.
        ck_assert_int_eq(mhsa__tok_encode(t, text, n, MHSA_TOK_ADD_SPECIAL |
                                          MHSA_TOK_PARSE_SPECIAL |
                                          MHSA_TOK_ALLOW_INVALID_UTF8, got,
                                          mhsa__tok_max_ids(t, n), &k),
                         MHSA_OK);
        expect_ids("ids", esc, got, k, want, nw);
        ck_assert_int_eq(mhsa__tok_encode(t, text, n,
                                          MHSA_TOK_ALLOW_INVALID_UTF8, got,
                                          mhsa__tok_max_ids(t, n), &k),
                         MHSA_OK);
        expect_ids("plain", esc, got, k, want_plain, np);
        expect_text("decoded", esc, t, want_plain, np, MHSA_TOK_STRIP_SPACE,
                    dec[8] ? dec + 9 : "");
        expect_text("special", esc, t, want, nw, MHSA_TOK_STRIP_SPACE |
                    MHSA_TOK_DECODE_SPECIAL, spec[8] ? spec + 9 : "");
        cases++;
    }
    fclose(f);
    mhsa__tok_free(t);
    ck_assert_int_eq(vocabs, 2);
    ck_assert_int_ge(cases, 2 * 25);
}
END_TEST

// Valid UTF-8 (random code points of every length, spaces, and, without
// the space prefix, the vocabulary's special texts) decodes back to itself
// exactly, with and without the space prefix (dropped by
// MHSA_TOK_STRIP_SPACE; a text after a special token gets a space prefix
// of its own, which stays, as in llama.cpp: see the reference). Invalid
// bytes are left to the reference above: a lead byte takes its followers
// into one symbol, so an escaped space after it comes back as "▁", as in
// llama.cpp.
START_TEST(spm_round_trips)
{
    static const uint32_t pool[] = {' ', ' ', 'a', 'b', 'h', 'e', 'l', 'o',
                                    'q', '\n', 0xe9, 0x301, 0x20ac,
                                    0x1f600, 0x10ffff, 0x7f, 0};
    static const char *const words[] = {"<user>", "<s>", "<|im_end|>"};
    rng g = {7};
    for (int prefix = 0; prefix <= 1; prefix++) {
        mhsa_tokenizer *t;
        ck_assert_int_eq(load_spm(prefix, &t), MHSA_OK);
        for (int trial = 0; trial < 200; trial++) {
            char x[256], back[1024];
            size_t n = 0;
            size_t len = (size_t)(rng_u64(&g) % 40);
            while (n + 12 < sizeof x && len--) {
                uint64_t r = rng_u64(&g);
                if (r % 9 == 0 && !prefix) {
                    const char *w = words[(r >> 8) % 3];
                    memcpy(x + n, w, strlen(w));
                    n += strlen(w);
                } else {
                    n += mhsa__utf8_put(pool[(r >> 8) % 17],
                                        (unsigned char *)x + n);
                }
            }
            int32_t ids[1200];
            size_t k, blen;
            ck_assert_uint_le(mhsa__tok_max_ids(t, n), 1200);
            ck_assert_int_eq(mhsa__tok_encode(t, x, n, 0, ids,
                                              mhsa__tok_max_ids(t, n), &k),
                             MHSA_OK);
            ck_assert_int_eq(mhsa__tok_decode(t, ids, k,
                                              MHSA_TOK_STRIP_SPACE, back,
                                              sizeof back, &blen), MHSA_OK);
            if (blen != n || memcmp(back, x, n)) {
                char ex[1024], eb[4096];
                spm_escape(x, n, ex);
                spm_escape(back, blen, eb);
                ck_abort_msg("prefix %d trial %d: '%s' came back as '%s'",
                             prefix, trial, ex, eb);
            }
        }
        mhsa__tok_free(t);
    }
}
END_TEST

// A vocabulary without byte tokens: a character without a piece is unk
// (where llama.cpp's byte_to_token would throw), or left out without unk.
START_TEST(spm_unknown_bytes)
{
    for (int with_unk = 0; with_unk <= 1; with_unk++) {
        gw w = {0};
        gw_header(&w, 3, 0, 3 + with_unk);
        gw_key(&w, "tokenizer.ggml.model", MHSA_GGUF_STRING);
        gw_str(&w, "llama");
        gw_key(&w, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
        gw_arr(&w, MHSA_GGUF_STRING, 6);
        gw_str(&w, "x");   // not an unk (id 0 is unk only by default)
        gw_str(&w, "<s>");
        gw_str(&w, "</s>");
        gw_str(&w, "\xe2\x96\x81");
        gw_str(&w, "a");
        gw_str(&w, "<unk>");
        gw_key(&w, "tokenizer.ggml.add_bos_token", MHSA_GGUF_BOOL);
        gw_u8(&w, 0);
        if (with_unk) {
            gw_key(&w, "tokenizer.ggml.unknown_token_id", MHSA_GGUF_UINT32);
            gw_u32(&w, 5);
        }
        snprintf(tok_path, sizeof tok_path, "%s/mhsa-spm-unk-%ld.gguf",
                 getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR")
                                                         : "/tmp",
                 (long)getpid());
        ck_assert_int_eq(gw_save(&w, tok_path), 0);
        gw_free(&w);
        mhsa_gguf_file *f;
        mhsa_tokenizer *t;
        ck_assert_int_eq(mhsa__gguf_open(tok_path, &f), MHSA_OK);
        ck_assert_int_eq(mhsa__tok_load(f, &t), MHSA_OK);
        mhsa__gguf_close(f);
        unlink(tok_path);
        // Without the key unk is id 0 ("x"), as llama.cpp's default.
        int32_t unk = with_unk ? 5 : 0;
        int32_t ids[64];
        size_t k;
        ck_assert_int_eq(mhsa__tok_encode(t, "ab\xc3\xa9 a", 6, 1, ids, 64,
                                          &k), MHSA_OK);
        // "é" is one symbol of two bytes, each without a token: unk twice.
        int32_t want2[] = {3, 4, unk, unk, unk, 3, 4};
        expect_ids("unk", "ab\xc3\xa9 a", ids, k, want2, 7);
        mhsa__tok_free(t);
    }
}
END_TEST

// SPM loading errors, each naming the key.
START_TEST(spm_load_errors)
{
    static const struct { int what; const char *needle; } c[] = {
        {0, "token 3 ('<0xZZ>') is of type byte but not '<0xXX>'"},
        {1, "key 'tokenizer.ggml.scores': token 1's score is NaN"},
        {2, "key 'tokenizer.ggml.scores': must be an array of 4 f32"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        gw w = {0};
        gw_header(&w, 3, 0, 4);
        gw_key(&w, "tokenizer.ggml.model", MHSA_GGUF_STRING);
        gw_str(&w, "llama");
        gw_key(&w, "tokenizer.ggml.tokens", MHSA_GGUF_ARRAY);
        gw_arr(&w, MHSA_GGUF_STRING, 4);
        gw_str(&w, "<unk>");
        gw_str(&w, "<s>");
        gw_str(&w, "</s>");
        gw_str(&w, "<0xZZ>");
        gw_key(&w, "tokenizer.ggml.token_type", MHSA_GGUF_ARRAY);
        gw_arr(&w, MHSA_GGUF_INT32, 4);
        for (int j = 0; j < 4; j++)
            gw_u32(&w, j == 3 && c[i].what == 0 ? MHSA_TOKEN_BYTE
                                                : MHSA_TOKEN_NORMAL);
        gw_key(&w, "tokenizer.ggml.scores", MHSA_GGUF_ARRAY);
        gw_arr(&w, MHSA_GGUF_FLOAT32, c[i].what == 2 ? 3 : 4);
        for (int j = 0; j < (c[i].what == 2 ? 3 : 4); j++)
            gw_f32(&w, j == 1 && c[i].what == 1 ? NAN : -1.0f);
        snprintf(tok_path, sizeof tok_path, "%s/mhsa-spm-err-%ld.gguf",
                 getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR")
                                                         : "/tmp",
                 (long)getpid());
        ck_assert_int_eq(gw_save(&w, tok_path), 0);
        gw_free(&w);
        mhsa_gguf_file *f;
        mhsa_tokenizer *t = NULL;
        ck_assert_int_eq(mhsa__gguf_open(tok_path, &f), MHSA_OK);
        mhsa_status s = mhsa__tok_load(f, &t);
        mhsa__gguf_close(f);
        unlink(tok_path);
        ck_assert_msg(s == MHSA_ERR_FORMAT && strstr(mhsa_last_error(),
                                                     c[i].needle),
                      "case %zu: %s: %s", i, mhsa_status_str(s),
                      mhsa_last_error());
        ck_assert_ptr_null(t);
    }
}
END_TEST

// BPE with special tokens in the text: control ones only when parsed,
// user-defined ones always (llama.cpp's tokenizer_st_partition); the
// end-of-generation set.
START_TEST(bpe_special_tokens)
{
    mhsa_tokenizer *t;
    ck_assert_int_eq(load(std_opts(), &t), MHSA_OK);
    int32_t ids[64];
    size_t k;
    const char *x = "<|im_end|>hello<user>hello";
    ck_assert_int_eq(mhsa__tok_encode(t, x, strlen(x), MHSA_TOK_PARSE_SPECIAL,
                                      ids, 64, &k), MHSA_OK);
    int32_t want[] = {ID_EOS, ID_MERGED + 3, ID_USER, ID_MERGED + 3};
    expect_ids("parsed", x, ids, k, want, 4);
    ck_assert_int_eq(mhsa__tok_encode(t, x, strlen(x), 0, ids, 64, &k),
                     MHSA_OK);
    ck_assert_int_eq(ids[k - 2], ID_USER);   // user-defined: always
    ck_assert_int_gt(k, 4);                  // "<|im_end|>" as text
    ck_assert(mhsa__tok_is_eog(t, ID_EOS) && mhsa__tok_is_eog(t, ID_BOS));
    ck_assert(!mhsa__tok_is_eog(t, ID_USER));   // <|endoftext|>: by text
    mhsa__tok_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tu = tcase_create("unicode");
    tcase_add_test(tu, byte_alphabet_is_gpt2s);
    tcase_add_test(tu, utf8_decoding_is_strict);
    tcase_add_test(tu, pretokenizer_pieces);
    suite_add_tcase(s, tu);
    TCase *tb = tcase_create("bpe");
    tcase_add_test(tb, bpe_merges_by_rank);
    tcase_add_test(tb, bpe_gpt2_pre);
    tcase_add_test(tb, round_trips_awkward_utf8);
    tcase_add_test(tb, decode_specials_and_errors);
    tcase_add_test(tb, load_errors);
    tcase_add_test(tb, missing_byte_token_is_dropped);
    tcase_add_test(tb, alloc_failures);
    tcase_add_test(tb, bpe_special_tokens);
    suite_add_tcase(s, tb);
    TCase *ts = tcase_create("spm");
    tcase_add_test(ts, spm_matches_llama_cpp);
    tcase_add_test(ts, spm_round_trips);
    tcase_add_test(ts, spm_unknown_bytes);
    tcase_add_test(ts, spm_load_errors);
    suite_add_tcase(s, ts);
    return s;
}

int main(void) { return run_suite(suite()); }
