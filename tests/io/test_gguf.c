// test_gguf.c — the GGUF reader (src/models/gguf/gguf.h): every metadata type round
// trip in versions 2 and 3, every readable tensor type dequantized against
// an independent implementation here and against values worked out by
// hand, the dims order, and malformed files (truncated at every byte, and
// one defect at a time) that must give MHSA_ERR_FORMAT with a message
// naming the key or tensor, never a crash or a big allocation. Files are
// built by tests/gguf_writer.c.
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "models/gguf/gguf.h"
#include "io/safetensors.h"
#include "gguf_writer.h"
#include "util.h"
#include "tmpdir.h"

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR,
       T_ARR, T_U64, T_I64, T_F64 };   // GGUF value types, as numbered

// Saves w and opens it.
static mhsa_status open_gw(const gw *w, mhsa_gguf_file **f)
{
    const char *p = tpath("t.gguf");
    ck_assert_int_eq(gw_save(w, p), 0);
    *f = NULL;
    return mhsa__gguf_open(p, f);
}

// w must be refused with MHSA_ERR_FORMAT and a message holding each of
// the (up to two) needles.
static void expect_format(gw *w, const char *needle, const char *needle2)
{
    mhsa_gguf_file *f = NULL;
    mhsa_status s = open_gw(w, &f);
    if (s != MHSA_ERR_FORMAT || !strstr(mhsa_last_error(), needle) ||
        (needle2 && !strstr(mhsa_last_error(), needle2)))
        ck_abort_msg("expected FORMAT with '%s'%s%s, got %s: %s", needle,
                     needle2 ? " and " : "", needle2 ? needle2 : "",
                     mhsa_status_str(s), mhsa_last_error());
    ck_assert_ptr_null(f);
    gw_free(w);
}

// ---- an independent reference: IEEE half and the block formats ----------

static float ref_f16(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                 : ldexp(m + 1024, e - 25);
    return (float)(h & 0x8000 ? -v : v);
}

static float ref_bf16(uint16_t h)
{
    int e = (h >> 7) & 255, m = h & 127;
    double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY)
                                                   : ldexp(m + 128, e - 134);
    return (float)(h & 0x8000 ? -v : v);
}

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static int as_i8(unsigned char c)
{
    return c < 128 ? c : c - 256;
}

// The k-quants' sixteen 6-bit scales of Q3_K (offset 32 left on): scale s
// is the 6-bit number whose low 4 bits are nibble s / 8 of byte s % 8 and
// whose high 2 bits are bit pair s / 4 of byte 8 + s % 4.
static int ref_q3k_scale(const unsigned char *sc, size_t s)
{
    int lo = (sc[s % 8] >> (4 * (s / 8))) & 15;
    int hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    return 16 * hi + lo;
}

// Q4_K's and Q5_K's eight 6-bit (scale, min) pairs: for s < 4 the low 6
// bits of bytes s and s + 4; else the nibbles of byte s + 4 (scale low,
// min high) under the top bit pairs of bytes s - 4 (scale) and s (min).
static void ref_k4_scale(const unsigned char *sc, size_t s, int *scale,
                         int *min)
{
    if (s < 4) {
        *scale = sc[s] % 64;
        *min = sc[s + 4] % 64;
    } else {
        *scale = sc[s + 4] % 16 + 16 * (sc[s - 4] / 64);
        *min = sc[s + 4] / 16 + 16 * (sc[s] / 64);
    }
}

// IQ4_NL's 16 levels (ggml's kvalues_iq4nl, ggml-common.h): the
// nonuniform grid its 4-bit indices pick from.
static int ref_iq4_level(int k)
{
    static const int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};
    return levels[k];
}

// Element i of a k-quant or IQ4_XS tensor (256 a block): position
// j = i % 256 of block i / 256, in sub-block j / 16 (Q2_K, Q3_K, Q6_K) or
// j / 32 (Q4_K, Q5_K, IQ4_XS); 2-bit fields: bit pair (j % 128) / 32 of
// byte 32 (j / 128) + j % 32.
static float ref_kquant(uint32_t type, const unsigned char *p, size_t i)
{
    size_t b = i / 256, j = i % 256, l = j % 32, pair = (j % 128) / 32;
    size_t half = j / 128;
    switch (type) {
    case MHSA_GGML_Q2_K: {
        const unsigned char *blk = p + 84 * b;
        int sc = blk[j / 16], q = (blk[16 + 32 * half + l] >> (2 * pair)) & 3;
        float dl = ref_f16(rd16(blk + 80)) * (float)(sc % 16);
        float ml = ref_f16(rd16(blk + 82)) * (float)(sc / 16);
        float prod = dl * (float)q;
        return prod - ml;
    }
    case MHSA_GGML_Q3_K: {
        const unsigned char *blk = p + 110 * b;
        int q = (blk[32 + 32 * half + l] >> (2 * pair)) & 3;
        if (!((blk[l] >> (j / 32)) & 1))   // hmask bit j / 32 clear: -4
            q -= 4;
        float dl = ref_f16(rd16(blk + 108)) *
                   (float)(ref_q3k_scale(blk + 96, j / 16) - 32);
        return dl * (float)q;
    }
    case MHSA_GGML_Q4_K:
    case MHSA_GGML_Q5_K: {
        int five = type == MHSA_GGML_Q5_K;
        const unsigned char *blk = p + (five ? 176 : 144) * b;
        size_t s = j / 32;
        int byte = blk[(five ? 48 : 16) + 32 * (s / 2) + l];
        int q = s % 2 ? byte >> 4 : byte & 15;
        if (five && ((blk[16 + l] >> s) & 1))
            q += 16;
        int sc, mn;
        ref_k4_scale(blk + 4, s, &sc, &mn);
        float dl = ref_f16(rd16(blk)) * (float)sc;
        float ml = ref_f16(rd16(blk + 2)) * (float)mn;
        float prod = dl * (float)q;
        return prod - ml;
    }
    case MHSA_GGML_IQ4_XS: {
        const unsigned char *blk = p + 136 * b;
        size_t s = j / 32;   // sub-blocks of 32 in IQ4_NL's nibble order
        int byte = blk[8 + 16 * s + j % 16];
        int scale = (blk[4 + s / 2] >> (4 * (s % 2))) % 16 +
                    16 * ((rd16(blk + 2) >> (2 * s)) % 4);
        float dl = ref_f16(rd16(blk)) * (float)(scale - 32);
        return dl * (float)ref_iq4_level(l < 16 ? byte % 16 : byte / 16);
    }
    case MHSA_GGML_Q6_K: {
        const unsigned char *blk = p + 210 * b;
        int byte = blk[64 * half + 32 * (pair % 2) + l];
        int lo = pair < 2 ? byte & 15 : byte >> 4;
        int hi = (blk[128 + 32 * half + l] >> (2 * pair)) & 3;
        float dl = ref_f16(rd16(blk + 208)) * (float)as_i8(blk[192 + j / 16]);
        return dl * (float)(lo + 16 * hi - 32);
    }
    }
    ck_abort_msg("no k-quant reference for type %u", type);
    return 0;
}

