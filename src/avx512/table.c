// table.c — the AVX-512 kernel table. Installed by dispatch.c only when
// CPUID and XGETBV say the CPU and OS support AVX-512 F, BW, VL and DQ
// (with AVX2, FMA, F16C) and save the opmask and ZMM state.
//
// The emulated build (tests only, see avx512.h) defines
// mhsa_kernels_avx512_emul instead: the same ISA and name, so a test that
// installs it runs exactly what a real AVX-512 run would. It names the
// kernels' _emul names itself rather than through avx512.h's renames, so a
// kernel that list misses fails to build, not a second native symbol.
//
// GEMM blocking (kernels.h) for the 12x32 tile: kc 128 keeps the B
// micro-panel at 16 KiB (kc 256 would fill Zen 4's 32 KiB L1D); 240 rows
// make the A block 120 KiB of the 1 MiB L2 of Zen 4/5 and recent Intel
// cores (more A reuse per packed B chunk at the shallower depth); 4 panels
// keep the column chunk at 128 columns, so the parallel split of a GEMM is
// as fine as AVX2's. These are reasoned, not measured: no AVX-512 CPU was
// at hand (README). Fixed numbers for MHSA_BLOCKING=table and the emulated
// test table; otherwise dispatch derives them from the CPU's caches
// (kernels/blocking.c).
#include "avx512/avx512.h"
#include "avx512/bf16.h"

// The bf16 tile sets (bf16_tiles.c: AMX, AVX512-BF16).
#undef MHSA_KERNEL_TABLE_BF16
#define MHSA_KERNEL_TABLE_BF16 mhsa_bf16_tiles__avx512

// Row-major A (kernels.h: sgemm_ukr_ra, sgemm_12x32.c) up to 4 panels of
// 32 columns: measured on AMD EPYC Zen 4 (family 25 model 17, 2 vCPUs of
// a shared VM), 1 thread, the driver on copies of this table with
// ra_max_panels 0 / huge, B transposed and packed per call (as the
// projections run), thread CPU time in 15 interleaved rounds, two runs;
// unpacked over packed, per-round medians: 0.80-0.89 at 1 panel,
// 0.84-0.96 at 2, 0.93-0.98 at 3, 0.97-1.01 at 4, then 1.01-1.04 at 6-16
// panels for the small depths (m 96, k 32; m 512, k 64) and 1.0-1.09 at
// 12-32 panels for the deep ones (m 512, k 384; m 1536, k 512).
// valgrind cannot run AVX-512, so there are no instruction counts.
// A transposed in place (sgemm_ukr_ta) under the same panel limit: the
// tile is the row-major one's with A's strides swapped.
#undef MHSA_KERNEL_TABLE_SGEMM_TA
#define MHSA_KERNEL_TABLE_SGEMM_TA(sfx, mr_, nr_) MHSA_KSGEMM_TA(sfx, mr_, nr_)
#undef MHSA_KERNEL_TABLE_RA_PANELS
#define MHSA_KERNEL_TABLE_RA_PANELS 4

// The small attention-backward products (small_bwd.c) and their fused
// form (attn_small_bwd.c), by this build's suffix (the emulated table
// names its _emul kernels, see above).
#undef MHSA_KERNEL_TABLE_SMALL_BWD
#define MHSA_KERNEL_TABLE_SMALL_BWD                                           \
    .small_bwd_scores = MHSA_KNAME(small_bwd_scores, MHSA_AVX512_SFX),        \
    .small_bwd_grads = MHSA_KNAME(small_bwd_grads, MHSA_AVX512_SFX),          \
    .attn_small_bwd = MHSA_KNAME(attn_small_bwd, MHSA_AVX512_SFX)

// The vector log-sum-exp finish (lse_log.c) and column sums (colsum.c),
// by this build's suffix.
#undef MHSA_KERNEL_TABLE_LSE_ADD_LOG
#define MHSA_KERNEL_TABLE_LSE_ADD_LOG(sfx) MHSA_KNAME(lse_add_log, sfx)
#undef MHSA_KERNEL_TABLE_COLSUM_ADD
#define MHSA_KERNEL_TABLE_COLSUM_ADD(sfx) MHSA_KNAME(colsum_add, sfx)

// The fused forward of a small view (attn_small.c).
#undef MHSA_KERNEL_TABLE_ATTN_SMALL
#if MHSA_AVX512_EMULATED
#define MHSA_KERNEL_TABLE_ATTN_SMALL mhsa_attn_small__avx512_emul
#else
#define MHSA_KERNEL_TABLE_ATTN_SMALL mhsa_attn_small__avx512
#endif
// Its form for four heads of width 8 side by side (attn_heads.c).
#undef MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS
#define MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS                                    \
    MHSA_KNAME(attn_small_heads, MHSA_AVX512_SFX)
#undef MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS_BWD
#define MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS_BWD                                \
    MHSA_KNAME(attn_small_heads_bwd, MHSA_AVX512_SFX)

// Quantized products (kernels/quant.h): the VNNI set (quant.c), whose
// vpdpbusd needs AVX512_VNNI beyond this table's F, BW, VL and DQ;
// dispatch hands CPUs without it the AVX2 table's set instead.
// The sanitizer builds' emulated table (MHSA_AVX512_EMUL_NO_Q,
// tests/meson.build) has the AVX2 set: no test runs its quantized
// products there (MHSA_TEST_EMULATION=0), and their SIMDe build under
// ASan and UBSan took most of CI's time.
#undef MHSA_KERNEL_TABLE_Q
#if MHSA_AVX512_EMULATED && MHSA_AVX512_EMUL_NO_Q
extern const mhsa_qkernels mhsa_qkernels_avx2;
#define MHSA_KERNEL_TABLE_Q (&mhsa_qkernels_avx2)
#elif MHSA_AVX512_EMULATED
extern const mhsa_qkernels mhsa_qkernels_avx512_emul;
#define MHSA_KERNEL_TABLE_Q (&mhsa_qkernels_avx512_emul)
#else
extern const mhsa_qkernels mhsa_qkernels_avx512;
#define MHSA_KERNEL_TABLE_Q (&mhsa_qkernels_avx512)
#endif

#define MHSA_AVX512_BLOCKING .kc = 128, .mc = 20 * 12, .nc = 4 * 32

#if MHSA_AVX512_EMULATED
extern const mhsa_kernels mhsa_kernels_avx512_emul;
const mhsa_kernels mhsa_kernels_avx512_emul = MHSA_KERNEL_TABLE_NAMED(
    avx512_emul, "avx512", MHSA_ISA_AVX512, MHSA_AVX512_MR, MHSA_AVX512_NR,
    MHSA_AVX512_BLOCKING);
#else
const mhsa_kernels mhsa_kernels_avx512 =
    MHSA_KERNEL_TABLE(avx512, MHSA_ISA_AVX512, MHSA_AVX512_MR, MHSA_AVX512_NR,
                      MHSA_AVX512_BLOCKING);
#endif
