// mhsa-info — prints the library version, the kernel table dispatch picked
// (after MHSA_ISA), which ISAs this build has and this CPU runs, and which
// it has but this CPU cannot run (e.g. AVX-512 on a Zen 3), and the data
// cache sizes the library read (core/cpu_caches.h) and where from, and the
// GEMM block sizes each runnable table uses (derived from those caches, or
// as MHSA_BLOCKING says; dispatch.c).
//
//   mhsa-info          human-readable summary
//   mhsa-info --isa    only the active ISA's name (for scripts and CI: under
//                      `qemu-x86_64 -cpu Nehalem` it must print "scalar")
//   mhsa-info --kv-bytes D H [HKV]
//                      KV cache memory per token of one block for each
//                      storage type (mhsa_kv_cache_create_ex's dtype)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_caches.h"
#include "core/cpu_features.h"
#include "gemm/gemm_bf16.h"
#include "kernels/kernels.h"
#include "mhsa.h"

static long arg_long(const char *what, const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 1 || v > (1L << 20)) {
        fprintf(stderr, "mhsa-info: --kv-bytes: %s = '%s' is not an "
                "integer in 1..%ld\n", what, s, 1L << 20);
        exit(2);
    }
    return v;
}

// A cache stores K and V rows of dh = D / H features for each of the Hkv
// kv heads at every position: 2 * Hkv * dh elements of the dtype per token
// and sequence (mhsa_kv_cache_bytes adds only the per-sequence lengths).
static int kv_bytes(int argc, char **argv)
{
    long D = arg_long("D", argv[2]), H = arg_long("H", argv[3]);
    long Hkv = argc == 5 ? arg_long("HKV", argv[4]) : H;
    if (D % H) {
        fprintf(stderr, "mhsa-info: --kv-bytes: H = %ld does not divide "
                "D = %ld\n", H, D);
        return 2;
    }
    if (H % Hkv) {
        fprintf(stderr, "mhsa-info: --kv-bytes: HKV = %ld does not divide "
                "H = %ld\n", Hkv, H);
        return 2;
    }
    long dh = D / H;
    static const struct { mhsa_dtype dt; const char *name; } dts[] = {
        { MHSA_F32, "f32" }, { MHSA_F16, "f16" }, { MHSA_BF16, "bf16" },
    };
    printf("KV cache of one block, D=%ld H=%ld Hkv=%ld dh=%ld: per token "
           "and sequence\n", D, H, Hkv, dh);
    printf("%-6s %12s %16s %16s\n", "dtype", "bytes/token",
           "MiB/1k tokens", "tokens/GiB");
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        double b = 2.0 * (double)Hkv * (double)dh *
                   (double)mhsa_dtype_size(dts[i].dt);
        printf("%-6s %12.0f %16.2f %16.0f\n", dts[i].name, b,
               b * 1000.0 / (1 << 20), (double)(1 << 30) / b);
    }
    return 0;
}

// Whether this build has isa's kernels (dispatch still asks the CPU).
static int built(mhsa_isa isa)
{
    switch (isa) {
    case MHSA_ISA_SCALAR: return 1;
#if MHSA_HAVE_AVX2
    case MHSA_ISA_AVX2:   return 1;
#endif
#if MHSA_HAVE_NEON
    case MHSA_ISA_NEON:   return 1;
#endif
#if MHSA_HAVE_AVX512
    case MHSA_ISA_AVX512: return 1;
#endif
    default:              return 0;
    }
}