// Element i of a tensor of `type` whose bytes are at p, as ggml defines
// it: block i / 32, position j = i % 32 within it; in the 4-bit types the
// first 16 positions are the low nibbles of the 16 bytes, and in the
// 5-bit ones bit j of qh is position j's fifth bit.
static float ref_elem(uint32_t type, const unsigned char *p, size_t i)
{
    size_t b = i / 32, j = i % 32;
    switch (type) {
    case MHSA_GGML_F32: {
        uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                     (uint32_t)p[4 * i + 2] << 16 |
                     (uint32_t)p[4 * i + 3] << 24;
        float x;
        memcpy(&x, &u, sizeof x);
        return x;
    }
    case MHSA_GGML_F16: return ref_f16(rd16(p + 2 * i));
    case MHSA_GGML_BF16: return ref_bf16(rd16(p + 2 * i));
    case MHSA_GGML_Q4_0: {
        const unsigned char *blk = p + 18 * b;
        int byte = blk[2 + j % 16];
        int q = j < 16 ? byte & 15 : byte >> 4;
        return (float)(q - 8) * ref_f16(rd16(blk));
    }
    case MHSA_GGML_Q4_1: {
        const unsigned char *blk = p + 20 * b;
        int byte = blk[4 + j % 16];
        int q = j < 16 ? byte & 15 : byte >> 4;
        float prod = (float)q * ref_f16(rd16(blk));
        return prod + ref_f16(rd16(blk + 2));
    }
    case MHSA_GGML_Q5_0:
    case MHSA_GGML_Q5_1: {
        int one = type == MHSA_GGML_Q5_1;
        const unsigned char *blk = p + (one ? 24 : 22) * b;
        const unsigned char *qs = blk + (one ? 8 : 6);
        int q = (j < 16 ? qs[j] & 15 : qs[j - 16] >> 4) +
                16 * (int)((rd32(blk + (one ? 4 : 2)) >> j) & 1);
        if (!one)
            return (float)(q - 16) * ref_f16(rd16(blk));
        float prod = (float)q * ref_f16(rd16(blk));
        return prod + ref_f16(rd16(blk + 2));
    }
    case MHSA_GGML_Q8_0: {
        const unsigned char *blk = p + 34 * b;
        signed char q;
        memcpy(&q, blk + 2 + j, 1);
        return (float)q * ref_f16(rd16(blk));
    }
    case MHSA_GGML_IQ4_NL: {
        const unsigned char *blk = p + 18 * b;
        int byte = blk[2 + j % 16];
        return ref_f16(rd16(blk)) * (float)ref_iq4_level(j < 16 ? byte % 16
                                                               : byte / 16);
    }
    case MHSA_GGML_Q2_K:
    case MHSA_GGML_Q3_K:
    case MHSA_GGML_Q4_K:
    case MHSA_GGML_Q5_K:
    case MHSA_GGML_Q6_K:
    case MHSA_GGML_IQ4_XS:
        return ref_kquant(type, p, i);
    }
    ck_abort_msg("no reference for type %u", type);
    return 0;
}

// The block size in elements and bytes of `type`, and where its f16
// scales sit in a block (up to two; -1: none).
typedef struct ref_block {
    uint32_t type;
    size_t elems, bytes;
    int scale[2];
} ref_block;

static const ref_block ref_blocks[] = {
    {MHSA_GGML_F32, 1, 4, {-1, -1}},     {MHSA_GGML_F16, 1, 2, {-1, -1}},
    {MHSA_GGML_BF16, 1, 2, {-1, -1}},    {MHSA_GGML_Q4_0, 32, 18, {0, -1}},
    {MHSA_GGML_Q4_1, 32, 20, {0, 2}},    {MHSA_GGML_Q5_0, 32, 22, {0, -1}},
    {MHSA_GGML_Q5_1, 32, 24, {0, 2}},    {MHSA_GGML_Q8_0, 32, 34, {0, -1}},
    {MHSA_GGML_Q2_K, 256, 84, {80, 82}}, {MHSA_GGML_Q3_K, 256, 110, {108, -1}},
    {MHSA_GGML_Q4_K, 256, 144, {0, 2}},  {MHSA_GGML_Q5_K, 256, 176, {0, 2}},
    {MHSA_GGML_Q6_K, 256, 210, {208, -1}},
    {MHSA_GGML_IQ4_NL, 32, 18, {0, -1}}, {MHSA_GGML_IQ4_XS, 256, 136, {0, -1}},
};

static const ref_block *ref_block_of(uint32_t type)
{
    for (size_t k = 0; k < sizeof ref_blocks / sizeof ref_blocks[0]; k++)
        if (ref_blocks[k].type == type)
            return &ref_blocks[k];
    ck_abort_msg("no block size for type %u", type);
    return NULL;
}

// Random bytes for n elements of `type`, with finite f16 scales (random
// sign, exponent 0..30, mantissa) so results compare bit for bit.
static size_t fill_tensor(rng *r, uint32_t type, size_t n, unsigned char *p)
{
    const ref_block *rb = ref_block_of(type);
    size_t bytes = n / rb->elems * rb->bytes;
    for (size_t i = 0; i < bytes; i++)
        p[i] = (unsigned char)rng_u64(r);
    for (size_t b = 0; rb->elems > 1 && b < n / rb->elems; b++)
        for (int k = 0; k < 2 && rb->scale[k] >= 0; k++) {
            unsigned char *hi = p + b * rb->bytes + rb->scale[k] + 1;
            *hi = (unsigned char)((*hi & 0x83) | (rng_u64(r) % 31) << 2);
        }
    if (type == MHSA_GGML_F32)   // no NaN/inf: exponent below 255
        for (size_t i = 0; i < n; i++)
            p[4 * i + 3] &= 0xbf;
    if (type == MHSA_GGML_F16)
        for (size_t i = 0; i < n; i++)
            p[2 * i + 1] &= 0xbf;
    if (type == MHSA_GGML_BF16)
        for (size_t i = 0; i < n; i++)
            p[2 * i + 1] &= 0xbf;
    return bytes;
}

// ---- metadata -------------------------------------------------------------

