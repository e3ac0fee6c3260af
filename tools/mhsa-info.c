// mhsa-info — prints the library version, the kernel table dispatch picked
// (after MHSA_ISA), and which ISAs this build has and this CPU runs.
//
//   mhsa-info          human-readable summary
//   mhsa-info --isa    only the active ISA's name (for scripts and CI: under
//                      `qemu-x86_64 -cpu Nehalem` it must print "scalar")
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "mhsa.h"

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
    return 0;
}
