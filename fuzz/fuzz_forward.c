// fuzz_forward.c — libFuzzer target: the public block API driven by fuzzed
// shapes, flags, masks and values (NaN, inf, -FLT_MAX, subnormals, huge),
// on exactly sized heap buffers (ASan redzones catch any over-read or
// over-write). Beyond "no crash, no leak, no UB" it checks the contract:
//   - a blocked weight (causal or -INFINITY) is an exact +0, and a row with
//     every key blocked has all-zero weights and y == b_out (finite weights);
//   - y is the same bits (NaN for NaN) with and without the attention
//     weights requested (T = 1 without them takes the streaming decode path);
//   - a refused call (B > max_batch, cache overflow) changes no output and
//     leaves the cache's length alone.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mhsa.h"

typedef struct reader { const uint8_t *p; size_t n; } reader;

static unsigned u8(reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static float value(reader *r)
{
    static const float special[] = {
        0.0f, -0.0f, 1.0f, -1.0f, NAN, INFINITY, -INFINITY, FLT_MAX,
        -FLT_MAX, FLT_MIN, 1e-40f, -1e-45f, 1e4f, -1e4f, 1e19f, 3e38f,
    };
    unsigned sel = u8(r);
    if (sel < 16)
        return special[sel];
    if (sel == 255) {   // any bit pattern
        uint32_t bits = u8(r) | u8(r) << 8 | u8(r) << 16 | (uint32_t)u8(r) << 24;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    return (float)((int)sel - 136) / 32.0f;   // small, exact values
}

static void fill(reader *r, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = value(r);
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

#define CHECK(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = { data, size };
    unsigned isa = u8(&r) % 4;
    if (isa && mhsa_select_isa((mhsa_isa)isa) != MHSA_OK)
        mhsa_select_isa(MHSA_ISA_AUTO);
    int D = 1 + (int)(u8(&r) % 20), H = 1 + (int)(u8(&r) % (unsigned)D);
    while (D % H)
        H--;
    int T = 1 + (int)(u8(&r) % 24), B = 1 + (int)(u8(&r) % 3);
    unsigned flags = u8(&r);
    int causal = flags & 1, bias = flags >> 1 & 1, want_attn = flags >> 2 & 1;
    int mask_kind = flags >> 3 & 3;   // none, fuzzed, -inf rows, -FLT_MAX
    mhsa_config cfg = { D, H, T + (int)(flags >> 5 & 1), causal, bias };

    size_t d = (size_t)D, nw = 3 * d * d, ny = (size_t)B * T * d;
    size_t tt = (size_t)T * T, na = (size_t)B * H * tt;
    float *w_qkv = malloc(nw * sizeof(float)), *w_out = malloc(d * d * 4);
    float *b_qkv = bias ? malloc(3 * d * 4) : NULL;
    float *b_out = bias ? malloc(d * 4) : NULL;
    float *x = malloc(ny * 4), *dy = malloc(ny * 4), *y = malloc(ny * 4);
    float *y2 = malloc(ny * 4), *dx = malloc(ny * 4);
    float *attn = malloc(na * 4);
    float *mask = mask_kind ? malloc(tt * 4) : NULL;
    fill(&r, w_qkv, nw);
    fill(&r, w_out, d * d);
    if (bias) {
        fill(&r, b_qkv, 3 * d);
        fill(&r, b_out, d);
    }
    fill(&r, x, ny);
    fill(&r, dy, ny);
    if (mask_kind == 1)
        fill(&r, mask, tt);
    else if (mask_kind >= 2)
        for (size_t i = 0; i < tt; i++)
            mask[i] = (u8(&r) & 1) ? (mask_kind == 2 ? -INFINITY : -FLT_MAX)
                                   : value(&r);

    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    mhsa_kv_cache *c = NULL;
    CHECK(mhsa_block_create(&cfg, &blk) == MHSA_OK);
    CHECK(mhsa_block_set_weights(blk, w_qkv, b_qkv, w_out, b_out) == MHSA_OK);
    CHECK(mhsa_workspace_create(blk, B, &ws) == MHSA_OK);
    CHECK(mhsa_grads_create(blk, &g) == MHSA_OK);

    // A batch too large is refused before anything is written.
    memset(y, 0x5a, ny * 4);
    memcpy(y2, y, ny * 4);
    CHECK(mhsa_forward(blk, ws, x, B + 1, T, mask, y, NULL) ==
          MHSA_ERR_SHAPE);
    CHECK(!memcmp(y, y2, ny * 4));

    CHECK(mhsa_forward(blk, ws, x, B, T, mask, y2, NULL) == MHSA_OK);
    CHECK(mhsa_forward(blk, ws, x, B, T, mask, y, want_attn ? attn : NULL)
          == MHSA_OK);
    for (size_t i = 0; i < ny; i++)   // a NaN's sign and payload carry nothing
        CHECK(!memcmp(&y[i], &y2[i], 4) || (isnan(y[i]) && isnan(y2[i])));
    int weights_finite = all_finite(w_qkv, nw) && all_finite(w_out, d * d) &&
                         (!bias || (all_finite(b_qkv, 3 * d) &&
                                    all_finite(b_out, d)));
    for (int t = 0; t < T; t++) {
        int dead = 1;
        for (int j = 0; j < T; j++) {
            int blocked = (causal && j > t) ||
                          (mask && mask[(size_t)t * T + j] == -INFINITY);
            dead &= blocked;
            if (want_attn && blocked)
                for (size_t bh = 0; bh < (size_t)B * H; bh++) {
                    float w = attn[(bh * T + t) * T + j];
                    CHECK(w == 0.0f && !signbit(w));
                }
        }
        if (dead && weights_finite)
            for (int b = 0; b < B; b++)
                for (size_t k = 0; k < d; k++)
                    CHECK(y[((size_t)b * T + t) * d + k] ==
                          (bias ? b_out[k] : 0.0f));
    }
    CHECK(mhsa_backward(blk, ws, dy, dx, g) == MHSA_OK);

    if (causal) {   // decode in fuzzed chunks, then one chunk too many
        CHECK(mhsa_kv_cache_create(blk, B, T, &c) == MHSA_OK);
        float *xt = malloc(ny * 4), *yt = malloc(ny * 4);
        int len = 0;
        while (len < T) {
            int step = 1 + (int)(u8(&r) % (unsigned)(T - len));
            for (int b = 0; b < B; b++)
                memcpy(xt + (size_t)b * step * d,
                       x + ((size_t)b * T + len) * d, (size_t)step * d * 4);
            CHECK(mhsa_forward_cached(blk, ws, c, xt, B, step, yt) ==
                  MHSA_OK);
            len += step;
            CHECK(mhsa_kv_cache_len(c) == len);
        }
        memset(yt, 0x5a, d * 4);
        CHECK(mhsa_forward_cached(blk, ws, c, xt, B, 1, yt) ==
              MHSA_ERR_SHAPE);
        CHECK(mhsa_kv_cache_len(c) == T);
        for (size_t k = 0; k < d; k++) {
            uint32_t bits;
            memcpy(&bits, &yt[k], 4);
            CHECK(bits == 0x5a5a5a5au);
        }
        free(xt);
        free(yt);
    }
    mhsa_kv_cache_destroy(c);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(w_qkv);
    free(w_out);
    free(b_qkv);
    free(b_out);
    free(x);
    free(dy);
    free(y);
    free(y2);
    free(dx);
    free(attn);
    free(mask);
    return 0;
}
