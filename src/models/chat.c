// chat.c — a conversation as one prompt in the model's chat format
// (include/mhsa_model.h, mhsa_chat_apply). The formats are recognised by
// marks in tokenizer.chat_template, not by running the Jinja template, as
// llama.cpp's llama_chat_apply_template does; each writes the text
// llama.cpp writes for the same messages, so that a server or a script
// gets llama.cpp's prompt.
#include "mhsa_model.h"

#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "io/file_read.h"

// A growing text written into the caller's buffer while it fits; len
// counts every byte asked for (snprintf's way).
typedef struct chat_out {
    char *buf;
    size_t cap, len;
} chat_out;

static void put_n(chat_out *o, const char *s, size_t n)
{
    if (o->len < o->cap && n) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void put(chat_out *o, const char *s) { put_n(o, s, strlen(s)); }

// s without the whitespace at either end (llama.cpp's trim: " \t\n\r").
static void put_trim(chat_out *o, const char *s)
{
    const char *ws = " \t\n\r";
    size_t n = strlen(s), a = 0;
    while (a < n && strchr(ws, s[a]))
        a++;
    while (n > a && strchr(ws, s[n - 1]))
        n--;
    put_n(o, s + a, n - a);
}

// The formats whose every turn is open + role + mid + content + close,
// with the assistant's turn opened the same way.
typedef struct turn_marks {
    const char *open, *mid, *close;
    int trim;   // the content without its outer whitespace
} turn_marks;

// What a format writes: the messages, whether the assistant's turn is
// opened, and the format's variant (Llama 2's LLAMA2_* bits).
typedef struct chat_call {
    const mhsa_chat_message *msg;
    size_t n;
    int add_assistant;
    unsigned variant;
} chat_call;

static void turns(chat_out *o, const turn_marks *t, const chat_call *c)
{
    const mhsa_chat_message *msg = c->msg;
    size_t n = c->n;
    int add_assistant = c->add_assistant;
    for (size_t i = 0; i < n; i++) {
        put(o, t->open);
        put(o, msg[i].role);
        put(o, t->mid);
        (t->trim ? put_trim : put)(o, msg[i].content);
        put(o, t->close);
    }
    if (add_assistant) {
        put(o, t->open);
        put(o, "assistant");
        put(o, t->mid);
    }
}

// <|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n
static void chatml(chat_out *o, const chat_call *c)
{
    static const turn_marks t = { "<|im_start|>", "\n", "<|im_end|>\n", 0 };
    turns(o, &t, c);
}

// <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> (trimmed).
static void llama3(chat_out *o, const chat_call *c)
{
    static const turn_marks t = { "<|start_header_id|>",
                                  "<|end_header_id|>\n\n", "<|eot_id|>", 1 };
    turns(o, &t, c);
}

// Gemma has no system turn: the last system message is put before the
// next user turn's text; the assistant is "model".
static void gemma(chat_out *o, const chat_call *c)
{
    const mhsa_chat_message *msg = c->msg;
    const char *system = NULL;
    size_t n = c->n;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(msg[i].role, "system")) {
            system = msg[i].content;
            continue;
        }
        int model = !strcmp(msg[i].role, "assistant");
        put(o, "<start_of_turn>");
        put(o, model ? "model" : msg[i].role);
        put(o, "\n");
        if (system && !model) {
            chat_out t = { NULL, 0, 0 };
            put_trim(&t, system);       // (an empty one is dropped)
            if (t.len) {
                put_trim(o, system);
                put(o, "\n\n");
            }
            system = NULL;
        }
        put_trim(o, msg[i].content);
        put(o, "<end_of_turn>\n");
    }
    if (c->add_assistant)
        put(o, "<start_of_turn>model\n");
}

// Llama 2 (llama.cpp's "llama2", "llama2-sys" and two variants):
// [INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST]answer</s>[INST] ...;
// "llama2" has no system block (its text and a newline instead), "-bos"
// puts <s> before each later [INST], "-strip" trims every message. The
// assistant's turn is open after [/INST] already.
enum { LLAMA2_SYS = 1, LLAMA2_BOS = 2, LLAMA2_STRIP = 4 };

static void llama2(chat_out *o, const chat_call *c)
{
    int sys = !!(c->variant & LLAMA2_SYS), inside = 1;
    put(o, "[INST] ");
    for (size_t i = 0; i < c->n; i++) {
        if (!inside) {
            inside = 1;
            put(o, c->variant & LLAMA2_BOS ? "<s>[INST] " : "[INST] ");
        }
        const char *role = c->msg[i].role;
        int system = !strcmp(role, "system");
        if (system && sys)
            put(o, "<<SYS>>\n");
        (c->variant & LLAMA2_STRIP ? put_trim : put)(o, c->msg[i].content);
        if (system)
            put(o, sys ? "\n<</SYS>>\n\n" : "\n");
        else if (!strcmp(role, "user"))
            put(o, " [/INST]");
        else {
            put(o, "</s>");
            inside = 0;
        }
    }
}

