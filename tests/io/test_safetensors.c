// test_safetensors.c — the safetensors reader, writer and the block's
// load/save: round trips, F16/BF16 conversion, prefixes, shape errors, and
// handcrafted corrupt files that must give MHSA_ERR_FORMAT (never a crash,
// never a huge allocation: ASan aborts on one) and leave the block as it was.
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "kernels/half.h"
#include "mhsa.h"
#include "io/safetensors.h"
#include "util.h"
#include "tmpdir.h"

// Writes [u64 hlen][header][data]; hlen is strlen(header) unless
// hlen_override != UINT64_MAX.
static const char *write_raw(const char *name, uint64_t hlen_override,
                             const char *header, const void *data,
                             size_t data_len)
{
    const char *p = tpath(name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    uint64_t hlen = hlen_override != UINT64_MAX ? hlen_override
                                                : strlen(header);
    unsigned char l8[8];
    for (int i = 0; i < 8; i++)
        l8[i] = (unsigned char)(hlen >> (8 * i));
    ck_assert_int_eq(fwrite(l8, 1, 8, f), 8);
    fputs(header, f);
    if (data_len)
        ck_assert_int_eq(fwrite(data, 1, data_len, f), data_len);
    fclose(f);
    return p;
}

static void expect_open(const char *path, mhsa_status want, const char *msg)
{
    mhsa_st_file *f = NULL;
    mhsa_status s = mhsa__st_open(path, &f);
    if (s != want)
        ck_abort_msg("%s: got %s (%s), want %s", path, mhsa_status_str(s),
                     mhsa_last_error(), mhsa_status_str(want));
    if (msg && !strstr(mhsa_last_error(), msg))
        ck_abort_msg("message '%s' lacks '%s'", mhsa_last_error(), msg);
    if (s == MHSA_OK)
        ck_assert_ptr_nonnull(f);
    mhsa__st_close(f);
}

// A header + data that must be rejected with MHSA_ERR_FORMAT.
static void expect_bad(const char *header, size_t data_len, const char *msg)
{
    static const unsigned char zeros[256];
    ck_assert_uint_le(data_len, sizeof zeros);
    const char *p = write_raw("bad.safetensors", UINT64_MAX, header, zeros,
                              data_len);
    expect_open(p, MHSA_ERR_FORMAT, msg);
}

// ---- reader / writer -----------------------------------------------------

START_TEST(writer_reader_round_trip)
{
    rng r = {7};
    float a[2 * 3 * 5], b[7], s0 = 3.25f;
    fill_uniform(&r, a, 30, -2, 2);
    fill_uniform(&r, b, 7, -2, 2);
    b[3] = -0.0f;
    b[4] = INFINITY;
    mhsa_st_tensor t[4] = {
        {.name = "z.b", .ndim = 1, .dims = {7}, .data = b},
        {.name = "a.weight", .ndim = 3, .dims = {2, 3, 5}, .data = a},
        {.name = "scalar", .ndim = 0, .data = &s0},
        {.name = "empty", .ndim = 2, .dims = {4, 0}, .data = NULL},
    };
    const char *p = tpath("rt.safetensors");
    ck_assert_int_eq(mhsa__st_write_f32(p, t, 4), MHSA_OK);
    ck_assert_int_eq(tpath_entries(), 1);

    // The header is padded to 8 bytes and names the F32 format.
    FILE *fp = fopen(p, "rb");
    unsigned char l8[8];
    ck_assert_int_eq(fread(l8, 1, 8, fp), 8);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | l8[i];
    ck_assert_uint_eq(hlen % 8, 0);
    char hdr[1024] = {0};
    ck_assert_uint_lt(hlen, sizeof hdr);
    ck_assert_int_eq(fread(hdr, 1, hlen, fp), hlen);
    fclose(fp);
    ck_assert_ptr_nonnull(strstr(hdr, "\"__metadata__\":{\"format\":\"pt\"}"));
    ck_assert_ptr_nonnull(strstr(hdr, "\"a.weight\":{\"dtype\":\"F32\","
                                 "\"shape\":[2,3,5],\"data_offsets\":[0,120]}"));

    mhsa_st_file *f = NULL;
    ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__st_count(f), 4);
    // Data order: by name, as safetensors writes it.
    ck_assert_str_eq(mhsa__st_name(f, 3), "z.b");
    int nd;
    size_t dims[MHSA_ST_MAX_DIMS];
    ck_assert(mhsa__st_shape(f, "a.weight", &nd, dims));
    ck_assert_int_eq(nd, 3);
    ck_assert_uint_eq(dims[2], 5);
    ck_assert(!mhsa__st_shape(f, "nope", &nd, dims));

    float ga[30], gb[7], gs = 0;
    size_t da[3] = {2, 3, 5}, db[1] = {7};
    ck_assert_int_eq(mhsa__st_read_f32(f, "a.weight", 3, da, ga), MHSA_OK);
    ck_assert_int_eq(mhsa__st_read_f32(f, "z.b", 1, db, gb), MHSA_OK);
    ck_assert_int_eq(mhsa__st_read_f32(f, "scalar", 0, NULL, &gs), MHSA_OK);
    ck_assert_mem_eq(ga, a, sizeof a);
    ck_assert_mem_eq(gb, b, sizeof b);
    ck_assert(gs == 3.25f);

    // Wrong shape names expected and found; missing names the tensor.
    size_t wrong[2] = {6, 5};
    ck_assert_int_eq(mhsa__st_read_f32(f, "a.weight", 2, wrong, ga),
                     MHSA_ERR_FORMAT);
    ck_assert_str_eq(mhsa_last_error(), "tensor 'a.weight': expected shape "
                     "[6, 5], found [2, 3, 5]");
    ck_assert_int_eq(mhsa__st_read_f32(f, "a.bias", 1, db, gb),
                     MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "'a.bias'"));
    mhsa__st_close(f);

    // Overwriting replaces the file and leaves no temporary behind.
    ck_assert_int_eq(mhsa__st_write_f32(p, t + 2, 1), MHSA_OK);
    ck_assert_int_eq(tpath_entries(), 1);
    ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__st_count(f), 1);
    mhsa__st_close(f);
    tpath_remove();
}
END_TEST

