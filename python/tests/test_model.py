"""mhsa.Model on a real model file: SmolLM2-135M-Instruct (Q4_1), the file
.ci/fetch-model.sh fetches, given as MHSA_TEST_MODEL. The C side of the
comparisons is the meson build's own programs: mhsa-generate
(MHSA_PY_GENERATE) and tests/model_logits (MHSA_PY_MODEL_LOGITS), run as
separate processes on the public C API. Without these variables the tests
skip, unless MHSA_PY_STRICT=1 (CI), where they fail.

Token counts stay small. CI runs the suite twice, the second time with
MHSA_ISA=scalar, where a token takes about ten times as long: there only
the tests whose result depends on the kernels run (the logits' bits, the
text against mhsa-generate's); the loop, streaming, stop strings, chat and
errors are the same Python whatever the kernels, and run once."""
import os
import subprocess
import threading

import numpy as np
import pytest

import mhsa
from test_threads import longest_pause_during

# The tests of the Python layer's logic, skipped with the scalar kernels.
logic = pytest.mark.skipif(os.environ.get("MHSA_ISA") == "scalar",
                           reason="the same Python on any kernels: run with "
                           "the dispatch's ISA only")

PROMPT = "The capital of France is"
N_NEW = 12
CTX = 256


def _env_path(var, what):
    path = os.environ.get(var)
    if path and os.path.exists(path):
        return path
    why = f"{var} is not set" if not path else f"{var}={path} does not exist"
    if os.environ.get("MHSA_PY_STRICT") == "1":
        pytest.fail(f"{why} (MHSA_PY_STRICT=1): {what}")
    pytest.skip(f"{why}: {what}")


@pytest.fixture(scope="module")
def model_path():
    return _env_path("MHSA_TEST_MODEL", "the SmolLM2 GGUF file "
                     "(.ci/fetch-model.sh smollm2)")


@pytest.fixture(scope="module")
def model(model_path):
    with mhsa.Model(model_path, context=CTX) as m:
        yield m


@pytest.fixture(scope="module")
def generate_bin():
    return _env_path("MHSA_PY_GENERATE", "the build's mhsa-generate")


@pytest.fixture(scope="module")
def logits_bin():
    return _env_path("MHSA_PY_MODEL_LOGITS", "the build's tests/model_logits")


def run_generate(generate_bin, model_path, prompt, *args):
    """mhsa-generate's stdout (bytes) for `prompt` and the options."""
    r = subprocess.run([generate_bin, "--model", model_path, "--prompt",
                        prompt, *args], capture_output=True, check=False)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout


def generate_ids(generate_bin, model_path, prompt, *args):
    """mhsa-generate --ids: (prompt ids, new ids)."""
    out = run_generate(generate_bin, model_path, prompt, "--ids",
                       *args).decode().splitlines()
    lines = dict(line.split(":", 1) for line in out)
    return ([int(t) for t in lines["prompt_ids"].split()],
            [int(t) for t in lines["new_ids"].split()])


# ---- what the model is -----------------------------------------------------

def test_metadata(model):
    assert model.arch == "llama"
    assert model.n_vocab == 49152
    assert model.n_ctx == CTX
    assert model.n_ctx_train == 8192
    assert model.chat_format == "chatml"
    assert "<|im_start|>" in model.chat_template
    assert model.bos >= 0 and model.eos >= 0
    assert model.is_eog(model.eos)
    assert model.is_eog(model.tokenize("<|im_end|>", add_special=False,
                                       parse_special=True)[0])
    assert not model.is_eog(model.tokenize("Paris", add_special=False)[0])
    assert not model.is_eog(-1) and not model.is_eog(model.n_vocab)
    assert model.weight_types.startswith("q4_1")
    assert "SmolLM2" in repr(model)


# ---- tokens ----------------------------------------------------------------

TEXTS = ["Hello, world!", "  two  spaces\n\nand lines\t", "naïve café — 東京 🙂",
         "x" * 300, ""]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_tokenize_detokenize_round_trip(model, text):
    ids = model.tokenize(text, add_special=False)
    assert all(isinstance(t, int) and 0 <= t < model.n_vocab for t in ids)
    assert model.detokenize(ids) == text
    assert model.tokenize(text.encode(), add_special=False) == ids


