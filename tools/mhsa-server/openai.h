// openai.h — the OpenAI request and response shapes, in JSON (jansson):
// a request body of /v1/completions or /v1/chat/completions checked
// field by field into srv_params (no model needed: tested without one),
// and the bodies the server answers with.
#ifndef MHSA_SERVER_OPENAI_H
#define MHSA_SERVER_OPENAI_H

#include <stddef.h>
#include <stdint.h>

#include "mhsa_model.h"

// The most stop strings a request may give, and their longest length;
// the most choices (n) a request may ask for.
enum { OPENAI_MAX_STOPS = 16, OPENAI_MAX_STOP_LEN = 256,
       OPENAI_MAX_CHOICES = 16 };

// What a request asks for. Strings are owned (openai_params_free).
typedef struct srv_params {
    int chat;               // 1: a chat completion (msgs), 0: prompt
    int stream;             // 1: server-sent events
    int n;                  // choices, 1 to OPENAI_MAX_CHOICES
    int include_usage;      // stream_options.include_usage
    long max_tokens;        // -1: not given (the server's default)
    mhsa_sampler_params sp; // temperature, top_p, top_k, min_p,
                            // repeat_penalty, seed (seed_given says)
    int seed_given;
    char *stops[OPENAI_MAX_STOPS];
    size_t n_stops;
    char *prompt;           // completions: the prompt text, or NULL when
    size_t prompt_len;      // it came as token ids:
    int32_t *prompt_ids;    // (n_prompt_ids >= 1), each in [0, 2^31),
    size_t n_prompt_ids;    // used as given (no BOS is added)
    mhsa_chat_message *msgs;  // chat: role and content, both owned
    size_t n_msgs;
} srv_params;

// Parses and checks body[0..len) for a chat (chat = 1) or a completion
// request into *p (zeroed first). Unknown fields are ignored, as OpenAI's
// own server does with the ones it does not use. Returns 0, or -1 with a
// message naming the field and what was wrong in err[0..errcap) and the
// field's name in *param (NULL when it is the whole body): the caller
// answers 400. *p is freed on failure.
int openai_parse(const char *body, size_t len, int chat, srv_params *p,
                 char *err, size_t errcap, const char **param);
void openai_params_free(srv_params *p);

// What a response says besides its text.
typedef struct srv_meta {
    const char *id;        // "cmpl-..." or "chatcmpl-..."
    long long created;     // Unix seconds
    const char *model;     // the model's name
    int chat;
} srv_meta;

typedef struct srv_usage {
    long prompt_tokens, completion_tokens;
} srv_usage;

// The bodies below are malloc'd NUL-terminated JSON (free them), or NULL
// when memory runs out. text must be valid UTF-8.

// {"error": {"message", "type", "param", "code"}}; param and code may be
// NULL (JSON null).
char *openai_error_json(const char *message, const char *type,
                        const char *param, const char *code);
// A whole completion or chat completion: n choices, choice i with
// text[i] and finish[i] ("stop" or "length"), and usage.
char *openai_result_json(const srv_meta *m, const char *const *text,
                         const char *const *finish, int n,
                         const srv_usage *u);
// One streamed chunk of choice `index`: text (may be "") or, when finish
// is not NULL, the choice's last chunk with its finish_reason;
// role_first = 1 sends the chat delta's role (a choice's first chat
// chunk). usage not NULL: the usage chunk (no choices) that
// stream_options.include_usage asks for.
char *openai_chunk_json(const srv_meta *m, int index, const char *text,
                        const char *finish, int role_first,
                        const srv_usage *usage);
// GET /v1/models: the one model.
char *openai_models_json(const char *model, long long created);

#endif
