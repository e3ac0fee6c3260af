// http.h — the HTTP side (libmicrohttpd, a thread per connection): the
// daemon, request bodies up to --max-body, and routing to the endpoints
// of api.h (their answers are reply.h's).
#ifndef MHSA_SERVER_HTTP_H
#define MHSA_SERVER_HTTP_H

#include <microhttpd.h>

#include "reply.h"

// Starts listening on a->host:a->port (port 0: a free one, written back
// to *port). 0, or -1 with a message in err.
int http_start(srv_ctx *c, struct MHD_Daemon **d, int *port, char *err,
               size_t errcap);
// Stops accepting new connections; those open go on until they end.
void http_quiesce(struct MHD_Daemon *d);

#endif