START_TEST(writer_rejects_bad_arguments)
{
    float x = 1;
    mhsa_st_tensor dup[2] = {
        {.name = "w", .ndim = 1, .dims = {1}, .data = &x},
        {.name = "w", .ndim = 1, .dims = {1}, .data = &x},
    };
    mhsa_st_tensor meta = {.name = "__metadata__", .ndim = 0, .data = &x};
    mhsa_st_tensor nul = {.name = "w", .ndim = 1, .dims = {3}, .data = NULL};
    mhsa_st_tensor utf = {.name = "w\xff", .ndim = 0, .data = &x};
    mhsa_st_tensor big = {.name = "w", .ndim = 3,
                          .dims = {SIZE_MAX / 2, 4, 4}, .data = &x};
    const char *p = tpath("w.safetensors");
    ck_assert_int_eq(mhsa__st_write_f32(p, dup, 2), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write_f32(p, &meta, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write_f32(p, &nul, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write_f32(p, &utf, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write_f32(p, &big, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write_f32(NULL, dup, 1), MHSA_ERR_INVALID_ARG);
    // Nothing was created.
    ck_assert_int_eq(tpath_entries(), 0);
    // A directory, or a folder that does not exist: IO.
    mkdir(tpath("dir"), 0700);
    ck_assert_int_eq(mhsa__st_write_f32(tpath("dir"), dup, 1), MHSA_ERR_IO);
    ck_assert_int_eq(mhsa__st_write_f32(tpath("no/such/file"), dup, 1),
                     MHSA_ERR_IO);
    ck_assert_int_eq(tpath_entries(), 1);
    tpath_remove();
}
END_TEST

// Metadata entries are written beside "format" and read back by key; bad
// keys are refused before anything is created.
START_TEST(writer_metadata_round_trip)
{
    float x[3] = {1, 2, 3};
    mhsa_st_tensor t = {.name = "w", .ndim = 1, .dims = {3}, .data = x};
    const mhsa_st_meta meta[2] = {
        {"step", "123"}, {"rng", "18446744073709551615"},
    };
    const char *p = tpath("meta.safetensors");
    ck_assert_int_eq(mhsa__st_write(p, &t, 1, meta, 2), MHSA_OK);
    mhsa_st_file *f = NULL;
    ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
    ck_assert_str_eq(mhsa__st_meta(f, "format"), "pt");
    ck_assert_str_eq(mhsa__st_meta(f, "step"), "123");
    ck_assert_str_eq(mhsa__st_meta(f, "rng"), "18446744073709551615");
    ck_assert_ptr_null(mhsa__st_meta(f, "nope"));
    ck_assert_ptr_null(mhsa__st_meta(NULL, "step"));
    mhsa__st_close(f);
    unlink(p);

    const mhsa_st_meta dup[2] = {{"a", "1"}, {"a", "2"}};
    const mhsa_st_meta fmt = {"format", "x"}, nul = {"k", NULL};
    const mhsa_st_meta utf = {"k", "\xff"};
    ck_assert_int_eq(mhsa__st_write(p, &t, 1, dup, 2), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write(p, &t, 1, &fmt, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write(p, &t, 1, &nul, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write(p, &t, 1, &utf, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__st_write(p, &t, 1, NULL, 1), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(tpath_entries(), 0);
    tpath_remove();
}
END_TEST

// Every one of the 65536 half bit patterns against a double computation.
START_TEST(f16_conversion_exhaustive)
{
    for (uint32_t h = 0; h < 65536; h++) {
        int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
        float got = mhsa__f16_to_f32((uint16_t)h);
        double want;
        if (exp == 31) {
            if (man) {
                ck_assert_msg(isnan(got), "h=0x%04x", h);
                // The payload is kept: quiet bit and low bits.
                uint32_t u;
                memcpy(&u, &got, 4);
                ck_assert_uint_eq((u >> 13) & 1023, (uint32_t)man);
                continue;
            }
            want = INFINITY;
        } else if (exp == 0) {
            want = ldexp(man, -24);
        } else {
            want = ldexp(1024 + man, exp - 25);
        }
        if (sign)
            want = -want;
        ck_assert_msg(got == (float)want && !signbit(got) == !signbit(want),
                      "h=0x%04x: got %a want %a", h, (double)got, want);
    }
}
END_TEST

START_TEST(bf16_conversion)
{
    ck_assert(mhsa__bf16_to_f32(0x3f80) == 1.0f);
    ck_assert(mhsa__bf16_to_f32(0xc040) == -3.0f);
    ck_assert(isinf(mhsa__bf16_to_f32(0x7f80)));
    ck_assert(isnan(mhsa__bf16_to_f32(0x7fc1)));
    ck_assert(mhsa__bf16_to_f32(0x0001) == ldexpf(1.0f, -133));
    ck_assert(signbit(mhsa__bf16_to_f32(0x8000)));
}
END_TEST

// A handcrafted file holding one F16 and one BF16 tensor (little-endian).
START_TEST(read_f16_bf16_file)
{
    const uint16_t h[4] = {0x3c00, 0xc000, 0x0001, 0x7bff};  // 1 -2 2^-24 65504
    const uint16_t b[2] = {0x3f80, 0x4049};                  // 1, 3.140625
    unsigned char data[12];
    for (int i = 0; i < 4; i++) {
        data[2 * i] = (unsigned char)(h[i] & 0xff);
        data[2 * i + 1] = (unsigned char)(h[i] >> 8);
    }
    for (int i = 0; i < 2; i++) {
        data[8 + 2 * i] = (unsigned char)(b[i] & 0xff);
        data[8 + 2 * i + 1] = (unsigned char)(b[i] >> 8);
    }
    const char *p = write_raw("h.safetensors", UINT64_MAX,
        "{\"h\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]}}  ",
        data, sizeof data);
    mhsa_st_file *f = NULL;
    ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
    float gh[4], gb[2];
    size_t dh[2] = {2, 2}, dbb[1] = {2};
    ck_assert_int_eq(mhsa__st_read_f32(f, "h", 2, dh, gh), MHSA_OK);
    ck_assert_int_eq(mhsa__st_read_f32(f, "b", 1, dbb, gb), MHSA_OK);
    ck_assert(gh[0] == 1.0f && gh[1] == -2.0f);
    ck_assert(gh[2] == ldexpf(1.0f, -24) && gh[3] == 65504.0f);
    ck_assert(gb[0] == 1.0f && gb[1] == 3.140625f);
    mhsa__st_close(f);
    tpath_remove();
}
END_TEST

// Valid files holding dtypes we cannot read as fp32: the file opens (it is
// valid safetensors) but asking for such a tensor is MHSA_ERR_FORMAT.
START_TEST(other_dtypes_valid_but_not_readable)
{
    static const unsigned char data[8 + 16 + 3] = {0};
    const char *p = write_raw("o.safetensors", UINT64_MAX,
        "{\"__metadata__\":{\"format\":\"pt\",\"x\":\"y\"},"
        "\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
        "\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[8,24]},"
        "\"u\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[24,27]}}",
        data, sizeof data);
    mhsa_st_file *f = NULL;
    ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__st_count(f), 3);
    float out[2];
    size_t d2[1] = {2};
    ck_assert_int_eq(mhsa__st_read_f32(f, "d", 1, d2, out), MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "F64"));
    mhsa__st_close(f);
    tpath_remove();
}
END_TEST

// ---- corrupt files --------------------------------------------------------

#define T1(off) "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" off "}}"

START_TEST(corrupt_length_and_truncation)
{
    // Empty file, shorter than the length field, zero length, length past
    // the end of the file, a 2^63 length.
    const char *p = tpath("e.safetensors");
    fclose(fopen(p, "wb"));
    expect_open(p, MHSA_ERR_FORMAT, "too short");
    FILE *f = fopen(p, "wb");
    fwrite("\x10\0\0", 1, 3, f);
    fclose(f);
    expect_open(p, MHSA_ERR_FORMAT, "too short");
    p = write_raw("l.safetensors", 0, "{}", NULL, 0);
    expect_open(p, MHSA_ERR_FORMAT, "header length 0");
    p = write_raw("l.safetensors", 1000, T1("[0,8]"), "12345678", 8);
    expect_open(p, MHSA_ERR_FORMAT, "header length 1000");
    p = write_raw("l.safetensors", (uint64_t)1 << 63, T1("[0,8]"), "x", 1);
    expect_open(p, MHSA_ERR_FORMAT, "header length");
    // Truncated data, and bytes no tensor owns.
    expect_bad(T1("[0,8]"), 5, "truncated");
    expect_bad(T1("[0,8]"), 12, "trailing");
    // A header length that cuts the JSON short.
    p = write_raw("l.safetensors", 20, T1("[0,8]"), "12345678", 8);
    expect_open(p, MHSA_ERR_FORMAT, "JSON");
    tpath_remove();
}
END_TEST

START_TEST(corrupt_offsets)
{
    // Overlap, gap, not starting at 0, begin > end, past the end,
    // negative, non-integer, wrong count.
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               12, "overlap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
               12, "gap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
               8, "overlap");
    expect_bad(T1("[4,12]"), 12, "gap");
    expect_bad(T1("[8,0]"), 8, "data_offsets");
    expect_bad(T1("[1000000,1000008]"), 8, "gap");
    expect_bad(T1("[-8,0]"), 8, "data_offsets");
    expect_bad(T1("[0.0,8.0]"), 8, "data_offsets");
    expect_bad(T1("[0,8,8]"), 8, "data_offsets");
    expect_bad(T1("[0]"), 8, "data_offsets");
    expect_bad(T1("[0,9223372036854775807]"), 8, "needs 8 bytes");
    tpath_remove();
}
END_TEST

START_TEST(corrupt_dtypes_and_shapes)
{
    expect_bad("{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}",
               8, "unknown dtype");
    expect_bad("{\"a\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}",
               8, "dtype");
    // The bytes disagree with dtype x shape.
    expect_bad("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}",
               8, "needs 4 bytes");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],"
               "\"data_offsets\":[0,8]}}", 8, "needs 16 bytes");
    // Huge shapes: overflow of the product, and a product that fits but is
    // far more than the file holds (must not be allocated).
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
               "\"data_offsets\":[0,8]}}", 8, "overflows");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1099511627776],"
               "\"data_offsets\":[0,4398046511104]}}", 8, "truncated");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
               8, "shape[0]");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],"
               "\"data_offsets\":[0,8]}}", 8, "dimensions");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}",
               8, "array shape");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8,
               "array shape");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],"
               "\"extra\":1}}", 8, "unknown field");
    expect_bad("{\"a\":[1,2]}", 0, "not an object");
    tpath_remove();
}
END_TEST