// Every value type as a scalar and as an array, strings with a NUL and
// UTF-8 inside, empty values, arrays of arrays (of strings too).
static void write_all_metadata(gw *w, uint32_t version)
{
    gw_header(w, version, 0, 28);
    gw_key(w, "t.u8", T_U8);     gw_u8(w, 200);
    gw_key(w, "t.i8", T_I8);     gw_u8(w, (uint8_t)-100);
    gw_key(w, "t.u16", T_U16);   gw_u16(w, 60000);
    gw_key(w, "t.i16", T_I16);   gw_u16(w, (uint16_t)-30000);
    gw_key(w, "t.u32", T_U32);   gw_u32(w, 4000000000u);
    gw_key(w, "t.i32", T_I32);   gw_u32(w, (uint32_t)-2000000000);
    gw_key(w, "t.f32", T_F32);   gw_f32(w, 3.25f);
    gw_key(w, "t.bool", T_BOOL); gw_u8(w, 1);
    gw_key(w, "t.str", T_STR);   gw_str(w, "h\xc3\xa9llo \xf0\x9f\x98\x80");
    gw_key(w, "t.u64", T_U64);   gw_u64(w, ((uint64_t)1 << 63) + 5);
    gw_key(w, "t.i64", T_I64);   gw_u64(w, (uint64_t)-((int64_t)1 << 62) - 3);
    gw_key(w, "t.f64", T_F64);   gw_f64(w, 1.0 / 3.0);
    gw_key(w, "t.nul", T_STR);   gw_strn(w, "a\0b", 3);
    gw_key(w, "t.empty", T_STR); gw_str(w, "");
    gw_key(w, "a.u8", T_ARR);    gw_arr(w, T_U8, 3);
    gw_u8(w, 1); gw_u8(w, 2); gw_u8(w, 255);
    gw_key(w, "a.i16", T_ARR);   gw_arr(w, T_I16, 2);
    gw_u16(w, (uint16_t)-32768); gw_u16(w, 32767);
    gw_key(w, "a.i32", T_ARR);   gw_arr(w, T_I32, 2);
    gw_u32(w, (uint32_t)INT32_MIN); gw_u32(w, 7);
    gw_key(w, "a.f32", T_ARR);   gw_arr(w, T_F32, 2);
    gw_f32(w, 1.5f); gw_f32(w, -0.0f);
    gw_key(w, "a.bool", T_ARR);  gw_arr(w, T_BOOL, 3);
    gw_u8(w, 1); gw_u8(w, 0); gw_u8(w, 1);
    gw_key(w, "a.i8", T_ARR);    gw_arr(w, T_I8, 2);
    gw_u8(w, 0x80); gw_u8(w, 0x7f);
    gw_key(w, "a.u16", T_ARR);   gw_arr(w, T_U16, 1); gw_u16(w, 65535);
    gw_key(w, "a.u32", T_ARR);   gw_arr(w, T_U32, 1); gw_u32(w, 4000000000u);
    gw_key(w, "a.u64", T_ARR);   gw_arr(w, T_U64, 1); gw_u64(w, UINT64_MAX);
    gw_key(w, "a.i64", T_ARR);   gw_arr(w, T_I64, 1);
    gw_u64(w, (uint64_t)INT64_MIN);
    gw_key(w, "a.f64", T_ARR);   gw_arr(w, T_F64, 1); gw_f64(w, 1e300);
    gw_key(w, "a.str", T_ARR);   gw_arr(w, T_STR, 3);
    gw_str(w, "a"); gw_str(w, ""); gw_str(w, "u\xcc\x88\xf0\x9f\x98\x80");
    gw_key(w, "a.empty", T_ARR); gw_arr(w, T_U32, 0);
    gw_key(w, "a.nested", T_ARR); gw_arr(w, T_ARR, 3);
    gw_arr(w, T_U16, 2); gw_u16(w, 1); gw_u16(w, 2);
    gw_arr(w, T_STR, 1); gw_str(w, "x");
    gw_arr(w, T_ARR, 1); gw_arr(w, T_F64, 1); gw_f64(w, -2.5);
}

