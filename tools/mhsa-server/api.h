// api.h — the endpoints: a request made into a prompt, tokenized and
// queued (engine.h), its text sent whole or as server-sent events.
#ifndef MHSA_SERVER_API_H
#define MHSA_SERVER_API_H

#include <microhttpd.h>

#include "reply.h"

// POST /v1/completions (chat 0) and /v1/chat/completions (chat 1) with
// body[0..len). Blocks the connection's thread until the answer is done
// (or, streamed, hands the connection a reader that waits for text).
enum MHD_Result api_completion(srv_ctx *ctx, struct MHD_Connection *c,
                               int chat, const char *body, size_t len);
// GET /v1/models and GET /health.
enum MHD_Result api_models(srv_ctx *ctx, struct MHD_Connection *c);
enum MHD_Result api_health(srv_ctx *ctx, struct MHD_Connection *c);

#endif