START_TEST(corrupt_json_and_names)
{
    // Duplicate names: jansson would keep the last one without the flag.
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               8, "duplicate");
    // Not UTF-8, and an escaped NUL inside a name.
    expect_bad("{\"\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[1],"
               "\"data_offsets\":[0,4]}}", 4, "JSON");
    expect_bad("{\"\xc3\":{\"dtype\":\"F32\",\"shape\":[1],"
               "\"data_offsets\":[0,4]}}", 4, "JSON");
    expect_bad("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],"
               "\"data_offsets\":[0,4]}}", 4, "JSON");
    expect_bad("[]", 0, "'{'");
    expect_bad("{\"a\":", 0, "JSON");
    expect_bad("{} trailing", 0, "JSON");
    expect_bad("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__");
    expect_bad("{\"__metadata__\":[]}", 0, "__metadata__");
    // Valid UTF-8 names and an empty file body are fine.
    const char *p = write_raw("u.safetensors", UINT64_MAX,
        "{\"\xc3\xa9t\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[1],"
        "\"data_offsets\":[0,4]}}", "abcd", 4);
    expect_open(p, MHSA_OK, NULL);
    p = write_raw("u.safetensors", UINT64_MAX, "{}        ", NULL, 0);
    expect_open(p, MHSA_OK, NULL);
    tpath_remove();
}
END_TEST

START_TEST(io_errors)
{
    mkdir(tpath("d.safetensors"), 0700);
    expect_open(tpath("d.safetensors"), MHSA_ERR_IO, "directory");
    expect_open(tpath("missing.safetensors"), MHSA_ERR_IO, "missing");
    tpath_remove();
}
END_TEST

// ---- the block ------------------------------------------------------------

// A block's weights; qkv = D + 2*Hkv*dh rows of w_qkv (3D without GQA).
typedef struct weights {
    float *w_qkv, *b_qkv, *w_out, *b_out;
    size_t D, qkv;
} weights;

static weights weights_alloc_kv(int D, size_t kv_rows)
{
    weights w;
    w.D = (size_t)D;
    w.qkv = w.D + 2 * kv_rows;
    w.w_qkv = calloc(w.qkv * w.D, sizeof(float));
    w.b_qkv = calloc(w.qkv, sizeof(float));
    w.w_out = calloc(w.D * w.D, sizeof(float));
    w.b_out = calloc(w.D, sizeof(float));
    return w;
}

static weights weights_alloc(int D) { return weights_alloc_kv(D, (size_t)D); }

static void weights_free(weights *w)
{
    free(w->w_qkv);
    free(w->b_qkv);
    free(w->w_out);
    free(w->b_out);
}

static void weights_get(const mhsa_block *blk, weights *w)
{
    ck_assert_int_eq(mhsa_block_get_weights(blk, w->w_qkv, w->b_qkv,
                                            w->w_out, w->b_out), MHSA_OK);
}

static int weights_eq(const weights *a, const weights *b, int D, int bias)
{
    size_t d = (size_t)D, q = a->qkv;
    ck_assert_uint_eq(a->qkv, b->qkv);
    return !memcmp(a->w_qkv, b->w_qkv, q * d * sizeof(float)) &&
           !memcmp(a->w_out, b->w_out, d * d * sizeof(float)) &&
           (!bias || (!memcmp(a->b_qkv, b->b_qkv, q * sizeof(float)) &&
                      !memcmp(a->b_out, b->b_out, d * sizeof(float))));
}

// Hkv*dh: the rows of each of K and V in w_qkv.
static size_t kv_rows_of(const mhsa_config *c)
{
    int hkv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
    return (size_t)hkv * (size_t)(c->d_model / c->n_heads);
}

// A block of config c with random weights (biases too when c->bias).
static mhsa_block *random_block_cfg(const mhsa_config *c, uint64_t seed)
{
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(c, &blk), MHSA_OK);
    weights w = weights_alloc_kv(c->d_model, kv_rows_of(c));
    rng r = {seed};
    fill_uniform(&r, w.w_qkv, w.qkv * w.D, -1, 1);
    fill_uniform(&r, w.b_qkv, w.qkv, -1, 1);
    fill_uniform(&r, w.w_out, w.D * w.D, -1, 1);
    fill_uniform(&r, w.b_out, w.D, -1, 1);
    ck_assert_int_eq(mhsa_block_set_weights(blk, w.w_qkv, w.b_qkv, w.w_out,
                                            w.b_out), MHSA_OK);
    weights_free(&w);
    return blk;
}

static mhsa_block *random_block(int D, int H, int bias, uint64_t seed)
{
    mhsa_config cfg = {.d_model = D, .n_heads = H, .max_seq_len = 8,
                       .causal = 1, .bias = bias};
    return random_block_cfg(&cfg, seed);
}