START_TEST(metadata_round_trip)
{
    gw w = {0};
    uint32_t version = (uint32_t)_i + 2;   // 2 and 3
    write_all_metadata(&w, version);
    mhsa_gguf_file *f;
    ck_assert_int_eq(open_gw(&w, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__gguf_version(f), version);
    ck_assert_uint_eq(mhsa__gguf_alignment(f), 32);
    ck_assert_uint_eq(mhsa__gguf_kv_count(f), 28);
    ck_assert_str_eq(mhsa__gguf_kv_key(f, 0), "t.u8");
    ck_assert_str_eq(mhsa__gguf_kv_key(f, 27), "a.nested");
    ck_assert_ptr_null(mhsa__gguf_kv_key(f, 28));
    ck_assert_uint_eq(mhsa__gguf_tensor_count(f), 0);

    // Every scalar through mhsa__gguf_val_num, exactly.
    static const struct { const char *key; int type; long double v; } nums[]
        = {{"t.u8", T_U8, 200}, {"t.i8", T_I8, -100}, {"t.u16", T_U16, 60000},
           {"t.i16", T_I16, -30000}, {"t.u32", T_U32, 4000000000.0L},
           {"t.i32", T_I32, -2000000000.0L}, {"t.f32", T_F32, 3.25},
           {"t.bool", T_BOOL, 1}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        const mhsa_gguf_val *v = mhsa__gguf_find(f, nums[i].key);
        mhsa_gguf_num n;
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(mhsa__gguf_val_type(v), nums[i].type);
        ck_assert_int_eq(mhsa__gguf_val_num(v, &n), MHSA_OK);
        long double got = (int)n.type == T_F32 ? (long double)n.as.f
                        : (int)n.type == T_I8 || (int)n.type == T_I16 ||
                          (int)n.type == T_I32 ? (long double)n.as.i
                                          : (long double)n.as.u;
        ck_assert_msg(got == nums[i].v, "%s", nums[i].key);
    }
    mhsa_gguf_num n;
    ck_assert_int_eq(mhsa__gguf_val_num(mhsa__gguf_find(f, "t.u64"), &n), 0);
    ck_assert_uint_eq(n.as.u, ((uint64_t)1 << 63) + 5);
    ck_assert_int_eq(mhsa__gguf_val_num(mhsa__gguf_find(f, "t.i64"), &n), 0);
    ck_assert_int_eq(n.as.i, -((int64_t)1 << 62) - 3);
    ck_assert_int_eq(mhsa__gguf_val_num(mhsa__gguf_find(f, "t.f64"), &n), 0);
    ck_assert(n.as.f == 1.0 / 3.0);

    // The typed getters, and their errors.
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    float f32;
    int b;
    const char *s;
    size_t len;
    ck_assert_int_eq(mhsa__gguf_get_u32(f, "t.u32", &u32), MHSA_OK);
    ck_assert_uint_eq(u32, 4000000000u);
    ck_assert_int_eq(mhsa__gguf_get_i32(f, "t.i32", &i32), MHSA_OK);
    ck_assert_int_eq(i32, -2000000000);
    ck_assert_int_eq(mhsa__gguf_get_u64(f, "t.u64", &u64), MHSA_OK);
    ck_assert_uint_eq(u64, ((uint64_t)1 << 63) + 5);
    ck_assert_int_eq(mhsa__gguf_get_f32(f, "t.f32", &f32), MHSA_OK);
    ck_assert(f32 == 3.25f);
    ck_assert_int_eq(mhsa__gguf_get_bool(f, "t.bool", &b), MHSA_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(mhsa__gguf_get_str(f, "t.str", &s, &len), MHSA_OK);
    ck_assert_str_eq(s, "h\xc3\xa9llo \xf0\x9f\x98\x80");
    ck_assert_uint_eq(len, 11);
    ck_assert_int_eq(mhsa__gguf_get_str(f, "t.nul", &s, &len), MHSA_OK);
    ck_assert_uint_eq(len, 3);
    ck_assert(!memcmp(s, "a\0b", 4));
    ck_assert_int_eq(mhsa__gguf_get_str(f, "t.empty", &s, &len), MHSA_OK);
    ck_assert_str_eq(s, "");
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(mhsa__gguf_get_u32(f, "t.i32", &u32), MHSA_ERR_FORMAT);
    ck_assert_str_eq(mhsa_last_error(), "key 't.i32' is i32, expected u32");
    ck_assert_int_eq(mhsa__gguf_get_str(f, "t.u8", &s, &len),
                     MHSA_ERR_FORMAT);
    ck_assert_str_eq(mhsa_last_error(), "key 't.u8' is u8, expected string");
    ck_assert_int_eq(mhsa__gguf_get_f32(f, "nope", &f32), MHSA_ERR_FORMAT);
    ck_assert_str_eq(mhsa_last_error(), "key 'nope' not found");
    ck_assert_ptr_null(mhsa__gguf_find(f, "t.u"));
    ck_assert_ptr_null(mhsa__gguf_find(f, "t.u88"));

    // Arrays: numbers of each width, strings, empty, nested.
    const mhsa_gguf_val *a;
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.u8", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_type(a), T_U8);
    ck_assert_uint_eq(mhsa__gguf_arr_count(a), 3);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 2, &n), MHSA_OK);
    ck_assert_uint_eq(n.as.u, 255);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 3, &n), MHSA_ERR_FORMAT);
    ck_assert_str_eq(mhsa_last_error(),
                     "key 'a.u8': element 3 of an array of 3");
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.i16", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_OK);
    ck_assert_int_eq(n.as.i, -32768);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 1, &n), MHSA_OK);
    ck_assert_int_eq(n.as.i, 32767);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.i32", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_OK);
    ck_assert_int_eq(n.as.i, INT32_MIN);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.f32", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 1, &n), MHSA_OK);
    ck_assert(n.as.f == 0 && signbit(n.as.f));
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.bool", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 1, &n), MHSA_OK);
    ck_assert_uint_eq(n.as.u, 0);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.i8", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_OK);
    ck_assert_int_eq(n.as.i, -128);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 1, &n), MHSA_OK);
    ck_assert_int_eq(n.as.i, 127);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.u16", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_OK);
    ck_assert_uint_eq(n.as.u, 65535);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.u32", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_OK);
    ck_assert_uint_eq(n.as.u, 4000000000u);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.u64", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_OK);
    ck_assert_uint_eq(n.as.u, UINT64_MAX);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.i64", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_OK);
    ck_assert_int_eq(n.as.i, INT64_MIN);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.f64", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_OK);
    ck_assert(n.as.f == 1e300 && (int)n.type == T_F64);

    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.str", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_type(a), T_STR);
    ck_assert_int_eq(mhsa__gguf_arr_str(a, 0, &s, &len), MHSA_OK);
    ck_assert_str_eq(s, "a");
    ck_assert_int_eq(mhsa__gguf_arr_str(a, 1, &s, &len), MHSA_OK);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(mhsa__gguf_arr_str(a, 2, &s, &len), MHSA_OK);
    ck_assert_str_eq(s, "u\xcc\x88\xf0\x9f\x98\x80");
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_ERR_FORMAT);
    ck_assert_str_eq(mhsa_last_error(),
                     "key 'a.str': array of string, not an array of "
                     "numbers");
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.empty", &a), MHSA_OK);
    ck_assert_uint_eq(mhsa__gguf_arr_count(a), 0);
    ck_assert_int_eq(mhsa__gguf_arr_num(a, 0, &n), MHSA_ERR_FORMAT);

    ck_assert_int_eq(mhsa__gguf_get_arr(f, "a.nested", &a), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_type(a), T_ARR);
    ck_assert_uint_eq(mhsa__gguf_arr_count(a), 3);
    const mhsa_gguf_val *sub, *sub2;
    ck_assert_int_eq(mhsa__gguf_arr_arr(a, 0, &sub), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_type(sub), T_U16);
    ck_assert_int_eq(mhsa__gguf_arr_num(sub, 1, &n), MHSA_OK);
    ck_assert_uint_eq(n.as.u, 2);
    ck_assert_int_eq(mhsa__gguf_arr_arr(a, 1, &sub), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_str(sub, 0, &s, &len), MHSA_OK);
    ck_assert_str_eq(s, "x");
    ck_assert_int_eq(mhsa__gguf_arr_arr(a, 2, &sub), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_arr(sub, 0, &sub2), MHSA_OK);
    ck_assert_int_eq(mhsa__gguf_arr_num(sub2, 0, &n), MHSA_OK);
    ck_assert(n.as.f == -2.5);
    ck_assert_int_eq(mhsa__gguf_arr_arr(a, 3, &sub), MHSA_ERR_FORMAT);
    ck_assert_int_eq(mhsa__gguf_get_arr(f, "t.u8", &a), MHSA_ERR_FORMAT);
    ck_assert_int_eq(mhsa__gguf_arr_type(mhsa__gguf_find(f, "t.u8")), -1);
    mhsa__gguf_close(f);
    gw_free(&w);
    tpath_remove();
}
END_TEST

// ---- tensors --------------------------------------------------------------

static const uint32_t readable[] = {
    MHSA_GGML_F32,  MHSA_GGML_F16,  MHSA_GGML_BF16, MHSA_GGML_Q4_0,
    MHSA_GGML_Q4_1, MHSA_GGML_Q8_0, MHSA_GGML_Q5_0, MHSA_GGML_Q5_1,
    MHSA_GGML_Q2_K, MHSA_GGML_Q3_K, MHSA_GGML_Q4_K, MHSA_GGML_Q5_K,
    MHSA_GGML_Q6_K, MHSA_GGML_IQ4_NL, MHSA_GGML_IQ4_XS,
};
enum { N_READABLE = sizeof readable / sizeof readable[0] };

// A file with one tensor of each readable type (random bytes; ne as given)
// plus a q8_K one (a type that opens but is not read), at alignment
// `align`; the data copies stay in bytes[].
typedef struct tfile {
    gw w;
    unsigned char bytes[N_READABLE][4096];
    size_t nbytes[N_READABLE];
    uint64_t ne[N_READABLE][4];
    uint32_t nd[N_READABLE];
} tfile;

static const char *const tnames[N_READABLE] = {
    "t.f32", "t.f16", "t.bf16", "blk.0.q4_0", "blk.0.q4_1", "token_embd.q8",
    "t.q5_0", "t.q5_1", "t.q2_k", "t.q3_k", "t.q4_k", "t.q5_k", "t.q6_k",
    "t.iq4_nl", "t.iq4_xs",
};

