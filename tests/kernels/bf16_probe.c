// bf16_probe.c — the probes of bf16_probe.h, built once with the native
// flags and once emulated (MHSA_AVX512_EMULATED); test-only.
#define MHSA_BF16_INTRINSICS 1
#include <string.h>

#include "avx512/bf16.h"
#include "bf16_probe.h"

static void cvtne2ps(const float *a, const float *b, uint16_t *out)
{
    __m512bh r = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(a), _mm512_loadu_ps(b));
    memcpy(out, &r, 64);
}

static void dpbf16(float *acc, const uint16_t *a, const uint16_t *b)
{
    __m512bh va, vb;
    memcpy(&va, a, 64);
    memcpy(&vb, b, 64);
    _mm512_storeu_ps(acc, _mm512_dpbf16_ps(_mm512_loadu_ps(acc), va, vb));
}

typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

static void tdpbf16(int rows, int kpairs, int ncols, float *c,
                    const uint16_t *a, const uint16_t *b)
{
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.rows[0] = (uint8_t)rows;             // C
    cfg.colsb[0] = (uint16_t)(4 * ncols);
    cfg.rows[1] = (uint8_t)rows;             // A
    cfg.colsb[1] = (uint16_t)(4 * kpairs);
    cfg.rows[2] = (uint8_t)kpairs;           // B
    cfg.colsb[2] = (uint16_t)(4 * ncols);
    _tile_loadconfig(&cfg);
    _tile_loadd(0, c, 4 * ncols);
    _tile_loadd(1, a, 4 * kpairs);
    _tile_loadd(2, b, 4 * ncols);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 4 * ncols);
    _tile_release();
}

static void tile_zero_store(float *out)
{
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.rows[3] = 16;
    cfg.colsb[3] = 64;
    _tile_loadconfig(&cfg);
    _tile_zero(3);
    _tile_stored(3, out, 64);
    _tile_release();
}

#if MHSA_AVX512_EMULATED
static float fma_daz_ftz(float acc, float a, float b)
{
    return mhsa_emul_fma_daz_ftz(acc, a, b);
}

static void load_unconfigured(const float *p)
{
    _tile_release();
    _tile_loadd(0, p, 64);
}

const bf16_probes mhsa_bf16_probes__emul = {
    .build = "emulated",
#else
const bf16_probes mhsa_bf16_probes__native = {
    .build = "native",
#endif
    .cvtne2ps = cvtne2ps,
    .dpbf16 = dpbf16,
    .tdpbf16 = tdpbf16,
    .tile_zero_store = tile_zero_store,
#if MHSA_AVX512_EMULATED
    .fma_daz_ftz = fma_daz_ftz,
    .load_unconfigured = load_unconfigured,
#endif
};