START_TEST(block_round_trip_with_prefix)
{
    const int D = 16, H = 4;
    mhsa_block *a = random_block(D, H, 1, 1), *b = random_block(D, H, 1, 2);
    const char *p = tpath("blk.safetensors");
    ck_assert_int_eq(mhsa_block_save_safetensors(a, p, "attn."), MHSA_OK);

    // PyTorch's names after the prefix, with the expected shapes.
    mhsa_st_file *f = NULL;
    ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__st_count(f), 4);
    int nd;
    size_t dims[MHSA_ST_MAX_DIMS];
    ck_assert(mhsa__st_shape(f, "attn.in_proj_weight", &nd, dims));
    ck_assert(nd == 2 && dims[0] == 3 * D && dims[1] == D);
    ck_assert(mhsa__st_shape(f, "attn.in_proj_bias", &nd, dims));
    ck_assert(nd == 1 && dims[0] == 3 * D);
    ck_assert(mhsa__st_shape(f, "attn.out_proj.weight", &nd, dims));
    ck_assert(nd == 2 && dims[0] == D && dims[1] == D);
    ck_assert(mhsa__st_shape(f, "attn.out_proj.bias", &nd, dims));
    ck_assert(nd == 1 && dims[0] == D);
    mhsa__st_close(f);

    weights wa = weights_alloc(D), wb = weights_alloc(D);
    weights_get(a, &wa);
    weights_get(b, &wb);
    ck_assert(!weights_eq(&wa, &wb, D, 1));

    // Without the prefix nothing matches: FORMAT naming the tensor, and the
    // block keeps its weights.
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "'in_proj_weight'"));
    weights wc = weights_alloc(D);
    weights_get(b, &wc);
    ck_assert(weights_eq(&wb, &wc, D, 1));

    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, "attn."), MHSA_OK);
    weights_get(b, &wb);
    ck_assert(weights_eq(&wa, &wb, D, 1));
    // NULL prefix means "".
    ck_assert_int_eq(mhsa_block_save_safetensors(a, p, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_OK);
    ck_assert_int_eq(tpath_entries(), 1);

    weights_free(&wa);
    weights_free(&wb);
    weights_free(&wc);
    mhsa_block_destroy(a);
    mhsa_block_destroy(b);
    tpath_remove();
}
END_TEST

START_TEST(block_shape_mismatch_names_tensor)
{
    mhsa_block *a = random_block(16, 4, 1, 3), *b = random_block(8, 2, 1, 4);
    const char *p = tpath("blk.safetensors");
    ck_assert_int_eq(mhsa_block_save_safetensors(a, p, ""), MHSA_OK);
    weights w0 = weights_alloc(8), w1 = weights_alloc(8);
    weights_get(b, &w0);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "tensor 'in_proj_weight'"
                                 ": expected shape [24, 8], found [48, 16]"));
    weights_get(b, &w1);
    ck_assert(weights_eq(&w0, &w1, 8, 1));
    weights_free(&w0);
    weights_free(&w1);
    mhsa_block_destroy(a);
    mhsa_block_destroy(b);
    tpath_remove();
}
END_TEST

// bias == 0: only the two weights are written (as PyTorch's bias=False
// state_dict has them); biases in a file are ignored.
START_TEST(block_without_bias)
{
    const int D = 8;
    mhsa_block *a = random_block(D, 2, 0, 5), *b = random_block(D, 2, 0, 6);
    mhsa_block *c = random_block(D, 2, 1, 7);
    const char *p = tpath("nb.safetensors");
    ck_assert_int_eq(mhsa_block_save_safetensors(a, p, "m."), MHSA_OK);
    mhsa_st_file *f = NULL;
    ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__st_count(f), 2);
    mhsa__st_close(f);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, "m."), MHSA_OK);
    weights wa = weights_alloc(D), wb = weights_alloc(D);
    weights_get(a, &wa);
    weights_get(b, &wb);
    ck_assert(weights_eq(&wa, &wb, D, 0));
    // A bias block needs the biases.
    ck_assert_int_eq(mhsa_block_load_safetensors(c, p, "m."),
                     MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "'m.in_proj_bias'"));
    // A bias file loads into a no-bias block.
    ck_assert_int_eq(mhsa_block_save_safetensors(c, p, ""), MHSA_OK);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_OK);
    weights_free(&wa);
    weights_free(&wb);
    mhsa_block_destroy(a);
    mhsa_block_destroy(b);
    mhsa_block_destroy(c);
    tpath_remove();
}
END_TEST

// An F16 in_proj_weight and BF16 out_proj.* load converted, with extra
// tensors of other dtypes around them ignored.
START_TEST(block_loads_f16_bf16)
{
    enum { D = 2 };
    uint16_t wq[3 * D * D], bq[3 * D], wo[D * D], bo[D];
    float ewq[3 * D * D], ebq[3 * D], ewo[D * D], ebo[D];
    for (int i = 0; i < 3 * D * D; i++) {       // F16: i/4 - 1, exact
        float v = (float)i / 4 - 1;
        ewq[i] = v;
        int e;
        double m = frexp(fabs(v), &e);
        wq[i] = v == 0 ? 0 : (uint16_t)((v < 0 ? 0x8000 : 0) |
                 (uint16_t)((e - 1 + 15) << 10) |
                 (uint16_t)((m * 2 - 1) * 1024));
    }
    for (int i = 0; i < 3 * D; i++) {            // F16 0x3c00 + i: 1 + i/1024
        bq[i] = (uint16_t)(0x3c00 + i);
        ebq[i] = 1.0f + (float)i / 1024;
    }
    for (int i = 0; i < D * D; i++) {            // BF16
        wo[i] = (uint16_t)(0x3f80 + i);
        ewo[i] = mhsa__bf16_to_f32(wo[i]);
    }
    for (int i = 0; i < D; i++) {
        bo[i] = (uint16_t)(0xbf80 - i);
        ebo[i] = mhsa__bf16_to_f32(bo[i]);
    }
    unsigned char data[8 + sizeof wq + sizeof bq + sizeof wo + sizeof bo];
    memset(data, 0x7f, 8);   // an I64 tensor first, ignored by the block
    size_t o = 8;
    const uint16_t *parts[4] = {wq, bq, wo, bo};
    const size_t counts[4] = {3 * D * D, 3 * D, D * D, D};
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < counts[t]; i++) {
            data[o++] = (unsigned char)(parts[t][i] & 0xff);
            data[o++] = (unsigned char)(parts[t][i] >> 8);
        }
    const char *p = write_raw("h.safetensors", UINT64_MAX,
        "{\"step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
        "\"x.in_proj_weight\":{\"dtype\":\"F16\",\"shape\":[6,2],"
        "\"data_offsets\":[8,32]},"
        "\"x.in_proj_bias\":{\"dtype\":\"F16\",\"shape\":[6],"
        "\"data_offsets\":[32,44]},"
        "\"x.out_proj.weight\":{\"dtype\":\"BF16\",\"shape\":[2,2],"
        "\"data_offsets\":[44,52]},"
        "\"x.out_proj.bias\":{\"dtype\":\"BF16\",\"shape\":[2],"
        "\"data_offsets\":[52,56]}}", data, o);
    mhsa_block *b = random_block(D, 1, 1, 8);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, "x."), MHSA_OK);
    weights w = weights_alloc(D);
    weights_get(b, &w);
    ck_assert_mem_eq(w.w_qkv, ewq, sizeof ewq);
    ck_assert_mem_eq(w.b_qkv, ebq, sizeof ebq);
    ck_assert_mem_eq(w.w_out, ewo, sizeof ewo);
    ck_assert_mem_eq(w.b_out, ebo, sizeof ebo);
    weights_free(&w);
    mhsa_block_destroy(b);
    tpath_remove();
}
END_TEST

