// mhsa-info — prints what the library chose on this machine and why
// (mhsa_describe: the version, the active ISA after MHSA_ISA, the ISAs
// this build has and this CPU runs or cannot run, the CPU's features, the
// bf16 tile set, the cache sizes and the GEMM blocking of each table).
//
//   mhsa-info          that report
//   mhsa-info --isa    only the active ISA's name (for scripts and CI: under
//                      `qemu-x86_64 -cpu Nehalem` it must print "scalar")
//   mhsa-info --kv-bytes D H [HKV]
//                      KV cache memory per token of one block for each
//                      storage type (mhsa_kv_cache_create_ex's dtype)
//
// Public API only.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    static const struct { const char *name; int size; } dts[] = {
        { "f32", 4 }, { "f16", 2 }, { "bf16", 2 },   // bytes per element
    };
    printf("KV cache of one block, D=%ld H=%ld Hkv=%ld dh=%ld: per token "
           "and sequence\n", D, H, Hkv, dh);
    printf("%-6s %12s %16s %16s\n", "dtype", "bytes/token",
           "MiB/1k tokens", "tokens/GiB");
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        double b = 2.0 * (double)Hkv * (double)dh * dts[i].size;
        printf("%-6s %12.0f %16.2f %16.0f\n", dts[i].name, b,
               b * 1000.0 / (1 << 20), (double)(1 << 30) / b);
    }
    return 0;
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
    size_t n = mhsa_describe(NULL, 0);
    char *text = malloc(n + 1);
    if (!text) {
        fprintf(stderr, "mhsa-info: no memory\n");
        return 1;
    }
    mhsa_describe(text, n + 1);
    fputs(text, stdout);
    free(text);
    return 0;
}
