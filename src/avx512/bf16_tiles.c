// bf16_tiles.c — the AVX-512 table's bf16 tile sets (kernels.h:
// mhsa_bf16_tiles), best first: AMX, then AVX512-BF16. gemm_bf16.c runs
// the first one the CPU and OS allow (and that fits the table's fp32
// scratch). A set whose flags this compiler lacks is left out of the
// build (MHSA_HAVE_AMX, MHSA_HAVE_AVX512_BF16).
//
// Blocking, in bf16 elements of depth: kc 256 makes a B micro-panel
// 256 x 32 x 2 bytes = 16 KiB, the fp32 tile's L1 footprint at its kc 128,
// and the A block mc x 256 x 2 bytes: 240 rows (AVX512-BF16) or 224 rows
// (AMX, a multiple of 32) stay within the fp32 A block of 240 x 128
// floats, so both fit the scratch the fp32 path sizes (checked by
// gemm_bf16.c before use, and by tests/kernels/test_gemm_bf16.c). Reasoned
// from the caches, not measured (no AMX or AVX512-BF16 CPU at hand).
//
// The emulated build (tests only) defines the same sets with emulated = 1
// and no CPU needs.
#include "avx512/bf16.h"

#if MHSA_AVX512_EMULATED
#define NEEDS(x) MHSA_BF16_NEEDS_NOTHING
#define EMULATED 1
#else
#define NEEDS(x) x
#define EMULATED 0
#endif

#if MHSA_HAVE_AMX || MHSA_AVX512_EMULATED
static const mhsa_bf16_tiles amx = {
    .name = "amx_bf16",
    .needs = NEEDS(MHSA_BF16_NEEDS_AMX_BF16),
    .emulated = EMULATED,
    .mr = 32, .nr = 32, .kgran = 32,
    .a_layout = MHSA_BF16_A_ROWS32,
    .blocking = { .kc = 256, .mc = 7 * 32, .nc = 4 * 32 },
    .pack_a = mhsa_bf16_pack_a_mr32__amx,
    .pack_b = mhsa_bf16_pack_b_nr32__amx,
    .ukr = mhsa_bf16gemm_32x32__amx,
    .thread_begin = mhsa_bf16_thread_begin__amx,
    .thread_end = mhsa_bf16_thread_end__amx,
};
#endif

#if MHSA_HAVE_AVX512_BF16 || MHSA_AVX512_EMULATED
static const mhsa_bf16_tiles avx512bf16 = {
    .name = "avx512_bf16",
    .needs = NEEDS(MHSA_BF16_NEEDS_AVX512_BF16),
    .emulated = EMULATED,
    .mr = 12, .nr = 32, .kgran = 2,
    .a_layout = MHSA_BF16_A_PAIRS,
    .blocking = { .kc = 256, .mc = 20 * 12, .nc = 4 * 32 },
    .pack_a = mhsa_bf16_pack_a_mr12__avx512bf16,
    .pack_b = mhsa_bf16_pack_b_nr32__avx512bf16,
    .ukr = mhsa_bf16gemm_12x32__avx512bf16,
};
#endif

const mhsa_bf16_tiles *const mhsa_bf16_tiles__avx512[] = {
#if MHSA_HAVE_AMX || MHSA_AVX512_EMULATED
    &amx,
#endif
#if MHSA_HAVE_AVX512_BF16 || MHSA_AVX512_EMULATED
    &avx512bf16,
#endif
    NULL,
};
