// http.h — the HTTP side (libmicrohttpd, a thread per connection): the
// daemon, request bodies up to --max-body, routing to the endpoints of
// api.h, and JSON answers with OpenAI's error objects.
#ifndef MHSA_SERVER_HTTP_H
#define MHSA_SERVER_HTTP_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>

#include "args.h"
#include "mhsa_model.h"
#include "engine.h"

// What every connection thread reads (set before the daemon starts).
typedef struct srv_ctx {
    mhsa_model *m;
    sched *s;
    const srv_args *a;
    int n_ctx;                 // positions per slot
    const char *chat_format;   // NULL: chat requests are refused
    char chat_refusal[512];    // why, when chat_format is NULL
    char *model_name;          // the file's base name, valid UTF-8
    long long started;         // Unix seconds
    atomic_ulong next_id;      // request ids and default seeds
} srv_ctx;

// Starts listening on a->host:a->port (port 0: a free one, written back
// to *port). 0, or -1 with a message in err.
int http_start(srv_ctx *c, struct MHD_Daemon **d, int *port, char *err,
               size_t errcap);
// Stops accepting new connections; those open go on until they end.
void http_quiesce(struct MHD_Daemon *d);

// Queues body (malloc'd JSON, taken over; NULL: out of memory, a 500) as
// the answer with the status.
enum MHD_Result http_send_json(struct MHD_Connection *c, unsigned status,
                               char *body);
// An OpenAI error object: {"error": {"message", "type", "param",
// "code"}}; param and code may be NULL.
enum MHD_Result http_send_error(struct MHD_Connection *c, unsigned status,
                                const char *param, const char *code,
                                const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
