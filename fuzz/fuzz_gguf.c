// fuzz_gguf.c — libFuzzer target: arbitrary bytes as a GGUF file, through
// mhsa__gguf_open and then every accessor on everything it accepted: each
// key's value (numbers, strings, arrays and arrays of arrays, element by
// element), the typed getters on the keys a llama loader asks for, and
// every tensor read as fp32 at its own shape. A file that opens must keep
// the reader's promises (tensors inside the file, strings as long as they
// say); a tokenizer it loads must give a text back byte for byte; nothing
// may crash, leak or read outside the file's bytes.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/gguf/gguf.h"
#include "models/tokenizer/tokenizer.h"
#include "mhsa.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static char path[256];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/mhsa_fuzz_gguf_%ld.gguf",
             dir && *dir ? dir : "/tmp", (long)getpid());
    return 0;
}

// Every element of v through the accessor its type calls for, and the
// wrong accessors too (which must refuse, not crash).
static void walk(const mhsa_gguf_val *v, size_t size, int depth)
{
    CHECK(depth <= 10);
    mhsa_gguf_num n;
    const char *s;
    size_t len;
    const mhsa_gguf_val *sub;
    int type = mhsa__gguf_val_type(v);
    if (type == MHSA_GGUF_STRING) {
        CHECK(mhsa__gguf_val_str(v, &s, &len) == MHSA_OK);
        CHECK(len <= size && strlen(s) <= len && s[len] == '\0');
        CHECK(mhsa__gguf_val_num(v, &n) == MHSA_ERR_FORMAT);
        return;
    }
    if (type != MHSA_GGUF_ARRAY) {
        CHECK(mhsa__gguf_val_num(v, &n) == MHSA_OK);
        CHECK(mhsa__gguf_val_str(v, &s, &len) == MHSA_ERR_FORMAT);
        return;
    }
    uint64_t count = mhsa__gguf_arr_count(v);
    int elem = mhsa__gguf_arr_type(v);
    CHECK(count <= size);
    for (uint64_t i = 0; i <= count; i++) {   // one past the end too
        mhsa_status want = i < count ? MHSA_OK : MHSA_ERR_FORMAT;
        if (elem == MHSA_GGUF_STRING) {
            CHECK(mhsa__gguf_arr_str(v, i, &s, &len) == want);
            CHECK(want != MHSA_OK || (len <= size && s[len] == '\0'));
            CHECK(mhsa__gguf_arr_num(v, i, &n) == MHSA_ERR_FORMAT);
        } else if (elem == MHSA_GGUF_ARRAY) {
            CHECK(mhsa__gguf_arr_arr(v, i, &sub) == want);
            if (want == MHSA_OK)
                walk(sub, size, depth + 1);
        } else {
            CHECK(mhsa__gguf_arr_num(v, i, &n) == want);
            CHECK(mhsa__gguf_arr_str(v, i, &s, &len) == MHSA_ERR_FORMAT);
        }
    }
}

static void getters(const mhsa_gguf_file *f)
{
    static const char *const keys[] = {
        "general.architecture", "general.alignment", "llama.block_count",
        "tokenizer.ggml.tokens", "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.add_bos_token", "llama.rope.freq_base",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *s;
        size_t len;
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        float f32;
        int b;
        const mhsa_gguf_val *a;
        mhsa_status st[] = {
            mhsa__gguf_get_str(f, keys[i], &s, &len),
            mhsa__gguf_get_u32(f, keys[i], &u32),
            mhsa__gguf_get_i32(f, keys[i], &i32),
            mhsa__gguf_get_u64(f, keys[i], &u64),
            mhsa__gguf_get_f32(f, keys[i], &f32),
            mhsa__gguf_get_bool(f, keys[i], &b),
            mhsa__gguf_get_arr(f, keys[i], &a),
        };
        int ok = 0;
        for (size_t k = 0; k < sizeof st / sizeof st[0]; k++) {
            CHECK(st[k] == MHSA_OK || st[k] == MHSA_ERR_FORMAT);
            ok += st[k] == MHSA_OK;
        }
        // At most one type fits; exactly one if the key is there (and is
        // of a type with a getter).
        CHECK(ok <= 1);
        CHECK(mhsa__gguf_find(f, keys[i]) || ok == 0);
    }
}

