// openai.c — request checking and response building in OpenAI's shapes
// (openai.h).
#include "openai.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void openai_params_free(srv_params *p)
{
    for (size_t i = 0; i < p->n_stops; i++)
        free(p->stops[i]);
    free(p->prompt);
    free(p->prompt_ids);
    for (size_t i = 0; i < p->n_msgs; i++) {
        free((char *)p->msgs[i].role);
        free((char *)p->msgs[i].content);
    }
    free(p->msgs);
    memset(p, 0, sizeof *p);
}

// Writes the message and the field into the caller's slots; returns -1.
static int bad(char *err, size_t cap, const char **param, const char *field,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int bad(char *err, size_t cap, const char **param, const char *field,
               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    *param = field;
    return -1;
}

// The JSON type's name for messages.
static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

// A number field in [lo, hi] into *out; absent or null leaves *out.
static int get_number(json_t *o, const char *key, double lo, double hi,
                      double *out, char *err, size_t cap, const char **param)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return bad(err, cap, param, key, "'%s' must be a number, not %s",
                   key, type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return bad(err, cap, param, key, "'%s' is %g; it must be in "
                   "[%g, %g]", key, x, lo, hi);
    *out = x;
    return 0;
}

// An integer field in [lo, hi] into *out; absent or null leaves *out.
static int get_int(json_t *o, const char *key, long long lo, long long hi,
                   long long *out, char *err, size_t cap, const char **param)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return bad(err, cap, param, key, "'%s' must be an integer, not %s",
                   key, type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return bad(err, cap, param, key, "'%s' is %lld; it must be in "
                   "[%lld, %lld]", key, (long long)x, lo, hi);
    *out = x;
    return 0;
}

static int get_bool(json_t *o, const char *key, int *out, char *err,
                    size_t cap, const char **param)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return bad(err, cap, param, key, "'%s' must be a boolean, not %s",
                   key, type_name(v));
    *out = json_is_true(v);
    return 0;
}

// strdup of a JSON string's bytes (which may hold NULs: refused, the
// model's text APIs take NUL-terminated strings for chat).
static char *dup_string(json_t *v, size_t *len)
{
    size_t n = json_string_length(v);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, json_string_value(v), n);
        s[n] = '\0';
        if (len)
            *len = n;
    }
    return s;
}

// "stop": a string or a list of strings, at most OPENAI_MAX_STOPS.
static int get_stops(json_t *o, srv_params *p, char *err, size_t cap,
                     const char **param)
{
    json_t *v = json_object_get(o, "stop");
    if (!v || json_is_null(v))
        return 0;
    json_t *one[1] = {v};
    json_t **items = one;
    size_t n = 1;
    json_t *arr[OPENAI_MAX_STOPS];
    if (json_is_array(v)) {
        n = json_array_size(v);
        if (n > OPENAI_MAX_STOPS)
            return bad(err, cap, param, "stop", "'stop' has %zu strings; "
                       "at most %d are allowed", n, OPENAI_MAX_STOPS);
        for (size_t i = 0; i < n; i++)
            arr[i] = json_array_get(v, i);
        items = arr;
    }
    for (size_t i = 0; i < n; i++) {
        if (!json_is_string(items[i]))
            return bad(err, cap, param, "stop", "'stop' must be a string or "
                       "a list of strings, not %s", type_name(items[i]));
        size_t m = json_string_length(items[i]);
        if (m > OPENAI_MAX_STOP_LEN || memchr(json_string_value(items[i]),
                                               0, m))
            return bad(err, cap, param, "stop", "a 'stop' string is %zu "
                       "bytes or holds a NUL; at most %d bytes without NUL",
                       m, OPENAI_MAX_STOP_LEN);
        if (m == 0)
            continue;   // an empty stop would end every text at once
        if (!(p->stops[p->n_stops] = dup_string(items[i], NULL)))
            return bad(err, cap, param, NULL, "out of memory");
        p->n_stops++;
    }
    return 0;
}

// 1 when v is a non-empty list of integers (token ids).
static int is_id_list(const json_t *v)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return 0;
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!json_is_integer(json_array_get(v, i)))
            return 0;
    return 1;
}

