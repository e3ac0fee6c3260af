// write_family.c — writes the small Llama 3 file of family_files.c (random
// weights, a byte-level BPE vocabulary) to argv[1], for programs that are
// tested on a real GGUF model without one at hand (examples/generate.c).
#include <stdio.h>

#include "family_files.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.gguf\n", argv[0]);
        return 2;
    }
    if (family_write(FAMILY_LLAMA3, 0, argv[1]) != 0) {
        fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[1]);
        return 1;
    }
    return 0;
}
