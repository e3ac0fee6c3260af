// reply.h — what the endpoints and the HTTP plumbing share: the server's
// context every connection thread reads, and the answers (JSON bodies,
// OpenAI's error objects). Below both api.h and http.h.
#ifndef MHSA_SERVER_REPLY_H
#define MHSA_SERVER_REPLY_H

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

// 405 with the Allow header naming the method the path takes.
enum MHD_Result http_send_not_allowed(struct MHD_Connection *c,
                                      const char *method, const char *url,
                                      const char *allow);

#endif
