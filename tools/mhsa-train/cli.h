// cli.h — the mhsa-train command (cli.c), which tests call in-process so
// that they need no exec (and so also run under qemu-user), with the
// pieces it is made of: its options (train_args.h), terminal output
// (term.h) and the PNG heatmap (png.h).
#ifndef MHSA_TRAIN_CLI_H
#define MHSA_TRAIN_CLI_H

#include "dp_cli.h"
#include "png.h"
#include "term.h"
#include "train_args.h"

int mhsa_train_cli(int argc, char **argv);
// The command as one rank of a data-parallel job over comm (mpirun); rank 0
// alone prints. mhsa_train_cli is this with the single-process transport.
int mhsa_train_cli_comm(int argc, char **argv, mhsa_dp_comm *comm);

#endif
