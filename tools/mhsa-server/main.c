// main.c — mhsa-server: the model, the engine (engine.h) and the HTTP
// daemon (http.h) started in that order; SIGINT or SIGTERM stops new
// connections, ends the requests still running (with an error: the
// server is shutting down), and frees everything in reverse order.
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "http.h"
#include "mhsa_model.h"
#include "engine.h"
#include "text.h"

// The file's base name as valid UTF-8: the model's name in answers.
static char *model_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *out = NULL;
    size_t len = 0, cap = 0;
    if (text_append_valid(&out, &len, &cap, b, strlen(b)))
        return NULL;
    return out;
}

// Loads the model with --ctx positions per sequence (default: the model's
// context, at most 2048). 0, or 2 after a message.
static int load(const srv_args *a, mhsa_model **m, int *n_ctx)
{
    mhsa_model_params p = {0};
    p.vocab_only = 1;
    mhsa_model *v = NULL;
    if (mhsa_model_load(a->model, &p, &v) != MHSA_OK) {
        fprintf(stderr, "mhsa-server: --model %s: %s\n", a->model,
                mhsa_last_error());
        return 2;
    }
    int train = mhsa_model_n_ctx_train(v);
    mhsa_model_free(v);
    if (a->ctx > train) {
        fprintf(stderr, "mhsa-server: --ctx %d is more than the model's "
                "context of %d positions\n", a->ctx, train);
        return 2;
    }
    p.vocab_only = 0;
    p.context = a->ctx ? a->ctx : train < 2048 ? train : 2048;
    if (mhsa_model_load(a->model, &p, m) != MHSA_OK) {
        fprintf(stderr, "mhsa-server: --model %s: %s\n", a->model,
                mhsa_last_error());
        return 2;
    }
    *n_ctx = mhsa_model_n_ctx(*m);
    return 0;
}

// The chat format: --chat-template NAME (checked now), else the model's
// recognised one; with neither, chat requests get a 400 that says why.
static int chat_setup(srv_ctx *ctx)
{
    const char *name = ctx->a->chat_template;
    if (name) {
        mhsa_chat_message msg = {"user", "hi"};
        size_t len = 0;
        if (mhsa_chat_apply(ctx->m, name, &msg, 1, 1, NULL, 0, &len) ==
            MHSA_ERR_UNSUPPORTED) {
            fprintf(stderr, "mhsa-server: --chat-template %s: %s\n", name,
                    mhsa_last_error());
            return 2;
        }
        ctx->chat_format = name;
        return 0;
    }
    ctx->chat_format = mhsa_model_chat_format(ctx->m);
    if (!ctx->chat_format) {
        snprintf(ctx->chat_refusal, sizeof ctx->chat_refusal, "the model's "
                 "chat template is %s; start the server with "
                 "--chat-template chatml, llama3, gemma or llama2 to use "
                 "/v1/chat/completions", mhsa_model_chat_template(ctx->m)
                 ? "not one this server recognises" : "missing");
        fprintf(stderr, "mhsa-server: warning: %s\n", ctx->chat_refusal);
    }
    return 0;
}

int main(int argc, char **argv)
{
    srv_args a;
    int rc = srv_args_parse(argc, argv, &a, stdout, stderr);
    if (rc != ARGS_OK)
        return rc == ARGS_HELP ? 0 : 2;
    // Every thread started from here on inherits the mask: the signals
    // wait for sigwait below. A write to a closed socket is an error
    // return, not a signal.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    srv_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.a = &a;
    ctx.started = (long long)time(NULL);
    atomic_init(&ctx.next_id, 1);
    struct MHD_Daemon *d = NULL;
    char err[512];
    rc = load(&a, &ctx.m, &ctx.n_ctx);
    if (!rc)
        rc = chat_setup(&ctx);
    if (!rc && !(ctx.model_name = model_name(a.model)))
        rc = 1;
    sched_config sc = {a.parallel, a.queue, a.threads, a.kv};
    if (!rc && sched_create(ctx.m, &sc, &ctx.s, err, sizeof err)) {
        fprintf(stderr, "mhsa-server: %s\n", err);
        rc = 1;
    }
    int port = a.port;
    if (!rc && http_start(&ctx, &d, &port, err, sizeof err)) {
        fprintf(stderr, "mhsa-server: %s\n", err);
        rc = 2;
    }
    if (!rc) {
        int v6 = strchr(a.host, ':') != NULL;
        printf("listening on http://%s%s%s:%d\n", v6 ? "[" : "", a.host,
               v6 ? "]" : "", port);
        fflush(stdout);
        fprintf(stderr, "mhsa-server: %s, %d slots of %d positions, %s "
                "chat format\n", ctx.model_name, a.parallel, ctx.n_ctx,
                ctx.chat_format ? ctx.chat_format : "no");
        int sig = 0;
        sigwait(&stop, &sig);
        fprintf(stderr, "mhsa-server: %s: stopping\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM");
        http_quiesce(d);         // no new connections
        sched_shutdown(ctx.s);   // the requests end; their threads return
        MHD_stop_daemon(d);      // joins the connections' threads
    }
    sched_destroy(ctx.s);
    mhsa_model_free(ctx.m);
    free(ctx.model_name);
    return rc;
}
