// test_server_text.c — mhsa-server's pure logic without a model: UTF-8
// holdback and repair, stop strings (found, and their possible starts
// held back), SSE framing, and the checking of request bodies
// (tools/mhsa-server/text.h, openai.h). The server itself, on a real
// model, is tested by tests/server/test_openai.py (.ci/test-server.sh).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openai.h"
#include "text.h"

static int checks, failures;

#define CHECK(cond)                                                       \
    do {                                                                  \
        checks++;                                                         \
        if (!(cond)) {                                                    \
            failures++;                                                   \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__,    \
                    #cond);                                               \
        }                                                                 \
    } while (0)

static void test_utf8(void)
{
    CHECK(text_utf8_complete("abc", 3) == 3);
    CHECK(text_utf8_complete("", 0) == 0);
    CHECK(text_utf8_complete("a\xC3", 2) == 1);            // é started
    CHECK(text_utf8_complete("a\xC3\xA9", 3) == 3);        // é whole
    CHECK(text_utf8_complete("\xE2\x82", 2) == 0);         // € started
    CHECK(text_utf8_complete("\xE2\x82\xAC", 3) == 3);
    CHECK(text_utf8_complete("x\xF0\x9F\x98", 4) == 1);    // emoji started
    CHECK(text_utf8_complete("\xF0\x9F\x98\x80", 4) == 4);
    CHECK(text_utf8_complete("a\xFF", 2) == 2);            // never valid
    CHECK(text_utf8_complete("a\xE0\x80", 3) == 3);        // overlong: not held
    CHECK(text_utf8_complete("a\x80", 2) == 2);            // lone continuation

    char *out = NULL;
    size_t len = 0, cap = 0;
    CHECK(text_append_valid(&out, &len, &cap, "h\xC3\xA9", 3) == 0);
    CHECK(len == 3 && !memcmp(out, "h\xC3\xA9", 3));
    CHECK(text_append_valid(&out, &len, &cap, "\xFF" "a\xC3", 3) == 0);
    CHECK(len == 10 && !strcmp(out, "h\xC3\xA9\xEF\xBF\xBD" "a\xEF\xBF\xBD"));
    CHECK(text_append_valid(&out, &len, &cap, "\xED\xA0\x80", 3) == 0);
    CHECK(len == 19);   // a surrogate: three replacement characters
    free(out);
}

static void test_stops(void)
{
    const char *stops[] = {"END", "\n\n"};
    const char *s = "hello END there";
    CHECK(text_find_stop(s, strlen(s), 0, stops, 2) == 6);
    CHECK(text_find_stop(s, strlen(s), 7, stops, 2) == (size_t)-1);
    CHECK(text_find_stop("a\n\nEND", 6, 0, stops, 2) == 1);   // first wins
    CHECK(text_find_stop("abc", 3, 0, stops, 0) == (size_t)-1);
    const char *empty[] = {""};
    CHECK(text_find_stop("abc", 3, 0, empty, 1) == (size_t)-1);
    // A suffix that may begin a stop is held back.
    CHECK(text_safe_end("hello EN", 8, 0, stops, 2) == 6);
    CHECK(text_safe_end("hello E", 7, 0, stops, 2) == 6);
    CHECK(text_safe_end("hello\n", 6, 0, stops, 2) == 5);
    CHECK(text_safe_end("hello", 5, 0, stops, 2) == 5);
    CHECK(text_safe_end("hello", 5, 5, stops, 2) == 5);
    CHECK(text_safe_end("hello EN", 8, 6, stops, 2) == 6);   // >= from
    CHECK(text_safe_end("hello EN", 8, 7, stops, 2) == 8);   // "N" alone
    CHECK(text_safe_end("ab\xC3", 3, 0, stops, 0) == 2);     // UTF-8 too
    const char *uni[] = {"\xC3\xA9t\xC3\xA9"};
    CHECK(text_safe_end("x\xC3\xA9t", 4, 0, uni, 1) == 1);
}