def test_special_tokens(model):
    text = "<|im_start|>user\nHi<|im_end|>"
    parsed = model.tokenize(text, add_special=False, parse_special=True)
    plain = model.tokenize(text, add_special=False)
    assert len(parsed) < len(plain)
    assert model.detokenize(parsed, special=True) == text
    assert model.detokenize(plain) == text
    # Control tokens give nothing unless special=True.
    assert model.detokenize(parsed) == "user\nHi"


@logic
def test_ids_equal_mhsa_generates(model, model_path, generate_bin):
    text = "Tokens: naïve café, 42 <|im_start|>!"
    # mhsa-generate parses special tokens' text unless --no-parse-special;
    # its prompt ids are mhsa_tokenize's with ADD_SPECIAL.
    c_plain, _ = generate_ids(generate_bin, model_path, text, "-n", "0",
                              "--no-parse-special")
    c_parsed, _ = generate_ids(generate_bin, model_path, text, "-n", "0")
    assert model.tokenize(text) == c_plain
    assert model.tokenize(text, parse_special=True) == c_parsed
    assert c_plain != c_parsed


# ---- generation against mhsa-generate ---------------------------------------

def test_greedy_text_equals_mhsa_generates(model, model_path, generate_bin):
    text = model.generate(PROMPT, max_tokens=N_NEW)
    out = run_generate(generate_bin, model_path, PROMPT, "-n", str(N_NEW),
                       "--temperature", "0", "--no-parse-special")
    # mhsa-generate prints the prompt, the new text, then a newline.
    assert out.decode("utf-8", "replace") == PROMPT + text + "\n"
    assert text.strip()


@logic
def test_sampled_text_equals_mhsa_generates(model, model_path, generate_bin):
    # The same seed and sampling parameters give the same draws as the C
    # tool's sampler (which penalises nothing).
    text = model.generate(PROMPT, max_tokens=N_NEW, temperature=0.8,
                          top_k=40, seed=7)
    out = run_generate(generate_bin, model_path, PROMPT, "-n", str(N_NEW),
                       "--temperature", "0.8", "--top-k", "40", "--seed",
                       "7", "--no-parse-special")
    assert out.decode("utf-8", "replace") == PROMPT + text + "\n"


@logic
def test_prompt_as_ids_and_as_text_agree(model):
    ids = model.tokenize(PROMPT)
    assert model.generate(ids, max_tokens=6) == model.generate(
        PROMPT, max_tokens=6)
    assert model.generate(np.array(ids), max_tokens=6) == model.generate(
        PROMPT, max_tokens=6)


@logic
def test_stream_pieces_join_to_the_text(model):
    text = model.generate(PROMPT, max_tokens=N_NEW)
    pieces = list(model.generate(PROMPT, max_tokens=N_NEW, stream=True))
    assert len(pieces) > 1
    assert all(isinstance(p, str) and p for p in pieces)
    assert "".join(pieces) == text


@logic
def test_seeded_sampling_is_reproducible(model):
    kw = dict(max_tokens=10, temperature=1.0, top_p=0.95, min_p=0.02)
    a = model.generate(PROMPT, seed=123, **kw)
    assert model.generate(PROMPT, seed=123, **kw) == a
    assert "".join(model.generate(PROMPT, seed=123, stream=True, **kw)) == a
    others = {model.generate(PROMPT, seed=s, **kw) for s in (1, 2, 3)}
    assert others - {a}, "three other seeds all gave the same text"


@logic
def test_repeat_penalty_changes_the_text(model):
    prompt = "one two one two one two one two"
    plain = model.generate(prompt, max_tokens=8)
    penalised = model.generate(prompt, max_tokens=8, repeat_penalty=1.5)
    assert penalised != plain
    assert model.generate(prompt, max_tokens=8, repeat_penalty=1.5) == \
        penalised


@logic
def test_max_tokens_and_context_end_generation(model):
    assert model.generate(PROMPT, max_tokens=0) == ""
    ids = model.tokenize("word " * 40)
    with mhsa.Model(model.path, context=len(ids) + 3) as small:
        # Three positions left: three tokens at most, whatever max_tokens.
        out = small.create_chat_completion(
            [{"role": "user", "content": "hi"}], max_tokens=2)
        assert out["usage"]["completion_tokens"] <= 2
        text = small.generate(ids, max_tokens=50)
        assert text == model.generate(ids, max_tokens=3)


# ---- stop strings -----------------------------------------------------------