// The token ids of the list v (is_id_list), each in [0, 2^31); whether a
// model has them is the caller's check.
static int get_prompt_ids(const json_t *v, srv_params *p, char *err,
                          size_t cap, const char **param)
{
    size_t n = json_array_size(v);
    if (!(p->prompt_ids = malloc(n * sizeof *p->prompt_ids)))
        return bad(err, cap, param, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_int_t id = json_integer_value(json_array_get(v, i));
        if (id < 0 || id > INT32_MAX)
            return bad(err, cap, param, "prompt", "'prompt' token %zu is "
                       "%lld, not a token id", i, (long long)id);
        p->prompt_ids[i] = (int32_t)id;
    }
    p->n_prompt_ids = n;
    return 0;
}

// "prompt": a string, a non-empty list of token ids, or a list of exactly
// one of either (OpenAI's shapes for one prompt; several prompts in one
// request are refused).
static int get_prompt(json_t *o, srv_params *p, char *err, size_t cap,
                      const char **param)
{
    json_t *v = json_object_get(o, "prompt");
    if (!v)
        return bad(err, cap, param, "prompt", "'prompt' is missing");
    if (is_id_list(v))
        return get_prompt_ids(v, p, err, cap, param);
    if (json_is_array(v)) {
        if (json_array_size(v) != 1)
            return bad(err, cap, param, "prompt", "'prompt' as a list must "
                       "be token ids or hold exactly one prompt (it holds "
                       "%zu items)", json_array_size(v));
        v = json_array_get(v, 0);
        if (is_id_list(v))
            return get_prompt_ids(v, p, err, cap, param);
    }
    if (!json_is_string(v))
        return bad(err, cap, param, "prompt", "'prompt' must be a string or "
                   "a list of token ids, not %s", type_name(v));
    if (!(p->prompt = dup_string(v, &p->prompt_len)))
        return bad(err, cap, param, NULL, "out of memory");
    return 0;
}

// A message's content: a string, or a list of {"type": "text", "text"}
// parts joined.
static int get_content(json_t *v, size_t i, char **out, char *err,
                       size_t cap, const char **param)
{
    if (json_is_string(v)) {
        size_t n;
        if (!(*out = dup_string(v, &n)))
            return bad(err, cap, param, NULL, "out of memory");
        if (memchr(*out, 0, n))
            return bad(err, cap, param, "messages", "messages[%zu].content "
                       "holds a NUL character", i);
        return 0;
    }
    if (!json_is_array(v))
        return bad(err, cap, param, "messages", "messages[%zu].content must "
                   "be a string or a list of text parts, not %s", i,
                   type_name(v));
    size_t total = 0;
    for (size_t k = 0; k < json_array_size(v); k++) {
        json_t *part = json_array_get(v, k);
        json_t *t = json_object_get(part, "text");
        const char *ty = json_string_value(json_object_get(part, "type"));
        if (!json_is_object(part) || !ty || strcmp(ty, "text") ||
            !json_is_string(t))
            return bad(err, cap, param, "messages", "messages[%zu].content"
                       "[%zu] must be {\"type\": \"text\", \"text\": "
                       "\"...\"} (only text is supported)", i, k);
        total += json_string_length(t);
    }
    if (!(*out = malloc(total + 1)))
        return bad(err, cap, param, NULL, "out of memory");
    size_t at = 0;
    for (size_t k = 0; k < json_array_size(v); k++) {
        json_t *t = json_object_get(json_array_get(v, k), "text");
        memcpy(*out + at, json_string_value(t), json_string_length(t));
        at += json_string_length(t);
    }
    (*out)[at] = '\0';
    if (strlen(*out) != at)
        return bad(err, cap, param, "messages", "messages[%zu].content "
                   "holds a NUL character", i);
    return 0;
}

// "messages": a non-empty list of {role, content}; role "developer" is
// taken as "system" (OpenAI's newer name for it).
static int get_messages(json_t *o, srv_params *p, char *err, size_t cap,
                        const char **param)
{
    json_t *v = json_object_get(o, "messages");
    if (!v)
        return bad(err, cap, param, "messages", "'messages' is missing");
    if (!json_is_array(v) || json_array_size(v) == 0)
        return bad(err, cap, param, "messages", "'messages' must be a "
                   "non-empty list, not %s", json_is_array(v)
                   ? "an empty one" : type_name(v));
    size_t n = json_array_size(v);
    if (!(p->msgs = calloc(n, sizeof *p->msgs)))
        return bad(err, cap, param, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(v, i);
        if (!json_is_object(m))
            return bad(err, cap, param, "messages", "messages[%zu] must be "
                       "an object, not %s", i, type_name(m));
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role)
            return bad(err, cap, param, "messages", "messages[%zu].role "
                       "must be a string", i);
        if (!strcmp(role, "developer"))
            role = "system";
        if (strcmp(role, "system") && strcmp(role, "user") &&
            strcmp(role, "assistant"))
            return bad(err, cap, param, "messages", "messages[%zu].role is "
                       "'%.40s'; it must be 'system', 'user' or 'assistant'",
                       i, role);
        p->n_msgs = i + 1;   // freed from here on
        char *content = NULL;
        if (!(p->msgs[i].role = strdup(role)))
            return bad(err, cap, param, NULL, "out of memory");
        json_t *c = json_object_get(m, "content");
        if (!c)
            return bad(err, cap, param, "messages", "messages[%zu].content "
                       "is missing", i);
        int rc = get_content(c, i, &content, err, cap, param);
        p->msgs[i].content = content;
        if (rc)
            return rc;
    }
    return 0;
}

