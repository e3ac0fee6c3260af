// http.c — libmicrohttpd plumbing (http.h).
#include "http.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api.h"
#include "openai.h"
#include "reply.h"

// A connection's request as it arrives.
typedef struct conn {
    char *body;
    size_t len, cap;
    size_t seen;      // body bytes received, kept or not
    int too_big;      // more than --max-body: answered 413
} conn;

// The whole request is in: answer it by path and method.
static enum MHD_Result route(srv_ctx *ctx, struct MHD_Connection *c,
                             const char *url, const char *method, conn *k)
{
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    int post = !strcmp(method, "POST");
    if (!strcmp(url, "/health"))
        return get ? api_health(ctx, c)
                   : http_send_not_allowed(c, method, url, "GET");
    if (!strcmp(url, "/v1/models"))
        return get ? api_models(ctx, c)
                   : http_send_not_allowed(c, method, url, "GET");
    int chat = !strcmp(url, "/v1/chat/completions");
    if (chat || !strcmp(url, "/v1/completions")) {
        if (!post)
            return http_send_not_allowed(c, method, url, "POST");
        if (k->too_big)
            return http_send_error(c, 413, NULL, "request_too_large",
                                   "the request body is %zu bytes; at most "
                                   "%ld are accepted (--max-body)", k->seen,
                                   ctx->a->max_body);
        return api_completion(ctx, c, chat, k->body ? k->body : "", k->len);
    }
    return http_send_error(c, 404, NULL, "unknown_url", "unknown path "
                           "'%.100s'; this server has POST /v1/completions, "
                           "POST /v1/chat/completions, GET /v1/models and "
                           "GET /health", url);
}

// Keeps body bytes up to --max-body; past it counts and drops them (the
// answer is 413 once the body is in), and closes the connection when a
// body goes on past 64 times the limit.
static int take_body(const srv_ctx *ctx, conn *k, const char *data, size_t n)
{
    k->seen += n;
    if (k->too_big || k->len + n > (size_t)ctx->a->max_body) {
        k->too_big = 1;
        free(k->body);
        k->body = NULL;
        k->len = k->cap = 0;
        return k->seen / 64 > (size_t)ctx->a->max_body ? -1 : 0;
    }
    if (k->len + n + 1 > k->cap) {
        size_t cap = k->cap ? k->cap : 4096;
        while (cap < k->len + n + 1)
            cap *= 2;
        char *b = realloc(k->body, cap);
        if (!b)
            return -1;
        k->body = b;
        k->cap = cap;
    }
    memcpy(k->body + k->len, data, n);
    k->len += n;
    k->body[k->len] = '\0';
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    srv_ctx *ctx = cls;
    conn *k = *con_cls;
    if (!k) {   // the headers: the body (if any) comes in the next calls
        if (!(k = calloc(1, sizeof *k)))
            return MHD_NO;
        *con_cls = k;
        return MHD_YES;
    }
    if (*upload_size) {
        int rc = take_body(ctx, k, upload_data, *upload_size);
        *upload_size = 0;
        return rc ? MHD_NO : MHD_YES;
    }
    return route(ctx, c, url, method, k);
}

static void on_completed(void *cls, struct MHD_Connection *c,
                         void **con_cls, enum MHD_RequestTerminationCode t)
{
    (void)cls, (void)c, (void)t;
    conn *k = *con_cls;
    if (k) {
        free(k->body);
        free(k);
        *con_cls = NULL;
    }
}

int http_start(srv_ctx *ctx, struct MHD_Daemon **d, int *port, char *err,
               size_t errcap)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char service[16];
    snprintf(service, sizeof service, "%d", *port);
    int gai = getaddrinfo(ctx->a->host, service, &hints, &ai);
    if (gai != 0) {
        snprintf(err, errcap, "--host %.200s: %s", ctx->a->host,
                 gai_strerror(gai));
        return -1;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    *d = MHD_start_daemon(flags, (uint16_t)*port, NULL, NULL, on_request, ctx,
                          MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                          MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctx,
                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
                          MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!*d) {
        snprintf(err, errcap, "cannot listen on %.200s port %d (in use, or "
                 "not an address of this machine)", ctx->a->host, *port);
        return -1;
    }
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(*d, MHD_DAEMON_INFO_BIND_PORT);
    if (info && info->port)
        *port = info->port;
    return 0;
}

void http_quiesce(struct MHD_Daemon *d)
{
    MHD_socket fd = MHD_quiesce_daemon(d);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}