static void test_sse(void)
{
    char *out = NULL;
    size_t len = 0, cap = 0;
    CHECK(text_sse_event(&out, &len, &cap, "{\"a\":1}") == 0);
    CHECK(text_sse_event(&out, &len, &cap, "[DONE]") == 0);
    CHECK(text_sse_comment(&out, &len, &cap, "keep-alive") == 0);
    CHECK(!strcmp(out, "data: {\"a\":1}\n\ndata: [DONE]\n\n: keep-alive\n\n"));
    CHECK(len == strlen(out));
    free(out);
}

// Parses body; returns the status: 0 and *p filled, or -1 with the field
// in *param.
static int parse(const char *body, int chat, srv_params *p,
                 const char **param)
{
    char err[512];
    int rc = openai_parse(body, strlen(body), chat, p, err, sizeof err,
                          param);
    if (rc)
        CHECK(err[0] != '\0');
    return rc;
}

static void test_parse_good(void)
{
    srv_params p;
    const char *param;
    CHECK(parse("{\"model\":\"x\",\"prompt\":\"Hi\",\"max_tokens\":5,"
                "\"temperature\":0,\"stop\":[\"a\",\"bc\"],\"seed\":7,"
                "\"stream\":true,\"top_k\":3,\"top_p\":0.5,\"min_p\":0.1}",
                0, &p, &param) == 0);
    CHECK(p.max_tokens == 5 && p.stream == 1 && p.n_stops == 2);
    CHECK(!strcmp(p.prompt, "Hi") && p.prompt_len == 2);
    CHECK(p.sp.temperature == 0.0f && p.sp.top_k == 3 && p.seed_given);
    CHECK(p.sp.seed == 7 && p.sp.top_p == 0.5f);
    CHECK(!strcmp(p.stops[1], "bc"));
    openai_params_free(&p);

    CHECK(parse("{\"prompt\":[\"one\"],\"stop\":\"x\"}", 0, &p, &param) == 0);
    CHECK(p.max_tokens == -1 && !p.seed_given && p.n_stops == 1);
    CHECK(p.n == 1);
    openai_params_free(&p);

    CHECK(parse("{\"prompt\":[5,6],\"n\":16}", 0, &p, &param) == 0);
    CHECK(p.n == 16 && !p.prompt && p.n_prompt_ids == 2 &&
          p.prompt_ids[1] == 6);
    CHECK(p.sp.temperature == 1.0f && p.sp.top_p == 0.0f);
    openai_params_free(&p);

    CHECK(parse("{\"messages\":[{\"role\":\"system\",\"content\":\"S\"},"
                "{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                "\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
                "{\"role\":\"developer\",\"content\":\"d\"}],"
                "\"max_completion_tokens\":3,"
                "\"stream_options\":{\"include_usage\":true}}",
                1, &p, &param) == 0);
    CHECK(p.n_msgs == 3 && !strcmp(p.msgs[1].content, "ab"));
    CHECK(!strcmp(p.msgs[2].role, "system") && p.max_tokens == 3);
    CHECK(p.include_usage == 1 && p.chat == 1);
    openai_params_free(&p);
}