// The sampling fields, as mhsa_sampler_params takes them (checked again
// by mhsa_sampler_create).
static int get_sampling(json_t *o, srv_params *p, char *err, size_t cap,
                        const char **param)
{
    double t = 1.0, top_p = 1.0, min_p = 0.0, rp = 1.0;
    long long top_k = 0, seed = -1;
    if (get_number(o, "temperature", 0.0, 100.0, &t, err, cap, param) ||
        get_number(o, "top_p", 0.0, 1.0, &top_p, err, cap, param) ||
        get_number(o, "min_p", 0.0, 1.0, &min_p, err, cap, param) ||
        get_number(o, "repeat_penalty", 0.01, 100.0, &rp, err, cap, param) ||
        get_int(o, "top_k", 0, 1 << 24, &top_k, err, cap, param) ||
        get_int(o, "seed", -((long long)1 << 62), (long long)1 << 62, &seed,
                err, cap, param))
        return -1;
    p->sp.temperature = (float)t;
    p->sp.top_p = top_p >= 1.0 ? 0.0f : (float)top_p;
    p->sp.min_p = (float)min_p;
    p->sp.repeat_penalty = (float)rp;
    p->sp.repeat_last_n = 64;
    p->sp.top_k = (int)top_k;
    if (json_object_get(o, "seed") && !json_is_null(json_object_get(o, "seed"))) {
        p->seed_given = 1;
        p->sp.seed = (uint64_t)seed;
    }
    return 0;
}

// Fields this server refuses rather than ignoring silently: they would
// change what the client gets.
static int refuse_unsupported(json_t *o, char *err, size_t cap,
                              const char **param)
{
    json_t *lp = json_object_get(o, "logprobs");
    if (lp && !json_is_null(lp) && !json_is_false(lp))
        return bad(err, cap, param, "logprobs", "'logprobs' is not "
                   "supported");
    int echo = 0;
    if (get_bool(o, "echo", &echo, err, cap, param))
        return -1;
    if (echo)
        return bad(err, cap, param, "echo", "'echo' is not supported");
    return 0;
}

static int parse_fields(json_t *o, int chat, srv_params *p, char *err,
                        size_t cap, const char **param)
{
    if (!json_is_object(o))
        return bad(err, cap, param, NULL, "the request body must be a JSON "
                   "object, not %s", type_name(o));
    json_t *model = json_object_get(o, "model");
    if (model && !json_is_null(model) && !json_is_string(model))
        return bad(err, cap, param, "model", "'model' must be a string, "
                   "not %s", type_name(model));
    long long max_tokens = -1;
    const char *mt = json_object_get(o, "max_completion_tokens")
                   ? "max_completion_tokens" : "max_tokens";
    if (get_int(o, mt, 0, (long long)1 << 40, &max_tokens, err, cap, param))
        return -1;
    p->max_tokens = (long)max_tokens;
    long long n = 1;
    if (get_int(o, "n", 1, OPENAI_MAX_CHOICES, &n, err, cap, param))
        return -1;
    p->n = (int)n;
    if (get_bool(o, "stream", &p->stream, err, cap, param) ||
        refuse_unsupported(o, err, cap, param) ||
        get_sampling(o, p, err, cap, param) ||
        get_stops(o, p, err, cap, param))
        return -1;
    json_t *so = json_object_get(o, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so))
            return bad(err, cap, param, "stream_options", "'stream_options'"
                       " must be an object, not %s", type_name(so));
        if (get_bool(so, "include_usage", &p->include_usage, err, cap, param))
            return -1;
    }
    p->chat = chat;
    return chat ? get_messages(o, p, err, cap, param)
                : get_prompt(o, p, err, cap, param);
}