// The file's tokenizer, if it has one that loads: a text with a bit of
// everything (digits, contractions, emoji, a combining mark, invalid
// bytes, a special token's text) is refused as not UTF-8, and encodes with
// MHSA_TOK_ALLOW_INVALID_UTF8, with and without parsing special tokens,
// within mhsa__tok_max_ids; a BPE one decodes back to the text,
// less the bytes its vocabulary has no token for (an SPM one may give unk
// tokens' text instead, so only its bounds are checked).
static void tokenizer(const mhsa_gguf_file *f)
{
    static const char text[] = "It's 2024: caf\xc3\xa9 e\xcc\x81 "
                               "\xf0\x9f\x98\x80\xff\xc0  x\n<|im_end|>\n";
    mhsa_tokenizer *t = NULL;
    mhsa_status s = mhsa__tok_load(f, &t);
    CHECK(s == MHSA_OK || s == MHSA_ERR_FORMAT ||
          s == MHSA_ERR_UNSUPPORTED);
    if (!t)
        return;
    int32_t ids[4 * sizeof text + 8];
    char back[sizeof text];
    size_t n, len, cap = mhsa__tok_max_ids(t, sizeof text - 1);
    CHECK(cap <= sizeof ids / sizeof ids[0]);
    // The text is not valid UTF-8 (0xff, 0xc0): refused unless allowed.
    CHECK(mhsa__tok_encode(t, text, sizeof text - 1, 0, ids, cap, &n) ==
          MHSA_ERR_INVALID_ARG);
    CHECK(mhsa__tok_encode(t, text, sizeof text - 1, MHSA_TOK_ADD_SPECIAL |
                           MHSA_TOK_PARSE_SPECIAL |
                           MHSA_TOK_ALLOW_INVALID_UTF8, ids, cap, &n) ==
          MHSA_OK);
    CHECK(n <= cap);
    CHECK(mhsa__tok_encode(t, text, sizeof text - 1,
                           MHSA_TOK_ALLOW_INVALID_UTF8, ids, cap, &n) ==
          MHSA_OK);
    CHECK(n <= cap);
    if (mhsa__tok_is_spm(t)) {
        char big[64 * sizeof text];
        mhsa_status d = mhsa__tok_decode(t, ids, n, MHSA_TOK_STRIP_SPACE,
                                         big, sizeof big, &len);
        CHECK(d == MHSA_OK || d == MHSA_ERR_SHAPE);
        mhsa__tok_free(t);
        return;
    }
    CHECK(mhsa__tok_decode(t, ids, n, 0, back, sizeof back, &len) ==
          MHSA_OK);
    // Exactly the text, but for bytes the vocabulary has no token for,
    // which are left out (tokenizer.h): the decoded bytes are the text's
    // in order, with nothing added.
    size_t j = 0;
    for (size_t i = 0; i < len; i++, j++) {
        while (j < sizeof text - 1 && text[j] != back[i])
            j++;
        CHECK(j < sizeof text - 1);
    }
    mhsa__tok_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp);
    CHECK(fwrite(data, 1, size, fp) == size);
    CHECK(fclose(fp) == 0);

    mhsa_gguf_file *f = NULL;
    mhsa_status s = mhsa__gguf_open(path, &f);
    CHECK(s == MHSA_OK || s == MHSA_ERR_FORMAT);
    CHECK((s == MHSA_OK) == (f != NULL));
    if (!f) {
        CHECK(mhsa_last_error()[0] != '\0');
        unlink(path);
        return 0;
    }
    uint32_t a = mhsa__gguf_alignment(f);
    CHECK(a && !(a & (a - 1)));
    for (size_t i = 0; i < mhsa__gguf_kv_count(f); i++) {
        const char *key = mhsa__gguf_kv_key(f, i);
        CHECK(key);
        // By name, the lookup gives a value of the file (this one, unless
        // the key holds a NUL and its first part is another key).
        const mhsa_gguf_val *v = mhsa__gguf_find(f, key);
        if (v)
            walk(v, size, 0);
        walk(mhsa__gguf_kv_val(f, i), size, 0);
    }
    getters(f);
    tokenizer(f);
    uint64_t data_off = mhsa__gguf_data_offset(f);
    for (size_t i = 0; i < mhsa__gguf_tensor_count(f); i++) {
        const mhsa_gguf_tensor *t = mhsa__gguf_tensor_at(f, i);
        CHECK(mhsa__gguf_tensor(f, t->name) == t);
        CHECK(t->n_dims >= 1 && t->n_dims <= MHSA_GGUF_MAX_DIMS);
        CHECK(t->offset % a == 0 && data_off <= size &&
              t->bytes <= size - data_off - t->offset);
        // The densest type, iq1_s, packs 256 elements in 50 bytes: a
        // tensor inside the file has at most ~5.1 elements per byte.
        CHECK(t->numel <= 6 * (uint64_t)size);
        float *dst = malloc((size_t)t->numel * sizeof *dst);
        CHECK(dst);
        s = mhsa__gguf_read_f32(f, t->name, t->n_dims, t->dims, dst);
        CHECK(s == MHSA_OK || s == MHSA_ERR_FORMAT);
        free(dst);
    }
    mhsa__gguf_close(f);
    unlink(path);
    return 0;
}