// Each body is refused, naming the field.
static void test_parse_bad(void)
{
    static const struct { const char *body; int chat; const char *param; }
    bad[] = {
        {"", 0, NULL},
        {"{", 0, NULL},
        {"[1,2]", 0, NULL},
        {"{\"prompt\":\"a\",\"prompt\":\"b\"}", 0, NULL},
        {"{}", 0, "prompt"},
        {"{\"prompt\":5}", 0, "prompt"},
        {"{\"prompt\":[\"a\",\"b\"]}", 0, "prompt"},
        {"{\"prompt\":\"a\",\"max_tokens\":-1}", 0, "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":\"5\"}", 0, "max_tokens"},
        {"{\"prompt\":\"a\",\"max_tokens\":1.5}", 0, "max_tokens"},
        {"{\"prompt\":\"a\",\"temperature\":\"hot\"}", 0, "temperature"},
        {"{\"prompt\":\"a\",\"temperature\":-1}", 0, "temperature"},
        {"{\"prompt\":\"a\",\"top_p\":2}", 0, "top_p"},
        {"{\"prompt\":\"a\",\"top_k\":-3}", 0, "top_k"},
        {"{\"prompt\":\"a\",\"stop\":5}", 0, "stop"},
        {"{\"prompt\":\"a\",\"stop\":[\"a\",1]}", 0, "stop"},
        {"{\"prompt\":\"a\",\"stream\":\"yes\"}", 0, "stream"},
        {"{\"prompt\":\"a\",\"n\":0}", 0, "n"},
        {"{\"prompt\":\"a\",\"n\":17}", 0, "n"},
        {"{\"prompt\":\"a\",\"n\":2.5}", 0, "n"},
        {"{\"prompt\":\"a\",\"seed\":\"x\"}", 0, "seed"},
        {"{\"prompt\":\"a\",\"model\":3}", 0, "model"},
        {"{\"messages\":[]}", 1, "messages"},
        {"{\"messages\":\"hi\"}", 1, "messages"},
        {"{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}", 1,
         "messages"},
        {"{\"messages\":[{\"role\":\"user\"}]}", 1, "messages"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":7}]}", 1,
         "messages"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}",
         1, NULL},   // jansson refuses \u0000 in the body
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
         "\"image_url\"}]}]}", 1, "messages"},
        {"{\"messages\":[5]}", 1, "messages"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        srv_params p;
        const char *param = "unset";
        int rc = parse(bad[i].body, bad[i].chat, &p, &param);
        CHECK(rc == -1);
        if (rc != -1)
            fprintf(stderr, "  accepted: %s\n", bad[i].body);
        else if (bad[i].param ? !param || strcmp(param, bad[i].param)
                              : param != NULL) {
            failures++;
            fprintf(stderr, "  %s: param %s, want %s\n", bad[i].body,
                    param ? param : "NULL",
                    bad[i].param ? bad[i].param : "NULL");
        }
    }
}

static void test_responses(void)
{
    srv_meta m = {"cmpl-1", 1700000000, "model.gguf", 0};
    srv_usage u = {3, 2};
    const char *text[2] = {"hi", "yo"}, *finish[2] = {"length", "stop"};
    char *s = openai_result_json(&m, text, finish, 1, &u);
    CHECK(s && strstr(s, "\"text\":\"hi\"") &&
          strstr(s, "\"finish_reason\":\"length\"") &&
          strstr(s, "\"total_tokens\":5") &&
          strstr(s, "\"object\":\"text_completion\"") &&
          !strstr(s, "yo"));
    free(s);
    // Two choices, in order, each with its index.
    s = openai_result_json(&m, text, finish, 2, &u);
    CHECK(s && strstr(s, "{\"index\":0,\"text\":\"hi\"") &&
          strstr(s, "{\"index\":1,\"text\":\"yo\"") &&
          strstr(s, "\"finish_reason\":\"stop\"") &&
          strstr(s, "hi") < strstr(s, "yo"));
    free(s);
    m.chat = 1;
    s = openai_chunk_json(&m, 0, "", NULL, 1, NULL);
    CHECK(s && strstr(s, "\"role\":\"assistant\"") &&
          strstr(s, "\"object\":\"chat.completion.chunk\""));
    free(s);
    s = openai_chunk_json(&m, 3, "", "stop", 0, NULL);
    CHECK(s && strstr(s, "\"delta\":{}") && strstr(s, "\"index\":3") &&
          strstr(s, "\"finish_reason\":\"stop\""));
    free(s);
    s = openai_error_json("bad \xFF", "invalid_request_error", NULL, NULL);
    CHECK(s && strstr(s, "\"param\":null") && strstr(s, "\"error\""));
    free(s);
    s = openai_models_json("m.gguf", 1);
    CHECK(s && strstr(s, "\"id\":\"m.gguf\""));
    free(s);
}

int main(void)
{
    test_utf8();
    test_stops();
    test_sse();
    test_parse_good();
    test_parse_bad();
    test_responses();
    printf("server text: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
