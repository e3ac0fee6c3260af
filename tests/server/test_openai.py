"""mhsa-server through the official openai client (and raw HTTP where a
client would not send such a request): completions and chat, streamed and
not, greedy text equal to mhsa-generate's, concurrent streams equal to
their solo runs (batch invariance), stop strings, bad inputs, disconnects,
a full queue and a clean stop. Run by .ci/test-server.sh (conftest.py says
the environment); `-m bad` selects the bad-input and lifetime tests, which
the ASan build's server runs too."""
import http.client
import json
import os
import socket
import subprocess
import threading
import time
import urllib.parse

import openai
import pytest

from conftest import CTX

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "The three primary colors are",
    "Water boils at",
    "My favourite recipe for pancakes:",
    "The quick brown fox",
    "In 1969, the first humans",
]


def host_port(url):
    u = urllib.parse.urlparse(url)
    return u.hostname, u.port


def raw(url, method, path, body=None, headers=None):
    """One HTTP request; returns (status, parsed JSON body or text)."""
    h, p = host_port(url)
    c = http.client.HTTPConnection(h, p, timeout=120)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
    finally:
        c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data


def health(url):
    status, body = raw(url, "GET", "/health")
    assert status == 200 and body["status"] == "ok", body
    return body


def wait_idle(url, timeout=30):
    """Waits until no slot is busy and nothing is queued."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        h = health(url)
        if h["slots_busy"] == 0 and h["queued"] == 0:
            return h
        time.sleep(0.05)
    raise AssertionError(f"the server stayed busy: {health(url)}")


def complete(client, model, prompt, **kw):
    kw.setdefault("max_tokens", 24)
    kw.setdefault("temperature", 0)
    return client.completions.create(model=model, prompt=prompt, **kw)


def complete_stream(client, model, prompt, **kw):
    """The streamed text, the finish reason and the usage chunk's."""
    kw.setdefault("max_tokens", 24)
    kw.setdefault("temperature", 0)
    text, finish, usage = [], None, None
    for ch in client.completions.create(model=model, prompt=prompt,
                                        stream=True,
                                        stream_options={"include_usage":
                                                        True}, **kw):
        if ch.usage:
            usage = ch.usage
        for c in ch.choices:
            text.append(c.text)
            finish = c.finish_reason or finish
    return "".join(text), finish, usage


def chat(client, model, content, stream=False, **kw):
    kw.setdefault("max_tokens", 32)
    kw.setdefault("temperature", 0)
    msgs = [{"role": "user", "content": content}]
    if not stream:
        r = client.chat.completions.create(model=model, messages=msgs, **kw)
        return r.choices[0].message.content, r.choices[0].finish_reason
    text, finish, role = [], None, None
    for ch in client.chat.completions.create(model=model, messages=msgs,
                                             stream=True, **kw):
        for c in ch.choices:
            role = c.delta.role or role
            text.append(c.delta.content or "")
            finish = c.finish_reason or finish
    assert role == "assistant"
    return "".join(text), finish


# ---- What a request gives ---------------------------------------------------

def test_models_and_health(client, server_url):
    models = client.models.list().data
    assert len(models) == 1 and models[0].id.endswith(".gguf")
    h = health(server_url)
    assert h["slots_idle"] + h["slots_busy"] >= 1


@pytest.mark.skipif(not os.environ.get("MHSA_GENERATE"),
                    reason="MHSA_GENERATE not set")
@pytest.mark.parametrize("prompt", PROMPTS[:3])
def test_greedy_equals_mhsa_generate(client, model_name, prompt):
    r = complete(client, model_name, prompt)
    text = r.choices[0].text
    out = subprocess.run([os.environ["MHSA_GENERATE"], "--model",
                          os.environ["MHSA_MODEL"], "--prompt", prompt,
                          "--temperature", "0", "-n", "24", "--threads",
                          "2"], capture_output=True, check=True).stdout
    assert out == (prompt + text + "\n").encode()
    u = r.usage
    assert u.completion_tokens == 24 or r.choices[0].finish_reason == "stop"
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    assert r.choices[0].finish_reason == ("length" if u.completion_tokens
                                          == 24 else "stop")


@pytest.mark.skipif(not os.environ.get("MHSA_GENERATE"),
                    reason="MHSA_GENERATE not set")
