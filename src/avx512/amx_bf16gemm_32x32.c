// amx_bf16gemm_32x32.c — the AMX micro-kernel: a 32x32 fp32 C block as
// 2 x 2 tiles of 16 rows x 16 columns, TDPBF16PS.
//
// Tile budget (8 tiles of 16 rows x 64 bytes, one configuration for the
// whole GEMM, loaded per thread by mhsa_bf16_thread_begin__amx): tiles 0-3
// C (C00, C01, C10, C11), 4-5 the two 16-row halves of the A step (16 rows
// x 32 bf16), 6-7 the two 16-column halves of the B step (16 pair rows x
// 16 columns). Each 32-deep step is 4 tile loads for 4 TDPBF16PS (16 x 16
// x 32 multiply-adds each): every A tile is used twice and every B tile
// twice.
//
// Arithmetic: the tiles start at beta*C (C itself when beta == 1, zero
// when beta == 0, which never reads C) and each step adds, per element,
// TDPBF16PS's sum of its 16 even and 16 odd depth products (SDM: two
// running fp32 sums, added, then added to C; DAZ/FTZ, RNE). Full blocks
// with beta 0 or 1 load and store C directly; edges and other betas go
// through a 32 x 32 buffer on the stack, with the same bits.
//
// Not measured: the machine this was written on has no AMX (tests run it
// through the emulated tile file of bf16_emul.h).
#define MHSA_BF16_INTRINSICS 1
#include <string.h>

#include "avx512/bf16.h"

enum { MR = 32, NR = 32 };

// Palette 1, all 8 tiles 16 rows x 64 bytes.
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

void mhsa_bf16_thread_begin__amx(void)
{
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
}

void mhsa_bf16_thread_end__amx(void) { _tile_release(); }

void mhsa_bf16gemm_32x32__amx(size_t k, const uint16_t *ap,
                              const uint16_t *bp, float *c, size_t ldc,
                              size_t m, size_t n, float beta)
{
    int direct = m == MR && n == NR && (beta == 0.0f || beta == 1.0f);
    float buf[MR * NR];
    float *cc = direct ? c : buf;
    size_t ldcc = direct ? ldc : NR;
    if (!direct) {
        for (size_t i = 0; i < MR; i++)
            for (size_t j = 0; j < NR; j++)
                buf[i * NR + j] = i < m && j < n && beta != 0.0f
                                ? (beta == 1.0f ? c[i * ldc + j]
                                                : beta * c[i * ldc + j])
                                : 0.0f;
    }
    if (direct && beta == 0.0f) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, cc, ldcc * 4);
        _tile_loadd(1, cc + 16, ldcc * 4);
        _tile_loadd(2, cc + 16 * ldcc, ldcc * 4);
        _tile_loadd(3, cc + 16 * ldcc + 16, ldcc * 4);
    }
    size_t steps = (k + 31) / 32;
    for (size_t s = 0; s < steps; s++) {
        const uint16_t *a = ap + s * MR * 32;
        const uint16_t *b = bp + s * 16 * NR * 2;
        _tile_loadd(4, a, 64);
        _tile_loadd(5, a + 16 * 32, 64);
        _tile_loadd(6, b, NR * 4);
        _tile_loadd(7, b + 32, NR * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, cc, ldcc * 4);
    _tile_stored(1, cc + 16, ldcc * 4);
    _tile_stored(2, cc + 16 * ldcc, ldcc * 4);
    _tile_stored(3, cc + 16 * ldcc + 16, ldcc * 4);
    if (!direct)
        for (size_t i = 0; i < m; i++)
            memcpy(c + i * ldc, buf + i * NR, n * sizeof(float));
}