@logic
def test_stop_strings(model):
    full = model.generate(PROMPT, max_tokens=N_NEW)
    words = full.split()
    assert len(words) >= 3, full
    stop = " " + words[2]
    cut = full[:full.index(stop)]
    assert model.generate(PROMPT, max_tokens=N_NEW, stop=stop) == cut
    assert model.generate(PROMPT, max_tokens=N_NEW,
                          stop=["never there", stop]) == cut
    pieces = list(model.generate(PROMPT, max_tokens=N_NEW, stop=stop,
                                 stream=True))
    assert "".join(pieces) == cut
    # A stop string that never completes holds nothing back for good.
    never = full[-2:] + "\x00"
    assert model.generate(PROMPT, max_tokens=N_NEW, stop=never) == full
    assert "".join(model.generate(PROMPT, max_tokens=N_NEW, stop=never,
                                  stream=True)) == full
    # A stop string at the very start gives nothing.
    assert model.generate(PROMPT, max_tokens=N_NEW, stop=full[:3]) == ""


@logic
def test_streamed_pieces_never_show_a_stop_strings_start(model):
    pieces = list(model.generate(PROMPT, max_tokens=N_NEW, stream=True))
    full = "".join(pieces)
    # A stop string that spans two tokens' pieces: the end of the first
    # piece must wait until the next shows whether it is the stop.
    at = next(i for i in range(1, len(pieces) - 1)
              if len(pieces[i + 1]) >= 2
              and full.find(pieces[i][-1] + pieces[i + 1][:2]) ==
              len("".join(pieces[:i + 1])) - 1)
    stop = pieces[at][-1] + pieces[at + 1][:2]
    expected = full[:full.index(stop)]
    shown = ""
    for piece in model.generate(PROMPT, max_tokens=N_NEW, stop=stop,
                                stream=True):
        shown += piece
        assert expected.startswith(shown), (shown, stop)
    assert shown == expected


def test_text_is_utf8_decoded_across_tokens():
    # The Python layer's text of tokens' bytes, without a model: a
    # character split across tokens, stop strings across pieces.
    from mhsa._model import _Text
    t = _Text([])
    assert [t.feed(b) for b in (b"a\xf0\x9f", b"\x99", b"\x82b")] == \
        ["a", "", "\U0001f642b"]
    assert t.finish() == ""
    t = _Text([])
    assert t.feed(b"x\xe6\x9d") == "x" and t.finish() == "\ufffd"
    t = _Text(["STOP", "end."])
    assert t.feed(b"one S") == "one "
    assert t.feed(b"T") == ""
    assert t.feed(b"ory") == "STory" and not t.stopped
    assert t.feed(b" the en") == " the "
    assert t.feed(b"d. more") == "" and t.stopped
    t = _Text(["ab", "b"])   # the first found in the text wins
    assert t.feed(b"xab") == "x" and t.stopped
    t = _Text(["\U0001f642!"])
    assert t.feed(b"hi \xf0\x9f\x99") == "hi "
    assert t.feed(b"\x82") == "" and t.feed(b"?") == "\U0001f642?"
    assert t.finish() == ""


def test_split_characters_come_whole(model, model_path, generate_bin):
    # This prompt's greedy tokens split Japanese characters into byte
    # tokens: the pieces are whole characters, and the text is
    # mhsa-generate's bytes.
    prompt = "東京は日本の"
    pieces = list(model.generate(prompt, max_tokens=N_NEW, stream=True))
    # A token that ends inside a character gives no piece of its own.
    assert len(pieces) < N_NEW, "no character was split across tokens"
    assert all("\ufffd" not in p for p in pieces[:-1])
    out = run_generate(generate_bin, model_path, prompt, "-n", str(N_NEW),
                       "--temperature", "0", "--no-parse-special")
    assert out.decode("utf-8", "replace") == prompt + "".join(pieces) + "\n"


# ---- logits -----------------------------------------------------------------