@pytest.mark.parametrize("prompt", PROMPTS[3:5])
def test_token_id_prompt_equals_text(client, model_name, prompt):
    # mhsa-generate --ids gives the prompt's ids (BOS included where the
    # model adds one) and the greedy answer's; the server given those ids
    # answers what it answers to the text, in both list shapes.
    out = subprocess.run([os.environ["MHSA_GENERATE"], "--model",
                          os.environ["MHSA_MODEL"], "--prompt", prompt,
                          "--temperature", "0", "-n", "12", "--ids",
                          "--threads", "2"], capture_output=True,
                         check=True).stdout.decode()
    ids = {k: [int(t) for t in v.split()] for k, v in
           (line.split(":", 1) for line in out.splitlines() if ":" in line)}
    by_text = complete(client, model_name, prompt, max_tokens=12)
    for shape in (ids["prompt_ids"], [ids["prompt_ids"]]):
        r = complete(client, model_name, shape, max_tokens=12)
        assert r.choices[0].text == by_text.choices[0].text
        assert r.usage.prompt_tokens == len(ids["prompt_ids"])
        assert r.usage.completion_tokens == len(ids["new_ids"])


@pytest.mark.bad
def test_token_ids_outside_the_vocabulary(server_url, model_name):
    for prompt, what in (([1, 2, 10 ** 7], "token 2 is 10000000"),
                         ([5, -1], "token 1 is -1"),
                         ([[1, 2], [3]], "exactly one prompt"),
                         ([], "not list")):
        st, b = raw(server_url, "POST", "/v1/completions",
                    json.dumps({"prompt": prompt}).encode())
        e = error_of(st, b, 400)
        assert e["param"] == "prompt"
        if what != "not list":
            assert what in e["message"], e
    health(server_url)


def test_n_choices(client, model_name):
    # Greedy: every choice is the n = 1 answer; usage counts the prompt
    # once and every choice's tokens.
    one = complete(client, model_name, PROMPTS[5], max_tokens=10)
    three = complete(client, model_name, PROMPTS[5], max_tokens=10, n=3)
    assert [c.index for c in three.choices] == [0, 1, 2]
    assert all(c.text == one.choices[0].text for c in three.choices)
    assert three.usage.prompt_tokens == one.usage.prompt_tokens
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens
    # Sampled with a seed: choice i is the n = 1 answer of seed + i.
    kw = dict(max_tokens=12, temperature=1.0)
    two = complete(client, model_name, PROMPTS[6], n=2, seed=11, **kw)
    solo = [complete(client, model_name, PROMPTS[6], seed=s, **kw)
            .choices[0].text for s in (11, 12)]
    assert [c.text for c in two.choices] == solo
    assert solo[0] != solo[1]   # the seeds differ, so can the check
    # Streamed: each index's pieces make that choice, each ends once.
    texts, finishes = {0: [], 1: []}, {}
    for ch in client.completions.create(model=model_name, prompt=PROMPTS[6],
                                        n=2, seed=11, stream=True, **kw):
        for c in ch.choices:
            texts[c.index].append(c.text)
            if c.finish_reason:
                assert c.index not in finishes
                finishes[c.index] = c.finish_reason
    assert ["".join(texts[i]) for i in (0, 1)] == solo
    assert sorted(finishes) == [0, 1]


def test_chat_n_choices_streamed(client, model_name):
    msgs = [{"role": "user", "content": "Name a colour."}]
    whole = client.chat.completions.create(model=model_name, messages=msgs,
                                           n=2, seed=5, max_tokens=8)
    roles, texts = {}, {0: [], 1: []}
    for ch in client.chat.completions.create(model=model_name,
                                             messages=msgs, n=2, seed=5,
                                             max_tokens=8, stream=True):
        for c in ch.choices:
            if c.delta.role:
                roles[c.index] = c.delta.role
            texts[c.index].append(c.delta.content or "")
    assert roles == {0: "assistant", 1: "assistant"}
    assert ["".join(texts[i]) for i in (0, 1)] == \
        [c.message.content for c in whole.choices]


@pytest.mark.parametrize("prompt", PROMPTS[:2])
def test_stream_equals_whole(client, model_name, prompt):
    r = complete(client, model_name, prompt, max_tokens=40)
    text, finish, usage = complete_stream(client, model_name, prompt,
                                          max_tokens=40)
    assert text == r.choices[0].text
    assert finish == r.choices[0].finish_reason
    assert usage.completion_tokens == r.usage.completion_tokens
    assert usage.prompt_tokens == r.usage.prompt_tokens


def test_chat_streamed_and_whole(client, model_name):
    whole, f1 = chat(client, model_name, "What is the capital of France?")
    streamed, f2 = chat(client, model_name, "What is the capital of France?",
                        stream=True)
    assert whole and whole == streamed and f1 == f2
    # The chat format is SmolLM2's ChatML: the same text as a completion of
    # the prompt it makes.
    prompt = ("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
              "<|im_start|>assistant\n")
    r = complete(client, model_name, prompt, max_tokens=32)
    assert r.choices[0].text == whole
    assert r.choices[0].finish_reason == f1


def test_chat_ends_at_end_of_turn(client, model_name):
    text, finish = chat(client, model_name, "What is 2+2?", max_tokens=200)
    assert finish == "stop" and "<|im_end|>" not in text