static const struct {
    const char *name;
    void (*write)(chat_out *, const chat_call *);
    unsigned variant;
} formats[] = {
    { "chatml", chatml, 0 },
    { "llama3", llama3, 0 },
    { "gemma", gemma, 0 },
    { "llama2", llama2, 0 },
    { "llama2-sys", llama2, LLAMA2_SYS },
    { "llama2-sys-bos", llama2, LLAMA2_SYS | LLAMA2_BOS },
    { "llama2-sys-strip", llama2, LLAMA2_SYS | LLAMA2_STRIP },
};

#define N_FORMATS (sizeof formats / sizeof formats[0])

static const char *format_of(const char *tmpl)
{
    if (!tmpl)
        return NULL;
    for (size_t i = 0; i < N_FORMATS; i++)   // a template that is a name
        if (!strcmp(tmpl, formats[i].name))
            return formats[i].name;
    // llama.cpp's marks, in its order (other formats of its list that
    // share a mark are refused rather than written as these).
    if (strstr(tmpl, "<|im_start|>"))
        return strstr(tmpl, "<|im_sep|>") ? NULL : "chatml";
    if (!strncmp(tmpl, "mistral", 7) || strstr(tmpl, "[INST]")) {
        if (strstr(tmpl, "[SYSTEM_PROMPT]") ||
            strstr(tmpl, "' [INST] ' + system_message") ||
            strstr(tmpl, "[AVAILABLE_TOOLS]"))
            return NULL;   // Mistral's formats: not written here
        if (strstr(tmpl, "content.strip()"))
            return "llama2-sys-strip";
        if (strstr(tmpl, "bos_token + '[INST]"))
            return "llama2-sys-bos";
        return strstr(tmpl, "<<SYS>>") ? "llama2-sys" : "llama2";
    }
    if (strstr(tmpl, "<start_of_turn>"))
        return "gemma";
    if (strstr(tmpl, "<|start_header_id|>") &&
        strstr(tmpl, "<|end_header_id|>"))
        return "llama3";
    return NULL;
}

const char *mhsa_model_chat_format(const mhsa_model *m)
{
    return m ? format_of(mhsa_model_chat_template(m)) : NULL;
}

static const char *const roles[] = { "system", "user", "assistant" };

mhsa_status mhsa_chat_apply(const mhsa_model *m, const char *format,
                            const mhsa_chat_message *msgs, size_t n,
                            int add_assistant, char *buf, size_t cap,
                            size_t *len)
{
    static const char fn[] = "mhsa_chat_apply";
    if (!m || !len || (!msgs && n) || (!buf && cap))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL%s", fn,
                          !m ? "m" : !len ? "len" : !buf && cap ? "buf"
                                                               : "msgs",
                          !m || !len ? "" : !buf && cap ? " with cap > 0"
                                                        : " with n > 0");
    if (add_assistant != 0 && add_assistant != 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: add_assistant = %d "
                          "(need 0 or 1)", fn, add_assistant);
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: msgs[%zu].%s is "
                              "NULL", fn, i,
                              !msgs[i].role ? "role" : "content");
        size_t r = 0;
        while (r < 3 && strcmp(msgs[i].role, roles[r]))
            r++;
        if (r == 3) {
            char q[64];
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: msgs[%zu].role = "
                              "\"%s\" (need \"system\", \"user\" or "
                              "\"assistant\")", fn, i,
                              mhsa__esc(q, sizeof q, msgs[i].role,
                                        strlen(msgs[i].role)));
        }
    }
    const char *name = format ? format : mhsa_model_chat_format(m);
    size_t f = 0;
    while (name && f < N_FORMATS && strcmp(name, formats[f].name))
        f++;
    if (!name || f == N_FORMATS) {
        char q[64];
        if (format)
            return mhsa__fail(MHSA_ERR_UNSUPPORTED, "%s: format \"%s\" is "
                              "not one of chatml, llama3, gemma, llama2, "
                              "llama2-sys, llama2-sys-bos, llama2-sys-strip",
                              fn, mhsa__esc(q, sizeof q, format,
                                            strlen(format)));
        return mhsa__fail(MHSA_ERR_UNSUPPORTED, "%s: the model's chat "
                          "template is %s; pass a format (chatml, llama3, "
                          "gemma, llama2, llama2-sys, llama2-sys-bos, "
                          "llama2-sys-strip)", fn,
                          mhsa_model_chat_template(m) ? "none mhsa knows"
                                                      : "missing");
    }
    // Measured first, then written only when it fits: buf is untouched
    // otherwise.
    chat_call c = { msgs, n, add_assistant, formats[f].variant };
    chat_out o = { NULL, 0, 0 };
    formats[f].write(&o, &c);
    *len = o.len;
    if (cap <= o.len)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: the prompt is %zu bytes; "
                          "buf has room for %zu with its NUL", fn, o.len,
                          cap);
    o = (chat_out){ buf, cap, 0 };
    formats[f].write(&o, &c);
    buf[o.len] = '\0';
    return MHSA_OK;
}
