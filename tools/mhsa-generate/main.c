// main.c — mhsa-generate: samples text from a GPT checkpoint through the KV
// cache. See generate.c.
#include "generate.h"

int main(int argc, char **argv) { return mhsa_generate_cli(argc, argv); }