static void write_tensors(tfile *tf, uint32_t align, uint64_t seed)
{
    rng r = {seed};
    gw_tensor t[N_READABLE + 1];
    static unsigned char q8k[292];
    gw_header(&tf->w, 3, N_READABLE + 1, align == 32 ? 1 : 2);
    gw_key(&tf->w, "general.name", T_STR);
    gw_str(&tf->w, "tensors");
    if (align != 32) {
        gw_key(&tf->w, "general.alignment", T_U32);
        gw_u32(&tf->w, align);
    }
    for (int k = 0; k < N_READABLE; k++) {
        // Shapes of 1 to 4 dims, rows a multiple of the type's block.
        static const uint64_t shapes[N_READABLE][4] = {
            {3, 1, 1, 1},   {32, 3, 1, 1},  {5, 2, 3, 1},   {64, 3, 1, 1},
            {32, 2, 2, 2},  {96, 4, 1, 1},  {32, 5, 1, 1},  {64, 1, 3, 1},
            {256, 2, 1, 1}, {512, 1, 1, 1}, {256, 3, 1, 1}, {256, 1, 2, 1},
            {768, 2, 1, 1}, {32, 7, 1, 1},  {256, 1, 1, 3},
        };
        static const uint32_t nds[N_READABLE] = {1, 2, 3, 2, 4, 2, 2, 3,
                                                 2, 1, 2, 3, 2, 2, 4};
        tf->nd[k] = nds[k];
        uint64_t numel = 1;
        for (uint32_t d = 0; d < nds[k]; d++) {
            tf->ne[k][d] = shapes[k][d];
            numel *= shapes[k][d];
        }
        tf->nbytes[k] = fill_tensor(&r, readable[k], (size_t)numel,
                                    tf->bytes[k]);
        t[k] = (gw_tensor){tnames[k], nds[k], {0}, readable[k],
                           tf->bytes[k], tf->nbytes[k]};
        memcpy(t[k].ne, tf->ne[k], sizeof t[k].ne);
    }
    t[N_READABLE] = (gw_tensor){"t.q8_k", 1, {256}, 15, q8k, sizeof q8k};
    gw_tensors(&tf->w, t, N_READABLE + 1, align);
}

// Every readable type against ref_elem, bit for bit, at alignments 32 and
// 1 and 256; the reported shape is ne reversed.
START_TEST(tensors_match_reference)
{
    static const uint32_t aligns[] = {32, 1, 256};
    static tfile tf;
    memset(&tf, 0, sizeof tf);
    write_tensors(&tf, aligns[_i], 7 + (uint64_t)_i);
    mhsa_gguf_file *f;
    ck_assert_int_eq(open_gw(&tf.w, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__gguf_alignment(f), aligns[_i]);
    ck_assert_uint_eq(mhsa__gguf_data_offset(f) % aligns[_i], 0);
    ck_assert_uint_eq(mhsa__gguf_tensor_count(f), N_READABLE + 1);
    for (int k = 0; k < N_READABLE; k++) {
        const mhsa_gguf_tensor *t = mhsa__gguf_tensor(f, tnames[k]);
        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_eq(t, mhsa__gguf_tensor_at(f, (size_t)k));
        ck_assert_str_eq(t->name, tnames[k]);
        ck_assert_uint_eq(t->type, readable[k]);
        ck_assert_int_eq(t->n_dims, (int)tf.nd[k]);
        ck_assert_uint_eq(t->bytes, tf.nbytes[k]);
        size_t dims[4];
        for (int d = 0; d < t->n_dims; d++) {
            dims[d] = tf.ne[k][t->n_dims - 1 - d];
            ck_assert_uint_eq(t->dims[d], dims[d]);
        }
        // The bytes are where the info says.
        ck_assert(!memcmp(tf.w.p + mhsa__gguf_data_offset(f) + t->offset,
                          tf.bytes[k], tf.nbytes[k]));
        float got[2048], want[2048];
        ck_assert_uint_le(t->numel, 2048);
        ck_assert_int_eq(mhsa__gguf_read_f32(f, tnames[k], t->n_dims, dims,
                                             got), MHSA_OK);
        for (size_t i = 0; i < t->numel; i++)
            want[i] = ref_elem(readable[k], tf.bytes[k], i);
        for (size_t i = 0; i < t->numel; i++)
            ck_assert_msg(!memcmp(&got[i], &want[i], sizeof got[i]),
                          "%s element %zu: %a, expected %a", tnames[k], i,
                          (double)got[i], (double)want[i]);
    }
    // q8_K (ggml's intermediate for its dot products, never a model's
    // weights) is a valid tensor that cannot be read as fp32.
    const mhsa_gguf_tensor *q8k = mhsa__gguf_tensor(f, "t.q8_k");
    ck_assert_ptr_nonnull(q8k);
    ck_assert_str_eq(q8k->type_name, "q8_K");
    size_t d256 = 256;
    float out[256];
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "t.q8_k", 1, &d256, out),
                     MHSA_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "tensor 't.q8_k': type "
                                 "q8_K (15) cannot be read as fp32"));
    // Shape and name errors.
    size_t wrong[2] = {32, 3};   // t.f16's ne order; its dims are {3, 32}
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "t.f16", 2, wrong, out),
                     MHSA_ERR_FORMAT);
    ck_assert_str_eq(mhsa_last_error(), "tensor 't.f16': expected shape "
                     "[32, 3], found [3, 32]");
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "t.f1", 2, wrong, out),
                     MHSA_ERR_FORMAT);
    ck_assert_str_eq(mhsa_last_error(), "tensor 't.f1' not found");
    ck_assert_ptr_null(mhsa__gguf_tensor(f, "zzz"));
    mhsa__gguf_close(f);
    gw_free(&tf.w);
    tpath_remove();
}
END_TEST