// A valid file holding the whole PyTorch set whose in_proj_weight has an
// integer dtype, and corrupt files: FORMAT, block unchanged.
START_TEST(block_load_errors_leave_weights)
{
    const int D = 2;
    mhsa_block *b = random_block(D, 1, 1, 9);
    weights w0 = weights_alloc(D), w1 = weights_alloc(D);
    weights_get(b, &w0);
    static const unsigned char z[96];
    const char *p = write_raw("i.safetensors", UINT64_MAX,
        "{\"in_proj_weight\":{\"dtype\":\"I32\",\"shape\":[6,2],"
        "\"data_offsets\":[0,48]},"
        "\"in_proj_bias\":{\"dtype\":\"F32\",\"shape\":[6],"
        "\"data_offsets\":[48,72]},"
        "\"out_proj.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],"
        "\"data_offsets\":[72,88]},"
        "\"out_proj.bias\":{\"dtype\":\"F32\",\"shape\":[2],"
        "\"data_offsets\":[88,96]}}", z, 96);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "I32"));
    p = write_raw("t.safetensors", UINT64_MAX,
        "{\"in_proj_weight\":{\"dtype\":\"F32\",\"shape\":[6,2],"
        "\"data_offsets\":[0,48]}}", z, 40);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_ERR_FORMAT);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, tpath("none"), ""),
                     MHSA_ERR_IO);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, tpath_dir(), ""),
                     MHSA_ERR_IO);
    ck_assert_int_eq(mhsa_block_load_safetensors(NULL, p, ""),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, NULL, ""),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_block_save_safetensors(b, tpath_dir(), ""),
                     MHSA_ERR_IO);
    weights_get(b, &w1);
    ck_assert(weights_eq(&w0, &w1, D, 1));
    weights_free(&w0);
    weights_free(&w1);
    mhsa_block_destroy(b);
    tpath_remove();
}
END_TEST

// Fault injection: every allocation of load and save failing in turn gives
// NO_MEMORY (never a crash or a leak under ASan) and an unchanged block.
START_TEST(block_alloc_failures)
{
    const int D = 8;
    mhsa_block *a = random_block(D, 2, 1, 10), *b = random_block(D, 2, 1, 11);
    const char *p = tpath("a.safetensors"), *q = tpath("q.safetensors");
    ck_assert_int_eq(mhsa_block_save_safetensors(a, p, ""), MHSA_OK);
    weights w0 = weights_alloc(D), w1 = weights_alloc(D);
    weights_get(b, &w0);
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_OK);
    size_t n_load = mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa_block_set_weights(b, w0.w_qkv, w0.b_qkv, w0.w_out,
                                            w0.b_out), MHSA_OK);
    ck_assert_uint_gt(n_load, 0);
    for (size_t k = 1; k <= n_load; k++) {
        mhsa__alloc_fail_at(k);
        mhsa_status s = mhsa_block_load_safetensors(b, p, "");
        mhsa__alloc_fail_at(0);
        ck_assert_msg(s == MHSA_ERR_NO_MEMORY, "alloc %zu: %s", k,
                      mhsa_status_str(s));
        weights_get(b, &w1);
        ck_assert(weights_eq(&w0, &w1, D, 1));
    }
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa_block_save_safetensors(a, q, ""), MHSA_OK);
    size_t n_save = mhsa__alloc_fail_at(0);
    for (size_t k = 1; k <= n_save; k++) {
        unlink(q);
        mhsa__alloc_fail_at(k);
        mhsa_status s = mhsa_block_save_safetensors(a, q, "");
        mhsa__alloc_fail_at(0);
        ck_assert_msg(s == MHSA_ERR_NO_MEMORY, "alloc %zu: %s", k,
                      mhsa_status_str(s));
        ck_assert_int_eq(access(q, F_OK), -1);
    }
    ck_assert_int_eq(tpath_entries(), 1);
    weights_free(&w0);
    weights_free(&w1);
    mhsa_block_destroy(a);
    mhsa_block_destroy(b);
    tpath_remove();
}
END_TEST

// ---- weight names: PyTorch, Hugging Face, GPT c_* -------------------------

// One tensor of a handmade file: name after the prefix, dtype "F32", "F16"
// or "BF16", shape, values (rounded to the dtype when written), and a
// prefix of its own when pre != NULL.
typedef struct spec {
    const char *name, *dtype;
    int ndim;
    size_t dims[2];
    const float *data;
    const char *pre;
} spec;

// What value v becomes once stored as dtype and read back.
static float round_to(const char *dtype, float v)
{
    if (!strcmp(dtype, "F16"))
        return mhsa__f16_to_f32(mhsa_f32_to_f16(v));
    if (!strcmp(dtype, "BF16"))
        return mhsa__bf16_to_f32(mhsa_f32_to_bf16(v));
    return v;
}

// Writes the n tensors (names after prefix) as a safetensors file, by hand,
// in the order given: the test's own writer, not the library's.
static const char *write_specs(const char *file, const char *prefix,
                               const spec *t, int n)
{
    size_t total = 0, len = 0, cap = 16384;
    for (int i = 0; i < n; i++)
        total += (strcmp(t[i].dtype, "F32") ? 2 : 4) * t[i].dims[0] *
                 (t[i].ndim == 2 ? t[i].dims[1] : 1);
    char *hdr = malloc(cap);
    unsigned char *data = malloc(total ? total : 1), *o = data;
    ck_assert(hdr && data);
    len += (size_t)snprintf(hdr, cap, "{");
    for (int i = 0; i < n; i++) {
        size_t count = t[i].dims[0] * (t[i].ndim == 2 ? t[i].dims[1] : 1);
        size_t begin = (size_t)(o - data);
        for (size_t j = 0; j < count; j++) {
            float v = t[i].data[j];
            if (!strcmp(t[i].dtype, "F32")) {
                uint32_t u;
                memcpy(&u, &v, 4);
                for (int b = 0; b < 4; b++)
                    *o++ = (unsigned char)(u >> (8 * b));
            } else {
                uint16_t h = !strcmp(t[i].dtype, "F16") ? mhsa_f32_to_f16(v)
                                                        : mhsa_f32_to_bf16(v);
                *o++ = (unsigned char)(h & 0xff);
                *o++ = (unsigned char)(h >> 8);
            }
        }
        char shape[64];
        if (t[i].ndim == 2)
            snprintf(shape, sizeof shape, "%zu,%zu", t[i].dims[0],
                     t[i].dims[1]);
        else
            snprintf(shape, sizeof shape, "%zu", t[i].dims[0]);
        len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s%s\":{\"dtype\""
                                ":\"%s\",\"shape\":[%s],\"data_offsets\":"
                                "[%zu,%zu]}", i ? "," : "",
                                t[i].pre ? t[i].pre : prefix,
                                t[i].name, t[i].dtype, shape, begin,
                                (size_t)(o - data));
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    ck_assert_uint_lt(len, cap);
    const char *p = write_raw(file, UINT64_MAX, hdr, data, total);
    free(hdr);
    free(data);
    return p;
}

static const char *const split_names[2][8] = {
    {"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
     "v_proj.weight", "v_proj.bias", "o_proj.weight", "o_proj.bias"},
    {"c_q.weight", "c_q.bias", "c_k.weight", "c_k.bias",
     "c_v.weight", "c_v.bias", "c_proj.weight", "c_proj.bias"},
};