def test_stop_strings(client, model_name):
    full = complete(client, model_name, PROMPTS[1], max_tokens=32)
    text = full.choices[0].text
    words = text.split()
    assert len(words) > 4, text
    stop = words[3]
    cut = text[:text.index(stop)]
    r = complete(client, model_name, PROMPTS[1], max_tokens=32,
                 stop=[stop, "\u00e9t\u00e9 never"])
    assert r.choices[0].text == cut
    assert r.choices[0].finish_reason == "stop"
    s, finish, _ = complete_stream(client, model_name, PROMPTS[1],
                                   max_tokens=32, stop=stop)
    assert s == cut and finish == "stop"


def test_max_tokens_zero_and_default(client, model_name):
    r = complete(client, model_name, "Hello", max_tokens=0)
    assert r.choices[0].text == "" and r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 0


# ---- Batch invariance -------------------------------------------------------

def test_concurrent_streams_equal_solo(client, model_name, server_url):
    """8 streams at once (and a seeded sampled one) give each the text it
    gives alone, while the engine batches them."""
    jobs = [(p, dict(max_tokens=32)) for p in PROMPTS]
    jobs.append((PROMPTS[0], dict(max_tokens=32, temperature=0.9, top_p=0.95,
                                  seed=1234, extra_body={"top_k": 50})))
    solo = [complete(client, model_name, p, **kw).choices[0].text
            for p, kw in jobs]
    wait_idle(server_url)
    got = [None] * len(jobs)
    busiest = [0]
    done = threading.Event()

    def watch():
        while not done.is_set():
            busiest[0] = max(busiest[0], health(server_url)["slots_busy"])
            time.sleep(0.02)

    def run(i):
        got[i] = complete_stream(client, model_name, jobs[i][0],
                                 **jobs[i][1])[0]

    w = threading.Thread(target=watch)
    w.start()
    threads = [threading.Thread(target=run, args=(i,))
               for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    w.join()
    for i, (p, kw) in enumerate(jobs):
        assert got[i] == solo[i], (p, kw)
    assert busiest[0] >= 2, "the requests never ran together"


def test_one_thread_equals_two(client, model_name, start_server):
    """The same requests batched on a server with 1 thread give the bits
    of the 2-thread server's solo runs."""
    jobs = PROMPTS[:4]
    two = [complete(client, model_name, p, max_tokens=16).choices[0].text
           for p in jobs]
    srv = start_server("--threads", "1", "--parallel", "4")
    c1 = openai.OpenAI(base_url=srv.url + "/v1", api_key="none",
                       max_retries=0, timeout=300)
    got = [None] * len(jobs)

    def run(i):
        got[i] = complete_stream(c1, model_name, jobs[i], max_tokens=16)[0]

    threads = [threading.Thread(target=run, args=(i,))
               for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == two


# ---- Bad input ----------------------------------------------------------------

def error_of(status, body, want_status):
    assert status == want_status, (status, body)
    e = body["error"]
    assert set(e) >= {"message", "type", "param", "code"} and e["message"]
    return e


@pytest.mark.bad
@pytest.mark.parametrize("body", [b"{not json", b"", b"[1, 2]",
                                  b'{"prompt": "a"', b"\xff\xfe"])
def test_malformed_json(server_url, body):
    st, b = raw(server_url, "POST", "/v1/completions", body,
                {"Content-Type": "application/json"})
    error_of(st, b, 400)
    health(server_url)


@pytest.mark.bad
@pytest.mark.parametrize("path,fields,param", [
    ("/v1/completions", {"prompt": 5}, "prompt"),
    ("/v1/completions", {"prompt": "a", "max_tokens": "5"}, "max_tokens"),
    ("/v1/completions", {"prompt": "a", "max_tokens": -1}, "max_tokens"),
    ("/v1/completions", {"prompt": "a", "temperature": "hot"},
     "temperature"),
    ("/v1/completions", {"prompt": "a", "top_p": 7}, "top_p"),
    ("/v1/completions", {"prompt": "a", "stop": [1]}, "stop"),
    ("/v1/completions", {"prompt": "a", "stream": "yes"}, "stream"),
    ("/v1/chat/completions", {"messages": "hi"}, "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "cat",
                                            "content": "x"}]}, "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "user"}]}, "messages"),
])
def test_wrong_fields(server_url, path, fields, param):
    st, b = raw(server_url, "POST", path, json.dumps(fields).encode())
    assert error_of(st, b, 400)["param"] == param
    health(server_url)


@pytest.mark.bad
def test_client_errors_are_400(client, model_name, server_url):
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model=model_name, prompt="a",
                                  max_tokens=-5)
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=model_name, prompt="word " * 2000,
                                  max_tokens=4)
    assert e.value.code == "context_length_exceeded"
    health(server_url)