// Blocks whose values are worked out by hand from ggml's definitions.
START_TEST(dequant_hand_values)
{
    unsigned char q40[18] = {0x00, 0x38};            // d = 0.5
    q40[2] = 0x1f;                                   // x0 = 7*.5, x16 = -7*.5
    q40[17] = 0x80;                                  // x15 = -4, x31 = 0
    unsigned char q41[20] = {0x00, 0x34, 0x00, 0xbc};   // d = .25, m = -1
    q41[4] = 0x2a;                                   // x0 = 1.5, x16 = -.5
    unsigned char q80[34] = {0x00, 0x40};            // d = 2
    q80[2] = 0x80;                                   // -128 * 2
    q80[33] = 0x7f;                                  // 127 * 2
    // 0x3555, -2^-24, and a signalling NaN, which ggml's conversion (F16C
    // or its C) makes quiet: 0x7c01 -> 0x7fc02000.
    unsigned char f16[6] = {0x55, 0x35, 0x01, 0x80, 0x01, 0x7c};
    unsigned char bf16[4] = {0x80, 0x3f, 0x40, 0xc0};   // 1, -3
    // q5_0: d = 0.5, x0 = (3 + 16 - 16) * .5 (bit 0 of qh), x16 = (4 -
    // 16) * .5 (bit 16 clear), x17 = (15 + 16 - 16) * .5 (bit 17).
    unsigned char q50[22] = {0x00, 0x38, 0x01, 0x00, 0x02, 0x00};
    q50[6] = 0x43;
    q50[7] = 0xf0;
    // q4_K: d = 1, dmin = .5. Sub-block 0: scale 3 (byte 0), min 2 (byte
    // 4); x0 = 3 * 5 - .5 * 2 = 14. Sub-block 5: scale 1 | 3 << 4 = 49
    // (nibble of byte 9, top bits of byte 1), min 2 | 1 << 4 = 18 (byte
    // 9's high nibble, top bits of byte 5); x160 = 49 * 7 - .5 * 18 = 334
    // (the high nibble of qs[64]).
    unsigned char q4k[144] = {0x00, 0x3c, 0x00, 0x38};
    q4k[4 + 0] = 3;
    q4k[4 + 4] = 2;
    q4k[4 + 9] = 0x21;
    q4k[4 + 1] = 0xc0;
    q4k[4 + 5] = 0x40;
    q4k[16 + 0] = 0x05;
    q4k[16 + 64] = 0x70;
    // q6_K: d = .5 (bytes 208-209). x0: low nibble of ql[0] = 15, bits 0-1
    // of qh[0] = 1: q = 31 - 32 = -1, scale sc[0] = 2: (.5 * 2) * -1. x64:
    // high nibble of ql[0] = 0, bits 4-5 of qh[0] = 3: q = 48 - 32 = 16,
    // scale sc[4] = -3: (.5 * -3) * 16 = -24.
    unsigned char q6k[210] = {0};
    q6k[0] = 0x0f;
    q6k[128] = 0x31;
    q6k[192] = 2;
    q6k[192 + 4] = 0xfd;
    q6k[209] = 0x38;
    gw w = {0};
    gw_tensor t[] = {
        {"q40", 1, {32}, MHSA_GGML_Q4_0, q40, sizeof q40},
        {"q41", 1, {32}, MHSA_GGML_Q4_1, q41, sizeof q41},
        {"q80", 1, {32}, MHSA_GGML_Q8_0, q80, sizeof q80},
        {"f16", 1, {3}, MHSA_GGML_F16, f16, sizeof f16},
        {"bf16", 1, {2}, MHSA_GGML_BF16, bf16, sizeof bf16},
        {"q50", 1, {32}, MHSA_GGML_Q5_0, q50, sizeof q50},
        {"q4k", 1, {256}, MHSA_GGML_Q4_K, q4k, sizeof q4k},
        {"q6k", 1, {256}, MHSA_GGML_Q6_K, q6k, sizeof q6k},
    };
    gw_header(&w, 3, 8, 0);
    gw_tensors(&w, t, 8, 32);
    mhsa_gguf_file *f;
    ck_assert_int_eq(open_gw(&w, &f), MHSA_OK);
    float x[32];
    size_t d32 = 32, d2 = 2, d3 = 3;
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "q40", 1, &d32, x), MHSA_OK);
    ck_assert(x[0] == 3.5f && x[16] == -3.5f && x[15] == -4.0f &&
              x[31] == 0.0f && x[1] == -4.0f && x[17] == -4.0f);
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "q41", 1, &d32, x), MHSA_OK);
    ck_assert(x[0] == 1.5f && x[16] == -0.5f && x[1] == -1.0f);
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "q80", 1, &d32, x), MHSA_OK);
    ck_assert(x[0] == -256.0f && x[31] == 254.0f && x[1] == 0.0f);
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "f16", 1, &d3, x), MHSA_OK);
    ck_assert(x[0] == 0.333251953125f && x[1] == -0x1p-24f);
    uint32_t nan_bits;
    memcpy(&nan_bits, &x[2], sizeof nan_bits);
    ck_assert_uint_eq(nan_bits, 0x7fc02000u);
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "bf16", 1, &d2, x), MHSA_OK);
    ck_assert(x[0] == 1.0f && x[1] == -3.0f);
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "q50", 1, &d32, x), MHSA_OK);
    ck_assert(x[0] == 1.5f && x[16] == -6.0f && x[17] == 7.5f &&
              x[1] == -8.0f);
    float k[256];
    size_t d256 = 256;
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "q4k", 1, &d256, k), MHSA_OK);
    ck_assert(k[0] == 14.0f && k[160] == 334.0f && k[1] == -1.0f &&
              k[161] == -9.0f);
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "q6k", 1, &d256, k), MHSA_OK);
    ck_assert(k[0] == -1.0f && k[64] == -24.0f && k[1] == -32.0f);
    mhsa__gguf_close(f);
    gw_free(&w);
    tpath_remove();
}
END_TEST

// ---- malformed files ------------------------------------------------------

// A small valid file: two keys, tensors "a" (f32 [4]) and "w" (q8_0
// [2, 32]). Knobs change one thing each.
typedef struct knobs {
    uint32_t version;
    uint64_t n_tensors, n_kv;   // UINT64_MAX: the true counts
    uint32_t align_type, align; // general.alignment's type and value
    uint32_t nd_a, type_w;
    uint64_t ne_w0, ne_w1, off_w;
    const char *name_w;
} knobs;

static knobs base(void)
{
    return (knobs){3, UINT64_MAX, UINT64_MAX, T_U32, 32, 1, MHSA_GGML_Q8_0,
                   32, 2, 32, "w"};
}

static void write_small(gw *w, knobs k)
{
    static unsigned char data[32 + 68];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 37);
    data[16 + 1] = data[16 + 35] = 0x3c;   // finite q8_0 scales
    gw_header(w, k.version, k.n_tensors == UINT64_MAX ? 2 : k.n_tensors,
              k.n_kv == UINT64_MAX ? 2 : k.n_kv);
    gw_key(w, "general.name", T_STR);
    gw_str(w, "small");
    gw_key(w, "general.alignment", k.align_type);
    if (k.align_type == T_U64)
        gw_u64(w, k.align);
    else
        gw_u32(w, k.align);
    gw_str(w, "a");
    gw_u32(w, k.nd_a);
    for (uint32_t d = 0; d < k.nd_a; d++)
        gw_u64(w, d ? 1 : 4);
    gw_u32(w, MHSA_GGML_F32);
    gw_u64(w, 0);
    gw_str(w, k.name_w);
    gw_u32(w, 2);
    gw_u64(w, k.ne_w0);
    gw_u64(w, k.ne_w1);
    gw_u32(w, k.type_w);
    gw_u64(w, k.off_w);
    gw_pad(w, 32);
    gw_bytes(w, data, 16);
    gw_pad(w, 32);
    gw_bytes(w, data + 16, 68);
}

START_TEST(small_file_is_valid)
{
    gw w = {0};
    write_small(&w, base());
    mhsa_gguf_file *f;
    ck_assert_int_eq(open_gw(&w, &f), MHSA_OK);
    ck_assert_uint_eq(mhsa__gguf_tensor_count(f), 2);
    const mhsa_gguf_tensor *t = mhsa__gguf_tensor(f, "w");
    ck_assert_uint_eq(t->dims[0], 2);
    ck_assert_uint_eq(t->dims[1], 32);
    mhsa__gguf_close(f);
    gw_free(&w);
    tpath_remove();
}
END_TEST

