// args.h — mhsa-server's command line.
#ifndef MHSA_SERVER_ARGS_H
#define MHSA_SERVER_ARGS_H

#include <stdio.h>

#include "mhsa.h"

typedef struct srv_args {
    const char *model;          // --model FILE (required)
    const char *host;           // --host (127.0.0.1)
    int port;                   // --port (8080; 0: a free one)
    int parallel;               // --parallel: slots (4)
    int ctx;                    // --ctx: positions per slot (0: default)
    int threads;                // --threads (0: OpenMP's own count)
    int queue;                  // --queue: waiting requests (64)
    long max_body;              // --max-body: request bytes (1 MiB)
    long max_tokens;            // --max-tokens: default max_tokens (256)
    const char *chat_template;  // --chat-template NAME (NULL: the model's)
    mhsa_dtype kv;              // --kv-dtype (f32)
} srv_args;

enum { ARGS_OK = 0, ARGS_HELP = 1, ARGS_BAD = 2 };

// Fills *a from argv. ARGS_OK; ARGS_HELP after printing the usage to
// out; ARGS_BAD after one line naming the bad flag or value on err.
int srv_args_parse(int argc, char **argv, srv_args *a, FILE *out, FILE *err);

#endif
