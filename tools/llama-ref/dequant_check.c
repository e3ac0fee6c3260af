// dequant_check.c — mhsa's GGUF dequantizers (src/models/gguf/gguf_dequant.c)
// against ggml's own (ggml_get_type_traits(type)->to_float, the functions
// llama-quantize uses to write F32), bit for bit, on random bytes: every
// readable block type, NaN and infinite scales included. A development
// check, built against a llama.cpp checkout outside this repository; not
// part of mhsa's build (tests/io/test_gguf.c checks the same types in CI
// against an independent reference and hand-worked values).
//
//   gcc -O2 -Isrc tools/llama-ref/dequant_check.c build/libmhsa.a \
//       -I$LLAMA_CPP/ggml/include -L$LLAMA_CPP/build/bin -lggml-base \
//       -Wl,-rpath,$LLAMA_CPP/build/bin -lm -o dequant_check
//   ./dequant_check [BLOCKS]      (default 100000 blocks of each type)
//
// Prints one line per type and exits 1 on the first mismatch.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "models/gguf/gguf_dequant.h"

static uint64_t state = 0x9e3779b97f4a7c15u;

static uint64_t next(void)   // splitmix64
{
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    size_t blocks = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    int failed = 0;
    // ggml_init fills the f16 table that ggml's conversions read.
    struct ggml_init_params ip = { 1024, NULL, true };
    ggml_free(ggml_init(ip));
    for (uint32_t type = 0; type < 64; type++) {
        const mhsa_ggml_type_info *info = mhsa__ggml_type(type);
        if (!info || !info->dequant)
            continue;
        const struct ggml_type_traits *tr =
            ggml_get_type_traits((enum ggml_type)type);
        if (!tr->to_float) {   // ggml has no conversion of F32 to itself
            printf("%-5s (ggml has no to_float)\n", info->name);
            continue;
        }
        if (tr->blck_size != (int64_t)info->block ||
            tr->type_size != info->bytes) {
            printf("%-5s block %u, %u bytes; ggml: %lld, %zu\n", info->name,
                   info->block, info->bytes, (long long)tr->blck_size,
                   tr->type_size);
            return 1;
        }
        size_t bytes = blocks * info->bytes, n = blocks * info->block;
        unsigned char *src = malloc(bytes);
        float *ours = malloc(n * sizeof(float));
        float *theirs = malloc(n * sizeof(float));
        if (!src || !ours || !theirs)
            return 2;
        for (size_t i = 0; i < bytes; i++)
            src[i] = (unsigned char)next();
        mhsa__ggml_dequant(type, src, blocks, ours);
        tr->to_float(src, theirs, (int64_t)n);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (memcmp(&ours[i], &theirs[i], sizeof(float)) && !bad++)
                first = i;
        printf("%-5s %zu blocks, %zu values: %s", info->name, blocks, n,
               bad ? "MISMATCH" : "same bits");
        if (bad)
            printf(" (%zu values; first at %zu: %a against ggml's %a)", bad,
                   first, ours[first], theirs[first]);
        printf("\n");
        failed |= bad != 0;
        free(src);
        free(ours);
        free(theirs);
    }
    return failed;
}