// Cut short anywhere, the small file is refused (its last byte is tensor
// data, so every prefix lacks something it claims): a field or a tensor
// runs past the end, or the counts cannot fit in what is left.
START_TEST(truncated_at_every_byte)
{
    gw w = {0};
    write_small(&w, base());
    const char *p = tpath("cut.gguf");
    for (size_t n = 0; n < w.len; n++) {
        ck_assert_int_eq(gw_save_prefix(&w, n, p), 0);
        mhsa_gguf_file *f = NULL;
        mhsa_status s = mhsa__gguf_open(p, &f);
        ck_assert_msg(s == MHSA_ERR_FORMAT && f == NULL,
                      "cut at %zu of %zu: %s", n, w.len,
                      mhsa_status_str(s));
        const char *e = mhsa_last_error();
        ck_assert_msg((strstr(e, "past the end") || strstr(e, "cannot fit"))
                      && strstr(e, p),
                      "cut at %zu: %s", n, mhsa_last_error());
    }
    gw_free(&w);
    tpath_remove();
}
END_TEST

START_TEST(bad_header)
{
    gw w = {0};
    write_small(&w, base());
    memcpy(w.p, "GGUX", 4);
    expect_format(&w, "magic is 47 47 55 58, not \"GGUF\"", NULL);
    knobs k = base();
    k.version = 1;
    write_small(&w, k);
    expect_format(&w, "version 1 (32-bit counts) is not supported", NULL);
    k.version = 4;
    write_small(&w, k);
    expect_format(&w, "version 4 is not supported", NULL);
    k.version = 3u << 24;   // a big-endian v3 file read little-endian
    write_small(&w, k);
    expect_format(&w, "big-endian", NULL);
    k = base();
    k.n_kv = (uint64_t)1 << 60;
    write_small(&w, k);
    expect_format(&w, "1152921504606846976 key/values and 2 tensors "
                  "cannot fit", NULL);
    k = base();
    k.n_tensors = UINT64_MAX - 1;
    write_small(&w, k);
    expect_format(&w, "tensors cannot fit", NULL);
    // The header alone, claiming 2^60 keys: refused before any allocation
    // beyond the handle and the 24 bytes read.
    gw_header(&w, 3, 0, (uint64_t)1 << 60);
    mhsa__alloc_fail_at(0);
    expect_format(&w, "cannot fit", NULL);
    ck_assert_uint_le(mhsa__alloc_fail_at(0), 2);
    tpath_remove();
}
END_TEST

START_TEST(bad_metadata)
{
    gw w = {0};
    // A string value longer than the file.
    gw_header(&w, 3, 0, 1);
    gw_key(&w, "general.name", T_STR);
    gw_u64(&w, 1000000);
    gw_bytes(&w, "abc", 3);
    expect_format(&w, "key 'general.name': string value (1000000 bytes",
                  "past the end of the file");
    // A key name longer than the file.
    gw_header(&w, 3, 0, 1);
    gw_u64(&w, (uint64_t)1 << 62);
    gw_bytes(&w, "abcdefghijklmnop", 16);
    expect_format(&w, "key #0: key name", "past the end");
    // Arrays claiming more elements than the file holds.
    gw_header(&w, 3, 0, 1);
    gw_key(&w, "a", T_ARR);
    gw_arr(&w, T_U32, (uint64_t)1 << 61);
    gw_u32(&w, 1);
    expect_format(&w, "key 'a': array of 2305843009213693952 u32 values",
                  "past the end");
    gw_header(&w, 3, 0, 1);
    gw_key(&w, "tokenizer.ggml.tokens", T_ARR);
    gw_arr(&w, T_STR, (uint64_t)1 << 40);
    gw_str(&w, "a");
    expect_format(&w, "key 'tokenizer.ggml.tokens': array of 1099511627776 "
                  "strings cannot fit", NULL);
    // Unknown types, a bool that is not 0 or 1, arrays nested too deep.
    gw_header(&w, 3, 0, 1);
    gw_key(&w, "x", 13);
    gw_u64(&w, 0);
    expect_format(&w, "key 'x': unknown value type 13", NULL);
    gw_header(&w, 3, 0, 1);
    gw_key(&w, "x", T_ARR);
    gw_arr(&w, 77, 1);
    gw_u64(&w, 0);
    expect_format(&w, "key 'x': unknown array element type 77", NULL);
    gw_header(&w, 3, 0, 1);
    gw_key(&w, "flag", T_BOOL);
    gw_u8(&w, 2);
    expect_format(&w, "key 'flag': bool 0 is 2", NULL);
    gw_header(&w, 3, 0, 1);
    gw_key(&w, "deep", T_ARR);
    for (int d = 0; d < 9; d++)
        gw_arr(&w, T_ARR, 1);
    gw_arr(&w, T_U8, 0);
    expect_format(&w, "key 'deep': arrays nested deeper than 8", NULL);
    // A key twice, whatever the other keys between.
    gw_header(&w, 3, 0, 3);
    gw_key(&w, "general.name", T_STR);
    gw_str(&w, "a");
    gw_key(&w, "general.x", T_U8);
    gw_u8(&w, 1);
    gw_key(&w, "general.name", T_U32);
    gw_u32(&w, 1);
    expect_format(&w, "key 'general.name': appears twice", NULL);
    // general.alignment of the wrong type, 0, or not a power of two.
    knobs k = base();
    k.align_type = T_U64;
    write_small(&w, k);
    expect_format(&w, "key 'general.alignment': is u64, must be u32", NULL);
    k = base();
    k.align = 0;
    write_small(&w, k);
    expect_format(&w, "key 'general.alignment': 0 is not a power of two",
                  NULL);
    k.align = 24;
    write_small(&w, k);
    expect_format(&w, "key 'general.alignment': 24 is not a power of two",
                  NULL);
    tpath_remove();
}
END_TEST

START_TEST(bad_tensor_infos)
{
    gw w = {0};
    knobs k = base();
    k.nd_a = 0;
    write_small(&w, k);
    expect_format(&w, "tensor 'a': n_dims is 0 (must be 1 to 4)", NULL);
    k.nd_a = 5;
    write_small(&w, k);
    expect_format(&w, "tensor 'a': n_dims is 5", NULL);
    k = base();
    k.ne_w1 = 0;
    write_small(&w, k);
    expect_format(&w, "tensor 'w': ne[1] is 0", NULL);
    k.ne_w1 = (uint64_t)1 << 63;
    write_small(&w, k);
    expect_format(&w, "tensor 'w': ne[1] is 9223372036854775808", NULL);
    k = base();
    k.ne_w0 = (uint64_t)1 << 40;
    k.ne_w1 = (uint64_t)1 << 40;
    write_small(&w, k);
    expect_format(&w, "tensor 'w': element count overflows", NULL);
    k = base();
    k.type_w = 99;
    write_small(&w, k);
    expect_format(&w, "tensor 'w': unknown ggml type 99", NULL);
    k.type_w = 4;   // Q4_2, removed from ggml
    write_small(&w, k);
    expect_format(&w, "tensor 'w': unknown ggml type 4", NULL);
    k = base();
    k.ne_w0 = 48;
    write_small(&w, k);
    expect_format(&w, "tensor 'w': row length ne[0] = 48 is not a multiple "
                  "of q8_0's block size 32", NULL);
    k = base();
    k.name_w = "a";
    write_small(&w, k);
    expect_format(&w, "tensor 'a': name appears twice", NULL);
    gw_header(&w, 3, 1, 0);
    gw_strn(&w, "a\0b", 3);
    static const unsigned char rest[40];   // so that the counts fit
    gw_bytes(&w, rest, sizeof rest);
    expect_format(&w, "tensor 'a\\x00b': name holds a NUL byte", NULL);
    tpath_remove();
}
END_TEST

