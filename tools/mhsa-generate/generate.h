// generate.h — the mhsa-generate command as a function, so that tests run
// it in-process (no exec; also under qemu-user). The command's pieces:
// options (args.h), messages, clock and threads (gen_util.h), and the GGUF
// path (gguf_generate.h); generate.c is the command and the GPT-checkpoint
// path, standing on all of them. Both paths sample with the library's
// sampler (mhsa_model.h).
#ifndef MHSA_GENERATE_H
#define MHSA_GENERATE_H

#include "args.h"

int mhsa_generate_cli(int argc, char **argv);

#endif
