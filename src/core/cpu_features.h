// cpu_features.h — what the CPU and the OS let the library run, read once:
// the instruction sets dispatch chooses tables by, and the ones later
// kernels will need (BF16 dot products, AMX tiles), which mhsa-info lists.
#ifndef MHSA_CORE_CPU_FEATURES_H
#define MHSA_CORE_CPU_FEATURES_H

enum { MHSA_CPU_OTHER = 0, MHSA_CPU_INTEL, MHSA_CPU_AMD };

typedef struct mhsa_cpu_features {
    // x86-64. Each is set only when the OS also saves the registers it
    // uses (XCR0), so a set flag means "runs here".
    int avx2_fma_f16c;   // AVX2 + FMA + F16C, YMM state saved
    int avx512;          // AVX-512 F, BW, VL, DQ, opmask and ZMM state saved
    int avx512_vnni;     // AVX512_VNNI (vpdpbusd, vpdpwssd), with avx512
    int avx512_bf16;     // AVX512_BF16 (vdpbf16ps), with avx512
    int avx512_fp16;     // AVX512_FP16, with avx512
    int amx_bf16;        // AMX-TILE + AMX-BF16 and XCR0 tile state (17, 18);
                         // a process must still ask Linux for the tile data
                         // permission before the first tile instruction
    // x86-64 identity (CPUID leaves 0 and 1): the vendor and the
    // display family and model (base plus extended fields), for choices
    // that follow measurements made on a CPU (gemm/gemm_bf16.c).
    int vendor;          // MHSA_CPU_OTHER, MHSA_CPU_INTEL or MHSA_CPU_AMD
    int family, model;
    // AArch64.
    int neon;            // Advanced SIMD (baseline)
    int neon_dotprod;    // SDOT / UDOT (ARMv8.2 dotprod; Linux HWCAP_ASIMDDP)
} mhsa_cpu_features;

// The features, read at the first call (thread-safe).
const mhsa_cpu_features *mhsa__cpu_features(void);

// 1 when this process may run AMX tile instructions: amx_bf16 above, and
// Linux granted the tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA), Linux 5.16+; without it the first tile instruction
// kills the process). Asked once per process, at the first call
// (thread-safe); the permission then holds for every thread.
int mhsa__amx_permitted(void);

#endif