// The tensors of name set `set` holding w, cut by rows here (Wq: the first
// D rows of w_qkv, Wk the next kv, Wv the last kv), F32, the biases when
// with_bias. Returns how many.
static int set_specs(mhsa_names set, const weights *w, int with_bias,
                     spec *t)
{
    size_t D = w->D, kv = (w->qkv - D) / 2;
    int n = 0;
    if (set == MHSA_NAMES_TORCH) {
        t[n++] = (spec){"in_proj_weight", "F32", 2, {w->qkv, D}, w->w_qkv};
        if (with_bias)
            t[n++] = (spec){"in_proj_bias", "F32", 1, {w->qkv}, w->b_qkv};
        t[n++] = (spec){"out_proj.weight", "F32", 2, {D, D}, w->w_out};
        if (with_bias)
            t[n++] = (spec){"out_proj.bias", "F32", 1, {D}, w->b_out};
        return n;
    }
    const char *const *nm = split_names[set == MHSA_NAMES_C];
    const size_t row0[4] = {0, D, D + kv, 0}, rows[4] = {D, kv, kv, D};
    for (int j = 0; j < 4; j++) {
        t[n++] = (spec){nm[2 * j], "F32", 2, {rows[j], D},
                        j < 3 ? w->w_qkv + row0[j] * D : w->w_out};
        if (with_bias)
            t[n++] = (spec){nm[2 * j + 1], "F32", 1, {rows[j]},
                            j < 3 ? w->b_qkv + row0[j] : w->b_out};
    }
    return n;
}

// The configs the name tests run over: without GQA (n_kv_heads 0 and H),
// grouped-query (H/Hkv = 2, 4) and multi-query (Hkv = 1).
static const mhsa_config name_cfgs[] = {
    {.d_model = 16, .n_heads = 4, .max_seq_len = 8, .causal = 1},
    {.d_model = 12, .n_heads = 3, .max_seq_len = 8, .causal = 1,
     .n_kv_heads = 3},
    {.d_model = 16, .n_heads = 4, .max_seq_len = 8, .causal = 1,
     .n_kv_heads = 2},
    {.d_model = 24, .n_heads = 8, .max_seq_len = 8, .causal = 1,
     .n_kv_heads = 2},
    {.d_model = 12, .n_heads = 3, .max_seq_len = 8, .causal = 1,
     .n_kv_heads = 1},
};
enum { N_NAME_CFGS = sizeof name_cfgs / sizeof name_cfgs[0] };

static const char *const PFX = "model.layers.0.self_attn.";

// The same weights under each set (and the bias file into a no-bias
// block), with a prefix and decoys around them: the same bits.
START_TEST(names_every_set_loads_same_bits)
{
    for (int ci = 0; ci < N_NAME_CFGS; ci++)
        for (int bias = 0; bias <= 1; bias++)
            for (int file_bias = bias; file_bias <= 1; file_bias++)
                for (int set = 0; set < 3; set++) {
        mhsa_config c = name_cfgs[ci];
        c.bias = bias;
        mhsa_block *src = random_block_cfg(&c, 100 + (uint64_t)ci);
        mhsa_block *dst = random_block_cfg(&c, 200 + (uint64_t)set);
        size_t kv = kv_rows_of(&c);
        weights ws = weights_alloc_kv(c.d_model, kv);
        weights wd = weights_alloc_kv(c.d_model, kv);
        weights_get(src, &ws);
        if (!bias)   // the file's biases must be ignored: make them odd
            for (size_t i = 0; i < ws.qkv; i++)
                ws.b_qkv[i] = (float)i + 0.5f;
        spec t[12];
        int n = set_specs((mhsa_names)set, &ws, file_bias, t);
        // Decoys: the next layer's tensors of every set, with other shapes.
        float decoy[4] = {9, 9, 9, 9};
        const char *const dn[3] = {"in_proj_weight", "q_proj.weight",
                                   "c_q.weight"};
        for (int k = 0; k < 3; k++)
            t[n++] = (spec){dn[k], "F32", 1, {4}, decoy,
                            "model.layers.1.self_attn."};
        const char *p = write_specs("n.safetensors", PFX, t, n);
        ck_assert_msg(mhsa_block_load_safetensors(dst, p, PFX) == MHSA_OK,
                      "cfg %d bias %d/%d set %d: %s", ci, bias, file_bias,
                      set, mhsa_last_error());
        weights_get(dst, &wd);
        weights_get(src, &ws);
        ck_assert_msg(weights_eq(&ws, &wd, c.d_model, bias),
                      "cfg %d bias %d/%d set %d", ci, bias, file_bias, set);
        weights_free(&ws);
        weights_free(&wd);
        mhsa_block_destroy(src);
        mhsa_block_destroy(dst);
    }
    tpath_remove();
}
END_TEST

// save_ex writes exactly the chosen set (F32, the contract's shapes, the
// bits of the block), which loads back to the same bits; save is save_ex
// with MHSA_NAMES_TORCH, byte for byte.
START_TEST(names_save_ex_round_trip)
{
    for (int ci = 0; ci < N_NAME_CFGS; ci++)
        for (int bias = 0; bias <= 1; bias++)
            for (int set = 0; set < 3; set++) {
        mhsa_config c = name_cfgs[ci];
        c.bias = bias;
        mhsa_block *src = random_block_cfg(&c, 300 + (uint64_t)ci);
        mhsa_block *dst = random_block_cfg(&c, 400 + (uint64_t)set);
        size_t kv = kv_rows_of(&c);
        weights ws = weights_alloc_kv(c.d_model, kv);
        weights wd = weights_alloc_kv(c.d_model, kv);
        weights_get(src, &ws);
        const char *p = tpath("s.safetensors");
        ck_assert_int_eq(mhsa_block_save_safetensors_ex(src, p, PFX,
                                                        (mhsa_names)set),
                         MHSA_OK);
        spec t[8];
        int n = set_specs((mhsa_names)set, &ws, bias, t);
        mhsa_st_file *f = NULL;
        ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
        ck_assert_uint_eq(mhsa__st_count(f), (size_t)n);
        for (int i = 0; i < n; i++) {
            char name[128];
            snprintf(name, sizeof name, "%s%s", PFX, t[i].name);
            int nd;
            size_t dims[MHSA_ST_MAX_DIMS];
            ck_assert_msg(mhsa__st_shape(f, name, &nd, dims), "%s", name);
            ck_assert_int_eq(nd, t[i].ndim);
            ck_assert_uint_eq(dims[0], t[i].dims[0]);
            if (nd == 2)
                ck_assert_uint_eq(dims[1], t[i].dims[1]);
            size_t count = t[i].dims[0] * (nd == 2 ? t[i].dims[1] : 1);
            float *got = malloc(count * sizeof(float));
            ck_assert_int_eq(mhsa__st_read_f32(f, name, nd, t[i].dims, got),
                             MHSA_OK);
            ck_assert_msg(!memcmp(got, t[i].data, count * sizeof(float)),
                          "%s", name);
            free(got);
        }
        mhsa__st_close(f);
        ck_assert_int_eq(mhsa_block_load_safetensors(dst, p, PFX), MHSA_OK);
        weights_get(dst, &wd);
        ck_assert(weights_eq(&ws, &wd, c.d_model, bias));

        if (set == MHSA_NAMES_TORCH) {
            const char *q = tpath("s0.safetensors");
            ck_assert_int_eq(mhsa_block_save_safetensors(src, q, PFX),
                             MHSA_OK);
            FILE *a = fopen(p, "rb"), *b = fopen(q, "rb");
            int ca, cb;
            do {
                ca = fgetc(a);
                cb = fgetc(b);
            } while (ca == cb && ca != EOF);
            ck_assert_int_eq(ca, cb);
            fclose(a);
            fclose(b);
            unlink(q);
        }
        weights_free(&ws);
        weights_free(&wd);
        mhsa_block_destroy(src);
        mhsa_block_destroy(dst);
    }
    ck_assert_int_eq(tpath_entries(), 1);
    tpath_remove();
}
END_TEST

