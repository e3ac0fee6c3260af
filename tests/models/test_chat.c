// test_chat.c — mhsa_chat_apply and mhsa_model_chat_format
// (include/mhsa_model.h): each format's text for llama.cpp's test
// conversation equals llama.cpp's expected output (tests/
// test-chat-template.cpp of llama.cpp at c392e50: the strings below are
// copied from there, not made by mhsa), the templates llama.cpp recognises
// are recognised as the same formats, Mistral's and unknown ones are not,
// and the refusals name what was wrong and leave the buffer untouched.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "family_files.h"
#include "mhsa_model.h"
#include "util.h"

static const mhsa_chat_message conv[] = {
    { "system", "You are a helpful assistant" },
    { "user", "Hello" },
    { "assistant", "Hi there" },
    { "user", "Who are you" },
    { "assistant", "   I am an assistant   " },
    { "user", "Another question" },
};
enum { N_CONV = sizeof conv / sizeof conv[0] };

// Each format: a template llama.cpp's tests recognise as it (shortened to
// the marks that tell it where the full text is long), and llama.cpp's
// expected output for conv with the assistant's turn opened.
static const struct {
    const char *format, *tmpl, *want;
} cases[] = {
    { "chatml",
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + "
      "'\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
      "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
      "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there"
      "<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
      "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n"
      "<|im_start|>user\nAnother question<|im_end|>\n"
      "<|im_start|>assistant\n" },
    { "llama2-sys-bos",
      "{{- '[INST] <<SYS>>\\n' + messages[idx]['content'] + "
      "'\\n<</SYS>>\\n\\n' -}}{{- bos_token + '[INST] ' + "
      "messages[idx]['content'] + ' [/INST]' -}}",
      "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello "
      "[/INST]Hi there</s><s>[INST] Who are you [/INST]   I am an "
      "assistant   </s><s>[INST] Another question [/INST]" },
    { "llama2-sys-strip",
      "{% if message['role'] == 'user' %}{{ '[INST] ' + content.strip() + "
      "' [/INST]' }}{% elif message['role'] == 'system' %}{{ "
      "'<<SYS>>\\n' + content.strip() + '\\n<</SYS>>\\n\\n' }}",
      "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello "
      "[/INST]Hi there</s>[INST] Who are you [/INST]I am an assistant</s>"
      "[INST] Another question [/INST]" },
    { "gemma",
      "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + "
      "'<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{"
      "'<start_of_turn>model\\n'}}{% endif %}",
      "<start_of_turn>user\nYou are a helpful assistant\n\nHello"
      "<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n"
      "<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n"
      "I am an assistant<end_of_turn>\n<start_of_turn>user\nAnother question"
      "<end_of_turn>\n<start_of_turn>model\n" },
    { "llama3",
      "{% set content = '<|start_header_id|>' + message['role'] + "
      "'<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' "
      "%}",
      "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
      "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello"
      "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there"
      "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you"
      "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an "
      "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
      "Another question<|eot_id|><|start_header_id|>assistant"
      "<|end_header_id|>\n\n" },
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static char path[512];

// A small model whose tokenizer.chat_template is tmpl (NULL: none).
static mhsa_model *model_with(const char *tmpl)
{
    const char *d = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/mhsa-chat-%ld.gguf",
             d && d[0] ? d : "/tmp", (long)getpid());
    ck_assert_int_eq(family_write_ex(FAMILY_QWEN2, 0, tmpl, path), 0);
    mhsa_model_params p = {.vocab_only = 1};
    mhsa_model *m = NULL;
    ck_assert_msg(mhsa_model_load(path, &p, &m) == MHSA_OK, "%s",
                  mhsa_last_error());
    unlink(path);
    return m;
}

static const char *apply(const mhsa_model *m, const char *format,
                         const mhsa_chat_message *msg, size_t n, int add)
{
    static char buf[4096];
    size_t len = 0;
    mhsa_status st = mhsa_chat_apply(m, format, msg, n, add, buf, sizeof buf,
                                     &len);
    ck_assert_msg(st == MHSA_OK, "%s", mhsa_last_error());
    ck_assert_uint_eq(len, strlen(buf));
    return buf;
}

START_TEST(formats_write_llama_cpp_text)
{
    for (int i = 0; i < N_CASES; i++) {
        mhsa_model *m = model_with(cases[i].tmpl);
        const char *f = mhsa_model_chat_format(m);
        ck_assert_msg(f && !strcmp(f, cases[i].format), "%s recognised as %s",
                      cases[i].format, f ? f : "(none)");
        ck_assert_str_eq(apply(m, NULL, conv, N_CONV, 1), cases[i].want);
        ck_assert_str_eq(apply(m, cases[i].format, conv, N_CONV, 1),
                         cases[i].want);
        mhsa_model_free(m);
    }
}
END_TEST

