// reply.c — answers (reply.h).
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openai.h"

// The OpenAI error type of an HTTP status.
static const char *error_type(unsigned status)
{
    switch (status) {
    case 400: case 405: case 413: return "invalid_request_error";
    case 404: return "not_found_error";
    case 503: return "unavailable_error";
    default: return "server_error";
    }
}

enum MHD_Result http_send_json(struct MHD_Connection *c, unsigned status,
                               char *body)
{
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\","
        "\"type\":\"server_error\",\"param\":null,\"code\":null}}";
    struct MHD_Response *r = body
        ? MHD_create_response_from_buffer(strlen(body), body,
                                          MHD_RESPMEM_MUST_FREE)
        : MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom,
                                          MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "application/json");
    enum MHD_Result rc = MHD_queue_response(c, body ? status : 500, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result http_send_error(struct MHD_Connection *c, unsigned status,
                                const char *param, const char *code,
                                const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return http_send_json(c, status, openai_error_json(msg,
                          error_type(status), param, code));
}

enum MHD_Result http_send_not_allowed(struct MHD_Connection *c,
                                      const char *method, const char *url,
                                      const char *allow)
{
    char msg[256];
    snprintf(msg, sizeof msg, "%.16s is not allowed on %.100s; use %s",
             method, url, allow);
    char *body = openai_error_json(msg, error_type(405), NULL,
                                   "method_not_allowed");
    struct MHD_Response *r = body
        ? MHD_create_response_from_buffer(strlen(body), body,
                                          MHD_RESPMEM_MUST_FREE)
        : NULL;
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "application/json");
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result rc = MHD_queue_response(c, 405, r);
    MHD_destroy_response(r);
    return rc;
}

