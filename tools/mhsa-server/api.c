// api.c — the endpoints (api.h).
#include "api.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "openai.h"
#include "engine.h"
#include "text.h"

// How long a connection waits for text before it looks whether its client
// is still there (plain answers) or sends an SSE comment (streams): a
// client that left is noticed within this time even when no text comes.
enum { POLL_MS = 200, KEEPALIVE_MS = 2000 };

enum MHD_Result api_health(srv_ctx *ctx, struct MHD_Connection *c)
{
    int busy, idle, queued;
    sched_counts(ctx->s, &busy, &idle, &queued);
    json_t *o = json_pack("{s:s,s:i,s:i,s:i}", "status", "ok", "slots_idle",
                          idle, "slots_busy", busy, "queued", queued);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return http_send_json(c, 200, s);
}

enum MHD_Result api_models(srv_ctx *ctx, struct MHD_Connection *c)
{
    return http_send_json(c, 200, openai_models_json(ctx->model_name,
                                                     ctx->started));
}

// The prompt text of p: the completion's prompt, or the chat messages in
// the chat format. NULL after answering the error (400 or 500).
static char *prompt_text(srv_ctx *ctx, struct MHD_Connection *c,
                         const srv_params *p, size_t *len,
                         enum MHD_Result *rc)
{
    if (!p->chat) {
        char *t = malloc(p->prompt_len + 1);
        if (!t) {
            *rc = http_send_json(c, 500, NULL);
            return NULL;
        }
        memcpy(t, p->prompt, p->prompt_len + 1);
        *len = p->prompt_len;
        return t;
    }
    if (!ctx->chat_format) {
        *rc = http_send_error(c, 400, "messages", "chat_template_unknown",
                              "%s", ctx->chat_refusal);
        return NULL;
    }
    mhsa_status st = mhsa_chat_apply(ctx->m, ctx->chat_format, p->msgs,
                                     p->n_msgs, 1, NULL, 0, len);
    char *t = st == MHSA_ERR_SHAPE ? malloc(*len + 1) : NULL;
    if (t)
        st = mhsa_chat_apply(ctx->m, ctx->chat_format, p->msgs, p->n_msgs,
                             1, t, *len + 1, len);
    if (st != MHSA_OK) {
        free(t);
        *rc = st == MHSA_ERR_SHAPE && !t
            ? http_send_json(c, 500, NULL)
            : http_send_error(c, 400, "messages", NULL, "the messages cannot "
                              "be formatted: %s", mhsa_last_error());
        return NULL;
    }
    return t;
}

// 1 after answering 400 when a prompt of n tokens leaves no position for
// the answer in --ctx.
static int too_long(srv_ctx *ctx, struct MHD_Connection *c,
                    const char *field, size_t n, enum MHD_Result *rc)
{
    if (n < (size_t)ctx->n_ctx)
        return 0;
    *rc = http_send_error(c, 400, field, "context_length_exceeded",
                          "the prompt is %zu tokens; a request holds at "
                          "most %d positions (--ctx), the prompt and at "
                          "least one token of answer", n, ctx->n_ctx);
    return 1;
}

// text[0..len) as the model's ids (BOS as the model adds it; special
// tokens' text is that token, as mhsa-generate parses a prompt). An empty
// prompt is BOS alone. NULL after answering the error: a prompt that
// leaves no position for the answer in --ctx is 400.
static int32_t *prompt_ids(srv_ctx *ctx, struct MHD_Connection *c,
                           const srv_params *p, const char *text, size_t len,
                           size_t *n, enum MHD_Result *rc)
{
    const unsigned flags = MHSA_TOKENIZE_ADD_SPECIAL |
                           MHSA_TOKENIZE_PARSE_SPECIAL;
    mhsa_status st = mhsa_tokenize(ctx->m, text, len, flags, NULL, 0, n);
    const char *field = p->chat ? "messages" : "prompt";
    if (st != MHSA_OK && st != MHSA_ERR_SHAPE) {
        *rc = http_send_error(c, 400, field, NULL, "the %s cannot be "
                              "tokenized: %s", field, mhsa_last_error());
        return NULL;
    }
    if (too_long(ctx, c, field, *n, rc))
        return NULL;
    int32_t *ids = malloc((*n + 1) * sizeof *ids);
    if (!ids) {
        *rc = http_send_json(c, 500, NULL);
        return NULL;
    }
    if (*n)
        st = mhsa_tokenize(ctx->m, text, len, flags, ids, *n, n);
    else if (mhsa_model_bos(ctx->m) >= 0)
        ids[(*n)++] = mhsa_model_bos(ctx->m);
    else
        st = MHSA_ERR_INVALID_ARG;
    if (st != MHSA_OK) {
        free(ids);
        *rc = http_send_error(c, 400, field, NULL, "the %s is empty and the "
                              "model has no BOS token to start from", field);
        return NULL;
    }
    return ids;
}