// llama.cpp's shorter checks (fmt_sys and fmt_single of its test): a
// system message alone without the assistant's turn; one user message
// with it.
START_TEST(single_messages)
{
    mhsa_model *m = model_with(NULL);
    ck_assert_ptr_null(mhsa_model_chat_format(m));
    const mhsa_chat_message sys = { "system", "You are a helpful assistant" };
    ck_assert_str_eq(apply(m, "chatml", &sys, 1, 0),
                     "<|im_start|>system\nYou are a helpful assistant"
                     "<|im_end|>\n");
    ck_assert_str_eq(apply(m, "llama2-sys", &sys, 1, 0),
                     "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>"
                     "\n\n");
    ck_assert_str_eq(apply(m, "llama3", &sys, 1, 0),
                     "<|start_header_id|>system<|end_header_id|>\n\nYou are "
                     "a helpful assistant<|eot_id|>");
    const mhsa_chat_message user = { "user", "How are you" };
    ck_assert_str_eq(apply(m, "gemma", &user, 1, 1),
                     "<start_of_turn>user\nHow are you<end_of_turn>\n"
                     "<start_of_turn>model\n");
    ck_assert_str_eq(apply(m, "llama3", &user, 1, 1),
                     "<|start_header_id|>user<|end_header_id|>\n\nHow are "
                     "you<|eot_id|><|start_header_id|>assistant"
                     "<|end_header_id|>\n\n");
    // Plain Llama 2: the system text without a block.
    ck_assert_str_eq(apply(m, "llama2", conv, 2, 1),
                     "[INST] You are a helpful assistant\nHello [/INST]");
    ck_assert_str_eq(apply(m, "chatml", NULL, 0, 1),
                     "<|im_start|>assistant\n");
    mhsa_model_free(m);
}
END_TEST

START_TEST(unknown_templates_are_refused)
{
    static const char *const unknown[] = {
        "{{ bos_token }}{% for m in messages %}[INST] {{ m.content }} "
        "[/INST]{% endfor %}[AVAILABLE_TOOLS]",         // Mistral v3
        "[SYSTEM_PROMPT] {{ x }} [INST]",               // Mistral v7
        "<|im_start|>{{ role }}<|im_sep|>",             // Phi 4
        "{{ messages }}",                               // nothing known
    };
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        mhsa_model *m = model_with(unknown[i]);
        ck_assert_ptr_null(mhsa_model_chat_format(m));
        char buf[64] = "untouched";
        size_t len = 7;
        ck_assert_int_eq(mhsa_chat_apply(m, NULL, conv, 2, 1, buf,
                                         sizeof buf, &len),
                         MHSA_ERR_UNSUPPORTED);
        ck_assert(strstr(mhsa_last_error(), "none mhsa knows") &&
                  strstr(mhsa_last_error(), "chatml"));
        ck_assert_str_eq(buf, "untouched");
        // Named, the format is written all the same.
        ck_assert_str_eq(apply(m, "chatml", conv + 1, 1, 0),
                         "<|im_start|>user\nHello<|im_end|>\n");
        mhsa_model_free(m);
    }
}
END_TEST

START_TEST(refusals)
{
    mhsa_model *m = model_with(cases[0].tmpl);
    char buf[32] = "untouched";
    size_t len = 0;
    const mhsa_chat_message bad_role = { "tool", "x" }, no_text = { "user",
                                                                   NULL };
    ck_assert_int_eq(mhsa_chat_apply(NULL, NULL, conv, 1, 1, buf, 32, &len),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, conv, 1, 1, buf, 32, NULL),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, NULL, 1, 1, buf, 32, &len),
                     MHSA_ERR_INVALID_ARG);
    ck_assert(strstr(mhsa_last_error(), "msgs is NULL"));
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, conv, 1, 1, NULL, 32, &len),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, &bad_role, 1, 1, buf, 32,
                                     &len), MHSA_ERR_INVALID_ARG);
    ck_assert(strstr(mhsa_last_error(), "msgs[0].role = \"tool\""));
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, &no_text, 1, 1, buf, 32, &len),
                     MHSA_ERR_INVALID_ARG);
    ck_assert(strstr(mhsa_last_error(), "msgs[0].content is NULL"));
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, conv, 1, 2, buf, 32, &len),
                     MHSA_ERR_INVALID_ARG);
    ck_assert(strstr(mhsa_last_error(), "add_assistant = 2"));
    ck_assert_int_eq(mhsa_chat_apply(m, "vicuna", conv, 1, 1, buf, 32,
                                     &len), MHSA_ERR_UNSUPPORTED);
    ck_assert(strstr(mhsa_last_error(), "\"vicuna\""));
    ck_assert_str_eq(buf, "untouched");
    // Too small: the size it needs, the buffer untouched; then it fits.
    size_t need = strlen(cases[0].want);
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, conv, N_CONV, 1, buf, 32,
                                     &len), MHSA_ERR_SHAPE);
    ck_assert_uint_eq(len, need);
    ck_assert_str_eq(buf, "untouched");
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, conv, N_CONV, 1, NULL, 0,
                                     &len), MHSA_ERR_SHAPE);
    ck_assert_uint_eq(len, need);
    char *big = malloc(need + 1);
    ck_assert(big);
    ck_assert_int_eq(mhsa_chat_apply(m, NULL, conv, N_CONV, 1, big, need + 1,
                                     &len), MHSA_OK);
    ck_assert_str_eq(big, cases[0].want);
    free(big);
    mhsa_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("chat");
    TCase *tc = tcase_create("chat");
    tcase_add_test(tc, formats_write_llama_cpp_text);
    tcase_add_test(tc, single_messages);
    tcase_add_test(tc, unknown_templates_are_refused);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
