// main.c — mhsa-train: trains a tiny attention language model on a toy task
// and shows its loss curve and per-head attention. See cli.c.
#include "cli.h"

int main(int argc, char **argv) { return mhsa_train_cli(argc, argv); }