// The prompt p gave as token ids, checked against the model and --ctx
// (the requests copy them). NULL after answering the error (400).
static const int32_t *given_ids(srv_ctx *ctx, struct MHD_Connection *c,
                                const srv_params *p, size_t *n,
                                enum MHD_Result *rc)
{
    *n = p->n_prompt_ids;
    int V = mhsa_model_n_vocab(ctx->m);
    for (size_t i = 0; i < *n; i++)
        if (p->prompt_ids[i] >= V) {
            *rc = http_send_error(c, 400, "prompt", NULL, "'prompt' token "
                                  "%zu is %d; this model's ids are 0 to %d",
                                  i, (int)p->prompt_ids[i], V - 1);
            return NULL;
        }
    if (too_long(ctx, c, "prompt", *n, rc))
        return NULL;
    return p->prompt_ids;
}

// The request set of one HTTP request: its n choices, each a request of
// the engine with its own sampler, and the answer's state.
typedef struct choices {
    srv_req *r[OPENAI_MAX_CHOICES];
    int n;
    long n_prompt;
} choices;

// Cancels (when still running) and releases every request of ch.
static void choices_drop(srv_ctx *ctx, choices *ch)
{
    for (int i = 0; i < ch->n; i++) {
        sched_cancel(ctx->s, ch->r[i]);
        sched_release(ctx->s, ch->r[i]);
    }
    ch->n = 0;
}