int openai_parse(const char *body, size_t len, int chat, srv_params *p,
                 char *err, size_t errcap, const char **param)
{
    memset(p, 0, sizeof *p);
    p->max_tokens = -1;
    *param = NULL;
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        snprintf(err, errcap, "the request body is not valid JSON: %s "
                 "(line %d, column %d)", je.text, je.line, je.column);
        return -1;
    }
    int rc = parse_fields(o, chat, p, err, errcap, param);
    json_decref(o);
    if (rc)
        openai_params_free(p);
    return rc;
}

// ---- Responses ------------------------------------------------------------

// Serialises and frees o (NULL stays NULL).
static char *dump(json_t *o)
{
    if (!o)
        return NULL;
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

char *openai_error_json(const char *message, const char *type,
                        const char *param, const char *code)
{
    json_t *msg = json_string(message);
    if (!msg)   // not UTF-8: it quotes the client's bytes
        msg = json_string("the request was refused (the message is not "
                          "valid UTF-8)");
    return dump(json_pack("{s:{s:o,s:s,s:o,s:o}}", "error", "message", msg,
                          "type", type, "param", str_or_null(param), "code",
                          str_or_null(code)));
}

static json_t *usage_obj(const srv_usage *u)
{
    return json_pack("{s:I,s:I,s:I}", "prompt_tokens",
                     (json_int_t)u->prompt_tokens, "completion_tokens",
                     (json_int_t)u->completion_tokens, "total_tokens",
                     (json_int_t)(u->prompt_tokens + u->completion_tokens));
}

// The envelope every body shares: id, object, created, model.
static json_t *envelope(const srv_meta *m, const char *object)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:s}", "id", m->id, "object", object,
                     "created", (json_int_t)m->created, "model", m->model,
                     "system_fingerprint", "mhsa");
}

char *openai_result_json(const srv_meta *m, const char *const *text,
                         const char *const *finish, int n,
                         const srv_usage *u)
{
    json_t *o = envelope(m, m->chat ? "chat.completion" : "text_completion");
    json_t *choices = json_array();
    for (int i = 0; o && choices && i < n; i++) {
        json_t *choice = m->chat
            ? json_pack("{s:i,s:{s:s,s:s},s:n,s:s}", "index", i, "message",
                        "role", "assistant", "content", text[i], "logprobs",
                        "finish_reason", finish[i])
            : json_pack("{s:i,s:s,s:n,s:s}", "index", i, "text", text[i],
                        "logprobs", "finish_reason", finish[i]);
        if (json_array_append_new(choices, choice)) {
            json_decref(choices);
            choices = NULL;
        }
    }
    if (!o || !choices) {
        json_decref(o);
        json_decref(choices);
        return NULL;
    }
    if (json_object_set_new(o, "choices", choices) ||
        json_object_set_new(o, "usage", usage_obj(u))) {
        json_decref(o);
        return NULL;
    }
    return dump(o);
}

char *openai_chunk_json(const srv_meta *m, int index, const char *text,
                        const char *finish, int role_first,
                        const srv_usage *usage)
{
    json_t *o = envelope(m, m->chat ? "chat.completion.chunk"
                                    : "text_completion");
    if (!o)
        return NULL;
    if (usage) {
        if (json_object_set_new(o, "choices", json_array()) ||
            json_object_set_new(o, "usage", usage_obj(usage))) {
            json_decref(o);
            return NULL;
        }
        return dump(o);
    }
    json_t *choice;
    if (m->chat) {
        json_t *delta = json_object();
        if (delta && role_first)
            json_object_set_new(delta, "role", json_string("assistant"));
        if (delta && !finish)
            json_object_set_new(delta, "content", json_string(text));
        choice = json_pack("{s:i,s:o,s:n,s:o}", "index", index, "delta",
                           delta, "logprobs", "finish_reason",
                           str_or_null(finish));
    } else {
        choice = json_pack("{s:i,s:s,s:n,s:o}", "index", index, "text",
                           finish ? "" : text, "logprobs", "finish_reason",
                           str_or_null(finish));
    }
    if (!choice || json_object_set_new(o, "choices",
                                       json_pack("[o]", choice))) {
        json_decref(o);
        return NULL;
    }
    return dump(o);
}

char *openai_models_json(const char *model, long long created)
{
    return dump(json_pack("{s:s,s:[{s:s,s:s,s:I,s:s}]}", "object", "list",
                          "data", "id", model, "object", "model", "created",
                          (json_int_t)created, "owned_by", "mhsa"));
}
