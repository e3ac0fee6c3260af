// mhsa-info — prints the library version, the kernel table dispatch picked
// (after MHSA_ISA), which ISAs this build has and this CPU runs, and which
// it has but this CPU cannot run (e.g. AVX-512 on a Zen 3).
//
//   mhsa-info          human-readable summary
//   mhsa-info --isa    only the active ISA's name (for scripts and CI: under
//                      `qemu-x86_64 -cpu Nehalem` it must print "scalar")
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "mhsa.h"

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
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--isa]\n", argv[0]);
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
    return 0;
}