def test_logits_bits_equal_the_c_api(model, model_path, logits_bin, tmp_path):
    ids = model.tokenize("The quick brown fox jumps")
    out = tmp_path / "logits.f32"
    r = subprocess.run([logits_bin, model_path, str(CTX), str(out),
                        *map(str, ids)], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
    ref = np.fromfile(out, np.float32).reshape(len(ids), model.n_vocab)
    got = model.logits(ids)
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert got.tobytes() == ref.tobytes()
    # A fresh sequence each call: the same bits again.
    assert model.logits(np.array(ids, np.int64)).tobytes() == ref.tobytes()


@logic
def test_greedy_tokens_are_the_logits_argmax(model, generate_bin, model_path):
    # The first new token of a greedy run is the argmax of the prompt's
    # last row (the first largest, as the sampler picks).
    ids = model.tokenize(PROMPT)
    _, new = generate_ids(generate_bin, model_path, PROMPT, "-n", "1",
                          "--temperature", "0", "--no-parse-special")
    assert int(np.argmax(model.logits(ids)[-1])) == new[0]


# ---- chat ------------------------------------------------------------------

MESSAGES = [{"role": "system", "content": "You are brief."},
            {"role": "user", "content": "What is the capital of France?"}]


def test_chat_apply_is_chatml(model):
    assert model.chat_apply(MESSAGES) == (
        "<|im_start|>system\nYou are brief.<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
        "<|im_start|>assistant\n")
    assert model.chat_apply(MESSAGES, add_assistant=False).endswith(
        "<|im_end|>\n")
    assert model.chat_apply(MESSAGES, chat_format="llama3").startswith(
        "<|start_header_id|>system")


@logic
def test_chat_completion(model):
    out = model.create_chat_completion(MESSAGES, max_tokens=N_NEW)
    assert set(out) == {"id", "object", "created", "model", "choices",
                        "usage"}
    assert out["object"] == "chat.completion"
    assert out["id"].startswith("chatcmpl-")
    assert isinstance(out["created"], int)
    assert out["model"] == os.path.basename(model.path)
    (choice,) = out["choices"]
    assert choice["index"] == 0
    assert choice["message"]["role"] == "assistant"
    assert choice["finish_reason"] in ("stop", "length")
    ids = model.tokenize(model.chat_apply(MESSAGES), parse_special=True)
    content = choice["message"]["content"]
    assert content == model.generate(ids, max_tokens=N_NEW)
    assert content.strip()
    usage = out["usage"]
    assert usage["prompt_tokens"] == len(ids)
    assert 1 <= usage["completion_tokens"] <= N_NEW
    if choice["finish_reason"] == "length":
        assert usage["completion_tokens"] == N_NEW
    assert usage["total_tokens"] == len(ids) + usage["completion_tokens"]


@logic
def test_chat_completion_ends_at_end_of_turn(model):
    out = model.create_chat_completion(
        [{"role": "user", "content": "Say hi."}], max_tokens=64)
    assert out["choices"][0]["finish_reason"] == "stop"
    assert "<|im_end|>" not in out["choices"][0]["message"]["content"]
    assert out["usage"]["completion_tokens"] < 64


@logic
def test_chat_completion_stream(model):
    whole = model.create_chat_completion(MESSAGES, max_tokens=N_NEW)
    chunks = list(model.create_chat_completion(MESSAGES, max_tokens=N_NEW,
                                               stream=True))
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant",
                                                "content": ""}
    assert chunks[-1]["choices"][0]["delta"] == {}
    assert chunks[-1]["choices"][0]["finish_reason"] == \
        whole["choices"][0]["finish_reason"]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    text = "".join(c["choices"][0]["delta"]["content"] for c in chunks[1:-1])
    assert text == whole["choices"][0]["message"]["content"]


# ---- errors -----------------------------------------------------------------

def test_a_bad_path_raises_with_the_c_message(tmp_path):
    missing = tmp_path / "nothing.gguf"
    with pytest.raises(mhsa.Error) as e:
        mhsa.Model(missing)
    assert e.value.status == "IO"
    assert "nothing.gguf" in str(e.value)
    not_gguf = tmp_path / "text.gguf"
    not_gguf.write_bytes(b"hello, this is not a model" * 10)
    with pytest.raises(mhsa.Error) as e:
        mhsa.Model(not_gguf)
    assert e.value.status == "FORMAT"