@pytest.mark.bad
def test_body_too_large(server_url):
    body = b'{"prompt": "' + b"a" * (2 << 20) + b'"}'
    st, b = raw(server_url, "POST", "/v1/completions", body)
    assert error_of(st, b, 413)["code"] == "request_too_large"
    health(server_url)


@pytest.mark.bad
def test_unknown_path_and_method(server_url):
    st, b = raw(server_url, "GET", "/v2/nothing")
    error_of(st, b, 404)
    st, b = raw(server_url, "POST", "/nothing", b"{}")
    error_of(st, b, 404)
    st, b = raw(server_url, "GET", "/v1/completions")
    error_of(st, b, 405)
    st, b = raw(server_url, "DELETE", "/v1/models")
    error_of(st, b, 405)
    health(server_url)


def open_stream(url, max_tokens, n=1):
    """A raw streamed completion (n choices) whose first event has
    arrived; returns the socket (the caller closes it: a client that
    leaves)."""
    h, p = host_port(url)
    s = socket.create_connection((h, p), timeout=120)
    # A prompt SmolLM2 goes on counting after, greedily.
    body = json.dumps({"prompt": "1, 2, 3, 4, 5, 6,", "stream": True,
                       "max_tokens": max_tokens, "temperature": 0, "n": n})
    s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
               "Content-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    got = b""
    while b"data: " not in got:
        chunk = s.recv(4096)
        assert chunk, got
        got += chunk
    assert b" 200 " in got.split(b"\r\n")[0]
    return s


@pytest.mark.bad
def test_disconnect_mid_stream_frees_the_slot(server_url):
    wait_idle(server_url)
    s = open_stream(server_url, CTX - 16)
    assert health(server_url)["slots_busy"] == 1
    s.close()
    wait_idle(server_url, timeout=30)
    # A stream of three choices frees all three slots.
    s = open_stream(server_url, CTX - 16, n=3)
    assert health(server_url)["slots_busy"] == 3
    s.close()
    wait_idle(server_url, timeout=30)
    # A plain request whose client leaves before the answer.
    h, p = host_port(server_url)
    s = socket.create_connection((h, p), timeout=30)
    body = json.dumps({"prompt": "1, 2, 3, 4, 5, 6,",
                       "max_tokens": CTX - 16, "temperature": 0})
    s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
               f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    t0 = time.time()
    while health(server_url)["slots_busy"] == 0 and time.time() - t0 < 30:
        time.sleep(0.02)
    s.close()
    wait_idle(server_url, timeout=30)


@pytest.mark.bad
def test_queue_full_is_503(start_server):
    srv = start_server("--parallel", "1", "--queue", "1")
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none",
                           max_retries=0, timeout=300)
    first = open_stream(srv.url, CTX - 16)   # holds the one slot
    # Two choices where the queue holds one: refused whole, and the
    # choice that was queued leaves the queue.
    with pytest.raises(openai.InternalServerError) as e:
        complete(client, "m", "Hi", max_tokens=2, n=2)
    assert e.value.status_code == 503 and e.value.code == "queue_full"
    t0 = time.time()
    while health(srv.url)["queued"] and time.time() - t0 < 30:
        time.sleep(0.02)
    assert health(srv.url)["queued"] == 0
    waiting = {}

    def second():
        try:
            waiting["r"] = complete(client, "m", "Hi", max_tokens=2)
        except Exception as e:   # reported below
            waiting["e"] = e

    t = threading.Thread(target=second)
    t.start()
    t0 = time.time()
    while health(srv.url)["queued"] < 1 and time.time() - t0 < 30:
        time.sleep(0.02)
    assert health(srv.url)["queued"] == 1
    with pytest.raises(openai.InternalServerError) as e:
        complete(client, "m", "Hi", max_tokens=2)
    assert e.value.status_code == 503
    assert e.value.code == "queue_full"
    first.close()   # the slot frees; the queued request runs
    t.join(120)
    assert "r" in waiting, waiting.get("e")
    assert waiting["r"].usage.completion_tokens >= 1
    health(srv.url)


@pytest.mark.bad
def test_stop_while_streaming_exits_0(start_server):
    srv = start_server("--parallel", "2")
    s = open_stream(srv.url, CTX - 16)
    rc = srv.stop()
    assert rc == 0, "".join(srv.stderr)
    # The stream ended (an error event and [DONE], or closed).
    s.settimeout(30)
    rest = b""
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        rest += chunk
    s.close()
    assert b"shutting down" in rest or rest == b"" or b"[DONE]" in rest


@pytest.mark.bad
def test_unknown_chat_template_is_refused(start_server):
    with pytest.raises(RuntimeError) as e:
        start_server("--chat-template", "no-such-format")
    assert "no-such-format" in str(e.value)