// The requests of p's p->n choices in *ch: the prompt's ids once, then a
// sampler each, seeded with the request's seed + i (choice 0 is what n = 1
// gives), or, without a seed, each from the request's number and i.
// max_tokens is the default when not given. 0, or -1 after answering the
// error.
static int make_requests(srv_ctx *ctx, struct MHD_Connection *c,
                         srv_params *p, unsigned long id, choices *ch,
                         enum MHD_Result *rc)
{
    size_t len = 0, n = 0;
    const int32_t *ids;
    int32_t *tokenized = NULL;   // the text's ids, freed here
    ch->n = 0;
    if (p->prompt_ids) {
        ids = given_ids(ctx, c, p, &n, rc);
    } else {
        char *text = prompt_text(ctx, c, p, &len, rc);
        if (!text)
            return -1;
        ids = tokenized = prompt_ids(ctx, c, p, text, len, &n, rc);
        free(text);
    }
    if (!ids)
        return -1;
    uint64_t seed = p->seed_given
        ? p->sp.seed   // a different stream for every request otherwise
        : (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ id;
    long max_tokens = p->max_tokens >= 0 ? p->max_tokens
                                         : ctx->a->max_tokens;
    for (int i = 0; i < p->n; i++) {
        mhsa_sampler_params sp = p->sp;
        sp.seed = seed + (uint64_t)i;
        mhsa_sampler *smp = NULL;
        if (mhsa_sampler_create(&sp, mhsa_model_n_vocab(ctx->m), &smp) !=
            MHSA_OK) {
            *rc = http_send_error(c, 400, NULL, NULL, "sampling parameters:"
                                  " %s", mhsa_last_error());
            break;
        }
        srv_req *r = sched_req_new(ids, n, smp, max_tokens, p->stops,
                                   p->n_stops);
        if (!r) {
            mhsa_sampler_destroy(smp);
            *rc = http_send_json(c, 500, NULL);
            break;
        }
        ch->r[ch->n++] = r;
    }
    free(tokenized);
    if (ch->n < p->n) {
        choices_drop(ctx, ch);
        return -1;
    }
    ch->n_prompt = (long)n;
    return 0;
}

// 1 when the client has closed its end of c (a read would return 0).
static int client_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!i)
        return 0;
    char b;
    return recv(i->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

// A plain answer: waits for every choice's whole text, then one JSON
// body. A client that leaves meanwhile cancels the requests and the
// connection closes.
static enum MHD_Result answer_whole(srv_ctx *ctx, struct MHD_Connection *c,
                                    choices *ch, const srv_meta *meta)
{
    char *all[OPENAI_MAX_CHOICES] = { 0 };
    size_t len[OPENAI_MAX_CHOICES] = { 0 }, cap[OPENAI_MAX_CHOICES] = { 0 };
    const char *finish[OPENAI_MAX_CHOICES] = { 0 };
    const char *error = NULL;
    srv_usage u = { ch->n_prompt, 0 };
    enum MHD_Result rc = MHD_YES;
    int failed = 0;
    for (int i = 0; i < ch->n && !failed; i++) {
        sched_out o;
        for (;;) {
            sched_take(ctx->s, ch->r[i], POLL_MS, &o);
            if (o.len && text_append_valid(&all[i], &len[i], &cap[i], o.text,
                                           o.len)) {
                free(o.text);
                rc = http_send_json(c, 500, NULL);
                failed = 1;
                break;
            }
            free(o.text);
            if (o.done)
                break;
            if (client_gone(c)) {
                rc = MHD_NO;
                failed = 1;
                break;
            }
        }
        if (failed)
            break;
        finish[i] = o.finish;
        if (!o.finish && !error)
            error = o.error;
        u.completion_tokens += o.completion_tokens;
    }
    if (!failed) {
        const char *text[OPENAI_MAX_CHOICES];
        for (int i = 0; i < ch->n; i++)
            text[i] = all[i] ? all[i] : "";
        rc = error ? http_send_error(c, 503, NULL, NULL, "%s", error)
                   : http_send_json(c, 200, openai_result_json(
                                                meta, text, finish, ch->n,
                                                &u));
    }
    for (int i = 0; i < ch->n; i++)
        free(all[i]);
    return rc;
}

// ---- Streams ------------------------------------------------------------------

// A streamed answer: its choices, SSE bytes made but not yet sent, and
// where it is.
typedef struct stream {
    srv_ctx *ctx;
    choices ch;
    int done[OPENAI_MAX_CHOICES];   // choice i's last chunk is made
    int n_done, next;               // ended choices; the one to poll next
    srv_usage usage;
    srv_meta meta;
    char id[48];
    int include_usage;
    char *buf;
    size_t len, cap, pos;
    int roles_sent, ended;
    int idle_ms;                    // since the last text or comment
} stream;

// Appends one "data: <json>" event (json taken over). -1 on no memory.
static int add_event(stream *st, char *json)
{
    int rc = json ? text_sse_event(&st->buf, &st->len, &st->cap, json) : -1;
    free(json);
    return rc;
}

// The end of the stream: an error event if a choice failed, else the usage
// (when asked), then [DONE].
static int stream_end(stream *st, const char *error)
{
    st->ended = 1;
    int rc = 0;
    if (error)
        rc = add_event(st, openai_error_json(error, "unavailable_error", NULL,
                                             NULL));
    else if (st->include_usage)
        rc = add_event(st, openai_chunk_json(&st->meta, 0, "", NULL, 0,
                                             &st->usage));
    if (!rc)
        rc = text_sse_event(&st->buf, &st->len, &st->cap, "[DONE]");
    return rc;
}

// Makes the next events: each chat choice's opening role chunk, then text
// as it comes from the choices in turn, each choice's last chunk, the
// usage (when asked) and [DONE]; an SSE comment when no text came for
// KEEPALIVE_MS (it tells a gone client by a failed write). -1 on no
// memory.
static int stream_fill(stream *st)
{
    if (st->meta.chat && !st->roles_sent) {
        st->roles_sent = 1;
        int rc = 0;
        for (int i = 0; i < st->ch.n && !rc; i++)
            rc = add_event(st, openai_chunk_json(&st->meta, i, "", NULL, 1,
                                                 NULL));
        return rc;
    }
    // The next running choice; it waits for text as long as the others
    // have none (a choice's text waits in its request meanwhile).
    int i = st->next;
    while (st->done[i])
        i = (i + 1) % st->ch.n;
    st->next = (i + 1) % st->ch.n;
    int active = st->ch.n - st->n_done;
    sched_out o;
    sched_take(st->ctx->s, st->ch.r[i], KEEPALIVE_MS / active, &o);
    int rc = 0;
    if (o.len)
        rc = add_event(st, openai_chunk_json(&st->meta, i, o.text, NULL, 0,
                                             NULL));
    free(o.text);
    if (rc)
        return rc;
    if (!o.done) {
        st->idle_ms = o.len ? 0 : st->idle_ms + KEEPALIVE_MS / active;
        if (st->idle_ms < KEEPALIVE_MS)
            return 0;
        st->idle_ms = 0;
        return text_sse_comment(&st->buf, &st->len, &st->cap, "keep-alive");
    }
    st->done[i] = 1;
    st->n_done++;
    st->usage.completion_tokens += o.completion_tokens;
    if (!o.finish)
        return stream_end(st, o.error);
    rc = add_event(st, openai_chunk_json(&st->meta, i, "", o.finish, 0,
                                         NULL));
    if (!rc && st->n_done == st->ch.n)
        rc = stream_end(st, NULL);
    return rc;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    stream *st = cls;
    for (;;) {
        if (st->pos < st->len) {
            size_t n = st->len - st->pos < max ? st->len - st->pos : max;
            memcpy(out, st->buf + st->pos, n);
            st->pos += n;
            if (st->pos == st->len)
                st->pos = st->len = 0;
            return (ssize_t)n;
        }
        if (st->ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (stream_fill(st))
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

// The response is gone (ended, or the client left): the requests still
// running are cancelled, and all are freed.
static void stream_free(void *cls)
{
    stream *st = cls;
    choices_drop(st->ctx, &st->ch);
    free(st->buf);
    free(st);
}

// Hands the connection a reader of ch's events; the requests are the
// stream's from here on.
static enum MHD_Result answer_stream(srv_ctx *ctx, struct MHD_Connection *c,
                                     choices *ch, const srv_meta *meta,
                                     int include_usage)
{
    stream *st = calloc(1, sizeof *st);
    if (!st) {
        choices_drop(ctx, ch);
        return http_send_json(c, 500, NULL);
    }
    st->ctx = ctx;
    st->ch = *ch;
    st->usage.prompt_tokens = ch->n_prompt;
    st->meta = *meta;
    snprintf(st->id, sizeof st->id, "%s", meta->id);
    st->meta.id = st->id;
    st->include_usage = include_usage;
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free);
    if (!resp) {
        stream_free(st);
        return http_send_json(c, 500, NULL);
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result rc = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return rc;
}

enum MHD_Result api_completion(srv_ctx *ctx, struct MHD_Connection *c,
                               int chat, const char *body, size_t len)
{
    srv_params p;
    char err[512];
    const char *param = NULL;
    if (openai_parse(body, len, chat, &p, err, sizeof err, &param))
        return http_send_error(c, 400, param, NULL, "%s", err);
    unsigned long id = atomic_fetch_add(&ctx->next_id, 1);
    enum MHD_Result rc = MHD_NO;
    choices ch;
    int bad = make_requests(ctx, c, &p, id, &ch, &rc);
    int stream = p.stream, include_usage = p.include_usage;
    openai_params_free(&p);
    if (bad)
        return rc;
    for (int i = 0; i < ch.n; i++) {
        int q = sched_submit(ctx->s, ch.r[i]);
        if (!q)
            continue;
        choices_drop(ctx, &ch);   // those queued leave the queue
        return q == -1
            ? http_send_error(c, 503, NULL, "queue_full", "the server is "
                              "busy: %d requests are waiting already "
                              "(--queue); try again later", ctx->a->queue)
            : http_send_error(c, 503, NULL, NULL, "the server is shutting "
                              "down");
    }
    char idbuf[48];
    snprintf(idbuf, sizeof idbuf, "%s-%lx-%lu", chat ? "chatcmpl" : "cmpl",
             (unsigned long)ctx->started, id);
    srv_meta meta = {idbuf, (long long)time(NULL), ctx->model_name, chat};
    if (stream)
        return answer_stream(ctx, c, &ch, &meta, include_usage);
    rc = answer_whole(ctx, c, &ch, &meta);
    choices_drop(ctx, &ch);
    return rc;
}