@logic
def test_bad_arguments(model):
    value_errors = [
        (lambda: model.generate(PROMPT, max_tokens=-1), "max_tokens: -1"),
        (lambda: model.generate(PROMPT, stop=[""]), "stop"),
        (lambda: model.generate(PROMPT, seed=-1), "seed"),
        (lambda: model.generate([1, model.n_vocab]), r"prompt: token ids"),
        (lambda: model.generate("word " * 300), "context is 256"),
        (lambda: model.logits([]), "ids"),
        (lambda: model.create_chat_completion([{"role": "robot",
                                                "content": "x"}]), "role"),
        (lambda: mhsa.Model(model.path, weights="q4"), "weights"),
        (lambda: mhsa.Model(model.path, kv_dtype="f8"), "kv_dtype"),
        (lambda: mhsa.Model(model.path, context=-1), "context"),
    ]
    for call, pattern in value_errors:
        with pytest.raises(ValueError, match=pattern):
            call()
    type_errors = [
        (lambda: model.generate(PROMPT, max_tokens=2.0), "max_tokens"),
        (lambda: model.generate(PROMPT, temperature="hot"), "temperature"),
        (lambda: model.generate(PROMPT, stop=5), "stop"),
        (lambda: model.create_chat_completion("hi"), "messages"),
        (lambda: model.create_chat_completion([{"role": "user"}]),
         "messages"),
        (lambda: model.tokenize(42), "text"),
    ]
    for call, pattern in type_errors:
        with pytest.raises(TypeError, match=pattern):
            call()
    # The C library's checks: mhsa.Error with its message.
    c_errors = [
        (lambda: model.generate(PROMPT, top_p=1.5), "INVALID_ARG", "top_p"),
        (lambda: model.generate(PROMPT, temperature=-1.0), "INVALID_ARG",
         "temperature"),
        (lambda: model.generate(PROMPT, min_p=2.0), "INVALID_ARG", "min_p"),
        (lambda: model.generate(PROMPT, top_k=-3), "INVALID_ARG", "top_k"),
        (lambda: model.logits([0, model.n_vocab]), "INVALID_ARG",
         "tokens\\[1\\]"),
        (lambda: model.tokenize(b"\xff\xfe"), "INVALID_ARG", "UTF-8"),
        (lambda: model.detokenize([-5]), "INVALID_ARG", "-5"),
        (lambda: model.chat_apply(MESSAGES, chat_format="nope"),
         "UNSUPPORTED", "nope"),
    ]
    for call, status, pattern in c_errors:
        with pytest.raises(mhsa.Error, match=pattern) as e:
            call()
        assert e.value.status == status
    # Nothing computed before the error: a streaming call refuses at once.
    with pytest.raises(mhsa.Error):
        model.generate(PROMPT, top_p=-0.5, stream=True)


@logic
def test_close(model_path):
    m = mhsa.Model(model_path, context=64)
    stream = m.generate(PROMPT, max_tokens=4, stream=True)
    first = next(stream)
    m.close()
    m.close()   # twice: a no-op
    assert m.closed and "closed" in repr(m)
    # The unfinished iterator finishes; new calls are refused.
    rest = "".join(stream)
    assert first + rest
    for call in (lambda: m.tokenize("x"), lambda: m.generate("x"),
                 lambda: m.logits([1]), lambda: m.n_ctx,
                 lambda: m.is_eog(0)):
        with pytest.raises(ValueError, match="closed"):
            call()
    with mhsa.Model(model_path, vocab_only=True) as v:
        assert v.tokenize(PROMPT) == m_ids(model_path)
        with pytest.raises(mhsa.Error) as e:
            v.logits([1])
        assert e.value.status == "STATE"
    assert v.closed


def m_ids(model_path):
    with mhsa.Model(model_path, context=16) as m:
        return m.tokenize(PROMPT)


# ---- threads ----------------------------------------------------------------

@logic
def test_python_runs_during_an_evaluation(model):
    ids = model.tokenize("word " * 200)[:200]
    duration, pause = longest_pause_during(lambda: model.logits(ids))
    # With the GIL held through the C call this thread could not run for
    # the whole call; released, it only waits for the OS scheduler.
    assert pause < duration / 2, (duration, pause)


@logic
def test_threads_sharing_a_model_get_the_bits_of_a_run_alone(model):
    prompts = [PROMPT, "Once upon a time"]
    alone = [model.generate(p, max_tokens=6) for p in prompts]
    out, errors = [None, None], []
    start = threading.Barrier(2)

    def run(i):
        try:
            start.wait()
            for _ in range(2):
                out[i] = "".join(model.generate(prompts[i], max_tokens=6,
                                                stream=True))
        except Exception as e:   # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert out == alone