// Loads p with prefix "attn." into blk and expects FORMAT with exactly
// the message path + rest, and the block's weights unchanged.
static void expect_load_error(mhsa_block *blk, const char *p,
                              const char *rest)
{
    const mhsa_config *c = mhsa_block_config(blk);
    weights w0 = weights_alloc_kv(c->d_model, kv_rows_of(c));
    weights w1 = weights_alloc_kv(c->d_model, kv_rows_of(c));
    weights_get(blk, &w0);
    ck_assert_int_eq(mhsa_block_load_safetensors(blk, p, "attn."),
                     MHSA_ERR_FORMAT);
    char want[512];
    snprintf(want, sizeof want, "%s: %s", p, rest);
    ck_assert_str_eq(mhsa_last_error(), want);
    weights_get(blk, &w1);
    ck_assert(weights_eq(&w0, &w1, c->d_model, c->bias));
    weights_free(&w0);
    weights_free(&w1);
}

// Two complete sets: the first in PyTorch, Hugging Face, c_* order is
// loaded and the other ignored, even with wrong shapes; the chosen set's
// shapes are checked even when a later set would fit.
START_TEST(names_first_complete_set_wins)
{
    mhsa_config c = name_cfgs[0];
    c.bias = 1;
    size_t kv = kv_rows_of(&c);
    mhsa_block *a = random_block_cfg(&c, 500), *b = random_block_cfg(&c, 501);
    mhsa_block *dst = random_block_cfg(&c, 502);
    weights wa = weights_alloc_kv(c.d_model, kv);
    weights wb = weights_alloc_kv(c.d_model, kv);
    weights wd = weights_alloc_kv(c.d_model, kv);
    weights_get(a, &wa);
    weights_get(b, &wb);
    static const mhsa_names pairs[3][2] = {
        {MHSA_NAMES_TORCH, MHSA_NAMES_HF}, {MHSA_NAMES_TORCH, MHSA_NAMES_C},
        {MHSA_NAMES_HF, MHSA_NAMES_C},
    };
    for (int k = 0; k < 3; k++)
        for (int order = 0; order < 2; order++) {
        // The winner's tensors first or last in the file: order is no cue.
        spec t[16];
        int n = 0;
        if (order) {
            n += set_specs(pairs[k][1], &wb, 1, t + n);
            n += set_specs(pairs[k][0], &wa, 1, t + n);
        } else {
            n += set_specs(pairs[k][0], &wa, 1, t + n);
            n += set_specs(pairs[k][1], &wb, 1, t + n);
        }
        const char *p = write_specs("two.safetensors", "attn.", t, n);
        ck_assert_int_eq(mhsa_block_load_safetensors(dst, p, "attn."),
                         MHSA_OK);
        weights_get(dst, &wd);
        ck_assert_msg(weights_eq(&wa, &wd, c.d_model, 1), "pair %d", k);
    }
    // A partial PyTorch set (no out_proj.*) does not stop a complete HF set.
    spec t[16];
    set_specs(MHSA_NAMES_TORCH, &wa, 1, t);   // keep in_proj_* only
    int n = 2 + set_specs(MHSA_NAMES_HF, &wb, 1, t + 2);
    const char *p = write_specs("two.safetensors", "attn.", t, n);
    ck_assert_int_eq(mhsa_block_load_safetensors(dst, p, "attn."), MHSA_OK);
    weights_get(dst, &wd);
    ck_assert(weights_eq(&wb, &wd, c.d_model, 1));
    // A complete PyTorch set with a wrong in_proj_bias beside a right HF
    // set: the PyTorch set is chosen and its shape error reported.
    n = set_specs(MHSA_NAMES_TORCH, &wa, 1, t);
    t[1].dims[0] -= 1;
    n += set_specs(MHSA_NAMES_HF, &wb, 1, t + n);
    p = write_specs("two.safetensors", "attn.", t, n);
    expect_load_error(dst, p, "tensor 'attn.in_proj_bias': expected shape "
                      "[48], found [47]");
    weights_free(&wa);
    weights_free(&wb);
    weights_free(&wd);
    mhsa_block_destroy(a);
    mhsa_block_destroy(b);
    mhsa_block_destroy(dst);
    tpath_remove();
}
END_TEST

// No complete set: the first missing PyTorch tensor, then what each
// partial set lacks (names after the prefix).
START_TEST(names_partial_set_names_missing)
{
    mhsa_config c = name_cfgs[0];
    mhsa_block *nb = random_block_cfg(&c, 600);
    c.bias = 1;
    mhsa_block *wb_blk = random_block_cfg(&c, 601);
    weights w = weights_alloc_kv(c.d_model, kv_rows_of(&c));
    weights_get(wb_blk, &w);
    spec t[16];

    // q_proj and k_proj only.
    set_specs(MHSA_NAMES_HF, &w, 0, t);
    const char *p = write_specs("p.safetensors", "attn.", t, 2);
    expect_load_error(nb, p, "tensor 'attn.in_proj_weight' not found; no "
                      "set of weight names is complete; the Hugging Face "
                      "set lacks v_proj.weight, o_proj.weight");
    // Every HF weight but no bias, into a block with biases.
    set_specs(MHSA_NAMES_HF, &w, 0, t);
    p = write_specs("p.safetensors", "attn.", t, 4);
    expect_load_error(wb_blk, p, "tensor 'attn.in_proj_weight' not found; "
                      "no set of weight names is complete; the Hugging Face "
                      "set lacks q_proj.bias, k_proj.bias, v_proj.bias, "
                      "o_proj.bias");
    // Two partial sets: both listed, PyTorch first.
    set_specs(MHSA_NAMES_TORCH, &w, 0, t);
    set_specs(MHSA_NAMES_C, &w, 0, t + 1);
    p = write_specs("p.safetensors", "attn.", t, 2);
    expect_load_error(nb, p, "tensor 'attn.out_proj.weight' not found; no "
                      "set of weight names is complete; the PyTorch set "
                      "lacks out_proj.weight; the GPT c_* set lacks "
                      "c_k.weight, c_v.weight, c_proj.weight");
    // Nothing of any set after this prefix (a whole set under another).
    int n = set_specs(MHSA_NAMES_C, &w, 1, t);
    for (int i = 0; i < n; i++)
        t[i].pre = "attn2.";
    p = write_specs("p.safetensors", "attn.", t, n);
    expect_load_error(wb_blk, p, "tensor 'attn.in_proj_weight' not found; "
                      "no set of weight names is complete");
    // Biases alone are no partial set of a no-bias block.
    n = set_specs(MHSA_NAMES_HF, &w, 1, t);
    p = write_specs("p.safetensors", "attn.", t + 1, 1);
    expect_load_error(nb, p, "tensor 'attn.in_proj_weight' not found; "
                      "no set of weight names is complete");
    weights_free(&w);
    mhsa_block_destroy(nb);
    mhsa_block_destroy(wb_blk);
    tpath_remove();
}
END_TEST