// What an ISA's kernels need from the CPU and OS (dispatch.c checks it).
static const char *needs(mhsa_isa isa)
{
    switch (isa) {
    case MHSA_ISA_AVX2:
        return "this CPU lacks AVX2, FMA or F16C, or the OS does not save "
               "the YMM state";
    case MHSA_ISA_AVX512:
        return "this CPU lacks AVX-512 F/BW/VL/DQ, or the OS does not save "
               "the opmask and ZMM state";
    default:
        return "not supported here";
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--isa") == 0) {
        puts(mhsa_isa_name(mhsa_active_isa()));
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--kv-bytes") == 0 &&
        (argc == 4 || argc == 5))
        return kv_bytes(argc, argv);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--isa | --kv-bytes D H [HKV]]\n",
                argv[0]);
        return 2;
    }
    printf("mhsa %s\n", mhsa_version());
    printf("active isa: %s\n", mhsa_isa_name(mhsa_active_isa()));
    printf("available:");
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++)
        if (mhsa_kernels_for(i))
            printf(" %s", mhsa_isa_name(i));
    printf("\n");
    // Kernels this build has but the CPU (or OS) cannot run, said plainly.
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++)
        if (built(i) && !mhsa_kernels_for(i))
            printf("not on this CPU: %s (%s)\n", mhsa_isa_name(i),
                   needs(i));
    // Features the CPU and OS give that later kernels use (BF16 compute).
    const mhsa_cpu_features *f = mhsa__cpu_features();
    if (f->family)
        printf("cpu: %s family %d model %d\n",
               f->vendor == MHSA_CPU_INTEL ? "Intel"
               : f->vendor == MHSA_CPU_AMD ? "AMD" : "other",
               f->family, f->model);
    printf("cpu features:%s%s%s%s%s%s%s%s\n", f->avx2_fma_f16c ? " avx2+fma+f16c" : "",
           f->avx512 ? " avx512f/bw/vl/dq" : "", f->avx512_vnni ? " avx512_vnni" : "",
           f->avx512_bf16 ? " avx512_bf16" : "",
           f->avx512_fp16 ? " avx512_fp16" : "", f->amx_bf16 ? " amx_bf16" : "",
           f->neon ? " neon" : "", f->neon_dotprod ? " dotprod" : "");
    // The bf16 tile set of the active table, and why: forced by
    // MHSA_BF16_TILES, a row of the table of measured CPUs, or the
    // one-time measurement (which runs here if nothing ran it before).
    const mhsa_kernels *k = mhsa__kernels();
    mhsa_bf16_choice ch = mhsa__bf16_choice(k);
    char why[256];
    mhsa__bf16_explain(&ch, why, sizeof why);
    printf("bf16 tiles: %s (MHSA_BF16_TILES %s): %s%s\n",
           ch.tiles ? ch.tiles->name : "none", mhsa__bf16_selected(), why,
           ch.tiles ? "" : "; bf16 compute takes the exact fp32 fallback");
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
        const mhsa_kernels *t = i == MHSA_ISA_AVX512
#if MHSA_HAVE_AVX512
                                ? &mhsa_kernels_avx512
#else
                                ? NULL
#endif
                                : mhsa_kernels_for(i);
        for (const mhsa_bf16_tiles *const *b = t ? t->bf16 : NULL; b && *b;
             b++)
            if (!mhsa_gemm_bf16_runnable(*b) || !mhsa_kernels_for(i))
                printf("not on this CPU: bf16 tiles %s (needs %s)\n",
                       (*b)->name,
                       (*b)->needs == MHSA_BF16_NEEDS_AMX_BF16
                           ? "AMX-TILE + AMX-BF16, AVX512_BF16 and the "
                             "OS tile data permission"
                           : "AVX512_BF16");
    }
    const mhsa_cpu_caches *c = mhsa__cpu_caches();
    printf("caches: L1d %zu KiB and L2 %zu KiB per core, L3 %zu KiB (%s)\n",
           c->l1d >> 10, c->l2 >> 10, c->l3 >> 10, c->source);
    // The GEMM block sizes each runnable table got, beside its fixed ones.
    printf("gemm blocking from %s:\n", mhsa__blocking_source());
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
        const mhsa_kernels *k = mhsa_kernels_for(i);
        const mhsa_kernels *t = mhsa__fixed_table(i);
        if (!k || !t)
            continue;
        printf("  %-7s tile %dx%d: kc %zu mc %zu nc %zu (table.c: kc %zu "
               "mc %zu nc %zu)\n", k->name, k->mr, k->nr, k->blocking.kc,
               k->blocking.mc, k->blocking.nc, t->blocking.kc,
               t->blocking.mc, t->blocking.nc);
    }
    return 0;
}
