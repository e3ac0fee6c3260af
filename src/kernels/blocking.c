// blocking.c — the cache blocking rule (blocking.h).
//
// BLIS's analytical model (Low, Igual, Smith, Quintana-Orti 2016,
// "Analytical modeling is enough for high-performance BLIS", ACM TOMS 43),
// in the simple form the driver's loops need. gemm.c runs, per KC block,
// tiles of mc rows x nc columns of C; inside a tile each kc x nr B
// micro-panel is reused by the mc/mr A micro-panels streaming past it (L1),
// and the mc x kc A block by the nc/nr B micro-panels of the chunk (L2):
//
//   kc  the B micro-panel (kc * nr floats) takes half of L1d, and the
//       A micro-panel in use plus the next one coming in (2 * kc * mr)
//       fit beside it:
//         kc = min(L1d / (2 * 4 * nr), L1d / (4 * (nr + 2 * mr))),
//       a multiple of 16, in [64, 512].
//   mc  the packed A block (mc * kc floats) takes a quarter of L2:
//         mc = L2 / (16 * kc), rounded up to a multiple of mr.
//   nc  the chunk of columns one tile covers; its B slice (kc * nc floats,
//       read from L3, where the shared kc x n B block lives) takes another
//       quarter of L2, so that the A block and the B slice it meets stay
//       in L2 together, the other half left to C's rows and to what the
//       other hyperthread or the prefetchers bring in:
//         nc = L2 / (16 * kc), rounded down to a multiple of nr.
//   Both mc and nc are at most 256 (and at least two tiles' worth): they
//   are also the unit of the parallel split (never a function of the
//   thread count), and the block's projections (512 rows and up, 512 to
//   1536 columns) must still give tens of tiles on a CPU with a big L2.
//
// On the AMD EPYC Zen 3 this was written on (32 KiB L1d, 512 KiB L2) the
// rule gives AVX2's 6x16 tile kc 256, mc 132, nc 128: the numbers 0.1
// measured by hand (src/avx2/table.c), and `./build/bench --tune` found
// no point around them clearly faster (docs/performance.md). Not yet
// measured on an AVX-512 CPU, where the 12x32 tile gets kc 128, mc 252,
// nc 256 on a Zen 4 (32 KiB L1d, 1 MiB L2) and kc 192, mc 252, nc 256 on
// a Zen 5 (48 KiB, 1 MiB) or an Emerald Rapids (48 KiB, 2 MiB), against
// the table's kc 128, mc 240, nc 128; nor on Arm.
#include "blocking.h"

enum { KC_STEP = 16, KC_MIN = 64, KC_MAX = 512, MCNC_MAX = 256 };

static size_t clamp(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

mhsa_gemm_blocking mhsa__blocking_fit(int mr, int nr, mhsa_gemm_blocking b)
{
    size_t m = (size_t)mr, n = (size_t)nr;
    if (b.kc < 1) b.kc = 1;
    if (b.mc < m) b.mc = m;
    if (b.nc < n) b.nc = n;
    b.mc = (b.mc + m - 1) / m * m;
    b.nc = (b.nc + n - 1) / n * n;
    return b;
}

mhsa_gemm_blocking mhsa__blocking_for_caches(int mr, int nr,
                                             const mhsa_cpu_caches *c)
{
    size_t m = (size_t)mr, n = (size_t)nr, fl = sizeof(float);
    size_t kb = c->l1d / (2 * fl * n), ka = c->l1d / (fl * (n + 2 * m));
    mhsa_gemm_blocking b;
    b.kc = clamp((kb < ka ? kb : ka) / KC_STEP * KC_STEP, KC_MIN, KC_MAX);
    size_t quarter = c->l2 / (4 * fl * b.kc);   // rows or columns
    b.mc = (quarter + m - 1) / m * m;
    b.mc = clamp(b.mc, 2 * m, MCNC_MAX / m * m);
    b.nc = clamp(quarter / n * n, 2 * n, MCNC_MAX / n * n);
    return b;
}