// A tensor of the chosen set with another shape: FORMAT naming it with
// the expected and found shapes.
START_TEST(names_wrong_shape_names_tensor)
{
    mhsa_config c = name_cfgs[0];   // D = 16
    c.bias = 1;
    mhsa_block *blk = random_block_cfg(&c, 700);
    weights w = weights_alloc_kv(c.d_model, kv_rows_of(&c));
    weights_get(blk, &w);
    spec t[8];
    int n = set_specs(MHSA_NAMES_HF, &w, 1, t);
    t[2].dims[0] = 8;   // k_proj.weight (8, 16): half the rows
    const char *p = write_specs("w.safetensors", "attn.", t, n);
    expect_load_error(blk, p, "tensor 'attn.k_proj.weight': expected shape "
                      "[16, 16], found [8, 16]");
    n = set_specs(MHSA_NAMES_C, &w, 1, t);
    t[7].dims[0] = 15;   // c_proj.bias
    p = write_specs("w.safetensors", "attn.", t, n);
    expect_load_error(blk, p, "tensor 'attn.c_proj.bias': expected shape "
                      "[16], found [15]");
    n = set_specs(MHSA_NAMES_TORCH, &w, 1, t);
    t[2].ndim = 1;       // out_proj.weight flattened
    t[2].dims[0] = 256;
    p = write_specs("w.safetensors", "attn.", t, n);
    expect_load_error(blk, p, "tensor 'attn.out_proj.weight': expected "
                      "shape [16, 16], found [256]");

    // A multi-head file into a grouped-query block (H = 4, Hkv = 1 and 2:
    // K and V of 4 and 8 rows), for every set: the first tensor whose
    // shape differs is named.
    for (int hkv = 1; hkv <= 2; hkv++) {
        mhsa_config g = c;
        g.n_kv_heads = hkv;
        mhsa_block *gb = random_block_cfg(&g, 701);
        char want[128];
        n = set_specs(MHSA_NAMES_TORCH, &w, 1, t);
        p = write_specs("w.safetensors", "attn.", t, n);
        snprintf(want, sizeof want, "tensor 'attn.in_proj_weight': expected "
                 "shape [%d, 16], found [48, 16]", 16 + 2 * 4 * hkv);
        expect_load_error(gb, p, want);
        for (int set = 1; set < 3; set++) {
            n = set_specs((mhsa_names)set, &w, 1, t);
            p = write_specs("w.safetensors", "attn.", t, n);
            snprintf(want, sizeof want, "tensor 'attn.%s': expected shape "
                     "[%d, 16], found [16, 16]", split_names[set - 1][2],
                     4 * hkv);
            expect_load_error(gb, p, want);
        }
        mhsa_block_destroy(gb);
    }
    weights_free(&w);
    mhsa_block_destroy(blk);
    tpath_remove();
}
END_TEST

// The Hugging Face set in F16 and BF16 (as checkpoints ship): converted
// exactly, the same bits as the rounded values saved as F32 PyTorch names.
START_TEST(names_hf_f16_bf16)
{
    static const char *const dt[8] = {"F16", "F16", "BF16", "BF16",
                                      "F16", "F32", "BF16", "F16"};
    for (int ci = 0; ci < N_NAME_CFGS; ci++) {
        mhsa_config c = name_cfgs[ci];
        c.bias = 1;
        size_t kv = kv_rows_of(&c);
        mhsa_block *a = random_block_cfg(&c, 800), *b = random_block_cfg(&c,
                                                                        801);
        weights w = weights_alloc_kv(c.d_model, kv);
        weights wd = weights_alloc_kv(c.d_model, kv);
        weights_get(a, &w);
        spec t[8];
        int n = set_specs(MHSA_NAMES_HF, &w, 1, t);
        for (int i = 0; i < n; i++) {   // the file's values, read back
            t[i].dtype = dt[i];
            size_t count = t[i].dims[0] * (t[i].ndim == 2 ? t[i].dims[1] : 1);
            float *v = (float *)(uintptr_t)t[i].data;
            for (size_t j = 0; j < count; j++)
                v[j] = round_to(dt[i], v[j]);
        }
        const char *p = write_specs("h.safetensors", "attn.", t, n);
        ck_assert_int_eq(mhsa_block_load_safetensors(b, p, "attn."),
                         MHSA_OK);
        weights_get(b, &wd);
        ck_assert(weights_eq(&w, &wd, c.d_model, 1));
        // Something was rounded (the check above is not vacuous).
        weights wa = weights_alloc_kv(c.d_model, kv);
        weights_get(a, &wa);
        ck_assert(!weights_eq(&wa, &wd, c.d_model, 1));
        // The same values as an F32 PyTorch file: the same bits.
        n = set_specs(MHSA_NAMES_TORCH, &w, 1, t);
        p = write_specs("t.safetensors", "", t, n);
        ck_assert_int_eq(mhsa_block_load_safetensors(a, p, ""), MHSA_OK);
        weights_get(a, &wa);
        ck_assert(weights_eq(&wa, &wd, c.d_model, 1));
        weights_free(&wa);
        weights_free(&w);
        weights_free(&wd);
        mhsa_block_destroy(a);
        mhsa_block_destroy(b);
    }
    tpath_remove();
}
END_TEST

START_TEST(names_save_ex_bad_arguments)
{
    mhsa_block *b = random_block(8, 2, 1, 900);
    const char *p = tpath("x.safetensors");
    ck_assert_int_eq(mhsa_block_save_safetensors_ex(b, p, "",
                                                    (mhsa_names)3),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "names = 3"));
    ck_assert_int_eq(mhsa_block_save_safetensors_ex(b, p, "",
                                                    (mhsa_names)-1),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "names = -1"));
    ck_assert_int_eq(mhsa_block_save_safetensors_ex(NULL, p, "",
                                                    MHSA_NAMES_HF),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_block_save_safetensors_ex(b, NULL, "",
                                                    MHSA_NAMES_HF),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(tpath_entries(), 0);
    ck_assert_int_eq(mhsa_block_save_safetensors_ex(b, tpath_dir(), "",
                                                    MHSA_NAMES_C),
                     MHSA_ERR_IO);
    mhsa_block_destroy(b);
    tpath_remove();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("file");
    tcase_add_test(tc, writer_reader_round_trip);
    tcase_add_test(tc, writer_rejects_bad_arguments);
    tcase_add_test(tc, writer_metadata_round_trip);
    tcase_add_test(tc, f16_conversion_exhaustive);
    tcase_add_test(tc, bf16_conversion);
    tcase_add_test(tc, read_f16_bf16_file);
    tcase_add_test(tc, other_dtypes_valid_but_not_readable);
    tcase_add_test(tc, corrupt_length_and_truncation);
    tcase_add_test(tc, corrupt_offsets);
    tcase_add_test(tc, corrupt_dtypes_and_shapes);
    tcase_add_test(tc, corrupt_json_and_names);
    tcase_add_test(tc, io_errors);
    suite_add_tcase(s, tc);
    TCase *tb = tcase_create("block");
    tcase_add_test(tb, block_round_trip_with_prefix);
    tcase_add_test(tb, block_shape_mismatch_names_tensor);
    tcase_add_test(tb, block_without_bias);
    tcase_add_test(tb, block_loads_f16_bf16);
    tcase_add_test(tb, block_load_errors_leave_weights);
    tcase_add_test(tb, block_alloc_failures);
    suite_add_tcase(s, tb);
    TCase *tn = tcase_create("names");
    tcase_add_test(tn, names_every_set_loads_same_bits);
    tcase_add_test(tn, names_save_ex_round_trip);
    tcase_add_test(tn, names_first_complete_set_wins);
    tcase_add_test(tn, names_partial_set_names_missing);
    tcase_add_test(tn, names_wrong_shape_names_tensor);
    tcase_add_test(tn, names_hf_f16_bf16);
    tcase_add_test(tn, names_save_ex_bad_arguments);
    suite_add_tcase(s, tn);
    return s;
}

int main(void) { return run_suite(suite()); }
