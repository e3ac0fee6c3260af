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

#include "alloc.h"
#include "mhsa.h"
#include "safetensors.h"
#include "util.h"

// ---- temporary files: one directory per (forked) test --------------------

static char tmp_dir[512];

// A path in the test's directory; the last 4 results stay valid.
static const char *tpath(const char *name)
{
    static char bufs[4][640];
    static int next;
    char *buf = bufs[next++ % 4];
    if (!tmp_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(tmp_dir, sizeof tmp_dir, "%s/mhsa-st-XXXXXX",
                 t && t[0] ? t : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
    }
    snprintf(buf, sizeof bufs[0], "%s/%s", tmp_dir, name);
    return buf;
}

// Number of entries in the temp dir (to see no temporary file is left).
static int tmp_entries(void)
{
    DIR *d = opendir(tmp_dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void cleanup(void)
{
    if (!tmp_dir[0])
        return;
    DIR *d = opendir(tmp_dir);
    struct dirent *e;
    char p[1024];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", tmp_dir, e->d_name);
        if (rmdir(p) != 0)
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(tmp_dir);
    tmp_dir[0] = '\0';
}

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
    ck_assert_int_eq(tmp_entries(), 1);

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
    ck_assert_int_eq(tmp_entries(), 1);
    ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__st_count(f), 1);
    mhsa__st_close(f);
    cleanup();
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
    ck_assert_int_eq(tmp_entries(), 0);
    // A directory, or a folder that does not exist: IO.
    mkdir(tpath("dir"), 0700);
    ck_assert_int_eq(mhsa__st_write_f32(tpath("dir"), dup, 1), MHSA_ERR_IO);
    ck_assert_int_eq(mhsa__st_write_f32(tpath("no/such/file"), dup, 1),
                     MHSA_ERR_IO);
    ck_assert_int_eq(tmp_entries(), 1);
    cleanup();
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
    ck_assert_int_eq(tmp_entries(), 0);
    cleanup();
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
    cleanup();
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
    cleanup();
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
    cleanup();
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
    cleanup();
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
    cleanup();
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
    cleanup();
}
END_TEST

START_TEST(io_errors)
{
    mkdir(tpath("d.safetensors"), 0700);
    expect_open(tpath("d.safetensors"), MHSA_ERR_IO, "directory");
    expect_open(tpath("missing.safetensors"), MHSA_ERR_IO, "missing");
    cleanup();
}
END_TEST

// ---- the block ------------------------------------------------------------

typedef struct weights { float *w_qkv, *b_qkv, *w_out, *b_out; } weights;

static weights weights_alloc(int D)
{
    weights w;
    w.w_qkv = calloc((size_t)3 * D * D, sizeof(float));
    w.b_qkv = calloc((size_t)3 * D, sizeof(float));
    w.w_out = calloc((size_t)D * D, sizeof(float));
    w.b_out = calloc((size_t)D, sizeof(float));
    return w;
}

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
    size_t d = (size_t)D;
    return !memcmp(a->w_qkv, b->w_qkv, 3 * d * d * sizeof(float)) &&
           !memcmp(a->w_out, b->w_out, d * d * sizeof(float)) &&
           (!bias || (!memcmp(a->b_qkv, b->b_qkv, 3 * d * sizeof(float)) &&
                      !memcmp(a->b_out, b->b_out, d * sizeof(float))));
}

static mhsa_block *random_block(int D, int H, int bias, uint64_t seed)
{
    mhsa_config cfg = {.d_model = D, .n_heads = H, .max_seq_len = 8,
                       .causal = 1, .bias = bias};
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    weights w = weights_alloc(D);
    rng r = {seed};
    fill_uniform(&r, w.w_qkv, (size_t)3 * D * D, -1, 1);
    fill_uniform(&r, w.b_qkv, (size_t)3 * D, -1, 1);
    fill_uniform(&r, w.w_out, (size_t)D * D, -1, 1);
    fill_uniform(&r, w.b_out, (size_t)D, -1, 1);
    ck_assert_int_eq(mhsa_block_set_weights(blk, w.w_qkv, w.b_qkv, w.w_out,
                                            w.b_out), MHSA_OK);
    weights_free(&w);
    return blk;
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
    ck_assert_int_eq(tmp_entries(), 1);

    weights_free(&wa);
    weights_free(&wb);
    weights_free(&wc);
    mhsa_block_destroy(a);
    mhsa_block_destroy(b);
    cleanup();
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
    cleanup();
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
    cleanup();
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
    cleanup();
}
END_TEST

// A valid file whose in_proj_weight has an integer dtype, and corrupt files:
// FORMAT, block unchanged.
START_TEST(block_load_errors_leave_weights)
{
    const int D = 2;
    mhsa_block *b = random_block(D, 1, 1, 9);
    weights w0 = weights_alloc(D), w1 = weights_alloc(D);
    weights_get(b, &w0);
    static const unsigned char z[64];
    const char *p = write_raw("i.safetensors", UINT64_MAX,
        "{\"in_proj_weight\":{\"dtype\":\"I32\",\"shape\":[6,2],"
        "\"data_offsets\":[0,48]}}", z, 48);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "I32"));
    p = write_raw("t.safetensors", UINT64_MAX,
        "{\"in_proj_weight\":{\"dtype\":\"F32\",\"shape\":[6,2],"
        "\"data_offsets\":[0,48]}}", z, 40);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, p, ""), MHSA_ERR_FORMAT);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, tpath("none"), ""),
                     MHSA_ERR_IO);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, tmp_dir, ""),
                     MHSA_ERR_IO);
    ck_assert_int_eq(mhsa_block_load_safetensors(NULL, p, ""),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_block_load_safetensors(b, NULL, ""),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_block_save_safetensors(b, tmp_dir, ""),
                     MHSA_ERR_IO);
    weights_get(b, &w1);
    ck_assert(weights_eq(&w0, &w1, D, 1));
    weights_free(&w0);
    weights_free(&w1);
    mhsa_block_destroy(b);
    cleanup();
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
    ck_assert_int_eq(tmp_entries(), 1);
    weights_free(&w0);
    weights_free(&w1);
    mhsa_block_destroy(a);
    mhsa_block_destroy(b);
    cleanup();
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
    return s;
}

int main(void) { return run_suite(suite()); }