START_TEST(bad_tensor_data)
{
    gw w = {0};
    knobs k = base();
    k.off_w = 8;
    write_small(&w, k);
    expect_format(&w, "tensor 'w': data offset 8 is not a multiple of the "
                  "alignment 32", NULL);
    k.off_w = 0;
    write_small(&w, k);
    expect_format(&w, "overlaps tensor", NULL);
    k.off_w = 64;
    write_small(&w, k);
    expect_format(&w, "tensor 'w': data [64, +68) runs past the end", NULL);
    k.off_w = (uint64_t)1 << 63;
    write_small(&w, k);
    expect_format(&w, "tensor 'w': data [9223372036854775808, +68) runs "
                  "past the end", NULL);
    tpath_remove();
}
END_TEST

START_TEST(io_errors)
{
    mhsa_gguf_file *f = NULL;
    const char *p = tpath("missing.gguf");
    ck_assert_int_eq(mhsa__gguf_open(p, &f), MHSA_ERR_IO);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), p));
    ck_assert_int_eq(mhsa__gguf_open(tpath_dir(), &f), MHSA_ERR_IO);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "is a directory"));
    ck_assert_int_eq(mhsa__gguf_open(NULL, &f), MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_null(f);
    tpath_remove();
}
END_TEST

// SIGALRM while an open blocks: the test fails (in a forked run the
// child ends; without fork the whole run ends, which fails it too).
static void open_blocked(int sig)
{
    (void)sig;
    static const char msg[] = "opening a FIFO blocked for 10 s\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

// A FIFO with no writer: open(2) without O_NONBLOCK would wait for one
// for ever. Both readers refuse it at once, naming the path and what it
// is; an alarm turns a regression into a failure instead of a hang.
START_TEST(fifo_refused_without_blocking)
{
    const char *p = tpath("fifo.gguf");
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    void (*old)(int) = signal(SIGALRM, open_blocked);
    alarm(10);
    mhsa_gguf_file *f = NULL;
    mhsa_status s = mhsa__gguf_open(p, &f);
    ck_assert_msg(s == MHSA_ERR_IO && !f, "gguf: %s", mhsa_status_str(s));
    ck_assert_msg(strstr(mhsa_last_error(), p) &&
                  strstr(mhsa_last_error(), "is a FIFO"), "%s",
                  mhsa_last_error());
    mhsa_st_file *st = NULL;
    s = mhsa__st_open(p, &st);
    if (s != MHSA_ERR_UNSUPPORTED) {   // built without safetensors
        ck_assert_msg(s == MHSA_ERR_IO && !st, "safetensors: %s",
                      mhsa_status_str(s));
        ck_assert_msg(strstr(mhsa_last_error(), p) &&
                      strstr(mhsa_last_error(), "is a FIFO"), "%s",
                      mhsa_last_error());
    }
    alarm(0);
    signal(SIGALRM, old);
    tpath_remove();
}
END_TEST

// Names and keys are the file's bytes: a control byte in one (an escape
// sequence that would drive the terminal) is shown as \xNN in the
// message, never raw.
START_TEST(file_strings_escaped_in_messages)
{
    gw w = {0};
    gw_header(&w, 3, 0, 2);
    gw_key(&w, "evil\x1b[2J\x07key", T_U8);
    gw_u8(&w, 1);
    gw_key(&w, "evil\x1b[2J\x07key", T_U8);
    gw_u8(&w, 1);
    expect_format(&w, "key 'evil\\x1b[2J\\x07key': appears twice", NULL);
    knobs k = base();
    // A carriage return, a lone continuation byte (the 8-bit CSI), a byte
    // never in UTF-8, and a C1 control spelled in UTF-8; the é stays.
    k.name_w = "w\r\x9b\xff\xc2\x9b\xc3\xa9";
    k.type_w = 99;
    write_small(&w, k);
    expect_format(&w, "tensor 'w\\x0d\\x9b\\xff\\xc2\\x9b\xc3\xa9': "
                  "unknown ggml type 99", NULL);
    tpath_remove();
}
END_TEST

// Each allocation of a successful open and read fails in turn: NO_MEMORY,
// nothing leaked (ASan and valgrind runs check that).
START_TEST(alloc_failures)
{
    gw w = {0};
    write_all_metadata(&w, 3);
    const char *p = tpath("m.gguf");
    ck_assert_int_eq(gw_save(&w, p), 0);
    mhsa_gguf_file *f = NULL;
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa__gguf_open(p, &f), MHSA_OK);
    size_t n = mhsa__alloc_fail_at(0);
    mhsa__gguf_close(f);
    ck_assert_uint_ge(n, 4);
    for (size_t i = 1; i <= n; i++) {
        mhsa__alloc_fail_at(i);
        f = NULL;
        ck_assert_int_eq(mhsa__gguf_open(p, &f), MHSA_ERR_NO_MEMORY);
        ck_assert_ptr_null(f);
    }
    mhsa__alloc_fail_at(0);
    gw_free(&w);
    knobs k = base();
    write_small(&w, k);
    ck_assert_int_eq(open_gw(&w, &f), MHSA_OK);
    float x[64];
    size_t dims[2] = {2, 32};
    mhsa__alloc_fail_at(1);
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "w", 2, dims, x),
                     MHSA_ERR_NO_MEMORY);
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa__gguf_read_f32(f, "w", 2, dims, x), MHSA_OK);
    mhsa__gguf_close(f);
    gw_free(&w);
    tpath_remove();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gguf");
    TCase *tm = tcase_create("metadata");
    tcase_add_loop_test(tm, metadata_round_trip, 0, 2);
    suite_add_tcase(s, tm);
    TCase *tt = tcase_create("tensors");
    tcase_add_loop_test(tt, tensors_match_reference, 0, 3);
    tcase_add_test(tt, dequant_hand_values);
    suite_add_tcase(s, tt);
    TCase *tb = tcase_create("malformed");
    tcase_add_test(tb, small_file_is_valid);
    tcase_add_test(tb, truncated_at_every_byte);
    tcase_add_test(tb, bad_header);
    tcase_add_test(tb, bad_metadata);
    tcase_add_test(tb, bad_tensor_infos);
    tcase_add_test(tb, bad_tensor_data);
    tcase_add_test(tb, io_errors);
    tcase_add_test(tb, fifo_refused_without_blocking);
    tcase_add_test(tb, file_strings_escaped_in_messages);
    tcase_add_test(tb, alloc_failures);
    suite_add_tcase(s, tb);
    return s;
}

int main(void) { return run_suite(suite()); }
