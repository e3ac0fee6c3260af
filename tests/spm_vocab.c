// spm_vocab.c — the test SPM vocabulary (spm_vocab.h). Its pieces make the
// encoder's choices visible: merges by score with ties (ab, bc, cd score
// alike), pieces reached through others (hello through he, ll, llo),
// runs of spaces (▁▁, ▁▁▁▁), a composed é beside a bare combining acute,
// an emoji, and letters without a piece (their bytes go out as <0xXX>).
#include <stdio.h>
#include <string.h>

#include "gguf_writer.h"
#include "spm_vocab.h"

#define SP "\xe2\x96\x81"   // U+2581, SentencePiece's space

static const struct { const char *text; float score; } pieces[] = {
    {SP, -1.0f}, {"a", -2.0f}, {"b", -2.0f}, {"c", -2.0f}, {"d", -2.0f},
    {"e", -2.0f}, {"h", -2.0f}, {"l", -2.0f}, {"o", -2.0f}, {"r", -2.0f},
    {"w", -2.0f}, {"\xc3\xa9", -3.0f}, {"\xcc\x81", -3.0f},
    {"\xf0\x9f\x98\x80", -3.0f}, {"he", -5.0f}, {"ll", -5.0f},
    {"llo", -6.0f}, {"hello", -7.0f}, {SP "hello", -8.0f}, {SP "h", -9.0f},
    {SP "w", -9.0f}, {"or", -6.0f}, {"ld", -6.0f}, {"wor", -10.0f},
    {SP "wor", -10.0f}, {SP "world", -11.0f}, {SP SP, -4.0f},
    {SP SP SP SP, -4.5f}, {"ab", -5.0f}, {"bc", -5.0f}, {"cd", -5.0f},
    {"abc", -7.0f}, {SP "a", -6.0f}, {SP "\xf0\x9f\x98\x80", -8.0f},
    {"e\xcc\x81", -4.0f}, {SP "\xc3\xa9", -6.5f},
};
enum { N_PIECES = sizeof pieces / sizeof pieces[0] };
static const char *const tail[] = {"<user>", "<|im_start|>", "<|im_end|>"};
static const int tail_type[] = {4, 3, 3};   // user-defined, control

size_t spm_vocab_size(void) { return SPM_BYTE0 + 256 + N_PIECES + 3; }

int spm_vocab_save(const char *path, int prefix)
{
    size_t n = spm_vocab_size();
    gw w = {0};
    gw_header(&w, 3, 0, 10 + (prefix >= 0));
    gw_key(&w, "general.architecture", 8);
    gw_str(&w, "llama");
    gw_key(&w, "tokenizer.ggml.model", 8);
    gw_str(&w, "llama");
    gw_key(&w, "tokenizer.ggml.tokens", 9);
    gw_arr(&w, 8, n);
    gw_str(&w, "<unk>");
    gw_str(&w, "<s>");
    gw_str(&w, "</s>");
    for (int b = 0; b < 256; b++) {
        char x[8];
        snprintf(x, sizeof x, "<0x%02X>", b);
        gw_str(&w, x);
    }
    for (int i = 0; i < N_PIECES; i++)
        gw_str(&w, pieces[i].text);
    for (int i = 0; i < 3; i++)
        gw_str(&w, tail[i]);
    gw_key(&w, "tokenizer.ggml.scores", 9);
    gw_arr(&w, 6, n);
    for (size_t i = 0; i < n; i++) {
        size_t p = i - SPM_BYTE0 - 256;
        gw_f32(&w, i >= SPM_BYTE0 + 256 && p < N_PIECES ? pieces[p].score
                                                        : 0.0f);
    }
    gw_key(&w, "tokenizer.ggml.token_type", 9);
    gw_arr(&w, 5, n);
    for (size_t i = 0; i < n; i++)
        gw_u32(&w, i == SPM_UNK ? 2 : i < SPM_BYTE0 ? 3
                   : i < SPM_BYTE0 + 256 ? 6
                   : i < SPM_BYTE0 + 256 + N_PIECES ? 1
                   : (uint32_t)tail_type[i - SPM_BYTE0 - 256 - N_PIECES]);
    gw_key(&w, "tokenizer.ggml.bos_token_id", 4);
    gw_u32(&w, SPM_BOS);
    gw_key(&w, "tokenizer.ggml.eos_token_id", 4);
    gw_u32(&w, SPM_EOS);
    gw_key(&w, "tokenizer.ggml.unknown_token_id", 4);
    gw_u32(&w, SPM_UNK);
    gw_key(&w, "tokenizer.ggml.add_bos_token", 7);
    gw_u8(&w, 1);
    gw_key(&w, "tokenizer.ggml.add_eos_token", 7);
    gw_u8(&w, 0);
    if (prefix >= 0) {
        gw_key(&w, "tokenizer.ggml.add_space_prefix", 7);
        gw_u8(&w, (uint8_t)prefix);
    }
    int rc = gw_save(&w, path);
    gw_free(&w);
    return rc;
}

static int hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

size_t spm_unescape(const char *s, char *out)
{
    size_t n = 0;
    while (*s) {
        if (s[0] == '\\' && s[1] == 'x' && hex(s[2]) >= 0 && hex(s[3]) >= 0) {
            out[n++] = (char)(hex(s[2]) * 16 + hex(s[3]));
            s += 4;
        } else if (s[0] == '\\' && s[1] == 'n') {
            out[n++] = '\n';
            s += 2;
        } else if (s[0] == '\\' && s[1] == '\\') {
            out[n++] = '\\';
            s += 2;
        } else {
            out[n++] = *s++;
        }
    }
    return n;
}

void spm_escape(const char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)b[i];
        if (c < 0x20 || c > 0x7e || c == '\\' ||
            (c == ' ' && (i == 0 || i + 1 == n)))
            out += sprintf(out, "\\x%02x", c);
        else
            *out++ = (char)c;
    }
    *out = '\0';
}
