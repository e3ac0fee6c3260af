"""mhsa.Model: a language model from its GGUF file (include/mhsa_model.h):
tokens, logits, generation with streaming and stop strings, and chat
completions in the OpenAI shape.

The extension (python/ext/model.c) wraps the C calls one to one and
releases the GIL in each that computes (load, tokenize, evaluation,
sampling). The generation loop is here: per token it makes three short C
calls (sample, is_eog, the token's bytes) and one evaluation, so its own
cost is microseconds beside the model's milliseconds.
"""
from __future__ import annotations

import codecs
import os
import threading
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _arrays
from ._mhsa import Model as _CModel, Sampler as _CSampler, Seq as _CSeq

_WEIGHTS = {"file": 0, "f32": 1, "f16": 2, "bf16": 3}   # mhsa_model_weights
_KV_DTYPES = {"f32": 0, "f16": 1, "bf16": 2}             # mhsa_dtype
_ADD_SPECIAL, _PARSE_SPECIAL = 1, 2                     # MHSA_TOKENIZE_*
_DETOK_SPECIAL = 1                                      # MHSA_DETOKENIZE_*
_ROLES = ("system", "user", "assistant")

Prompt = Union[str, bytes, Sequence[int], np.ndarray]
Stop = Union[None, str, Sequence[str]]


def _token_ids(ids: Any, name: str) -> np.ndarray:
    """ids (a list, tuple or array of integers; empty allowed) as a
    C-contiguous int32 array of one dimension, else ValueError."""
    if isinstance(ids, (list, tuple)) and not ids:
        return np.empty(0, np.int32)
    a = _arrays.i32(ids, name)
    if a.ndim != 1:
        raise ValueError(f"{name}: shape {a.shape}, expected (n,)")
    return a


def _stops(stop: Stop) -> List[str]:
    """The stop strings as a list: None, a str, or a sequence of non-empty
    str."""
    if stop is None:
        return []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, (list, tuple)):
        raise TypeError(f"stop: expected a str or a list of str, got "
                        f"{type(stop).__name__}")
    for s in stop:
        if not isinstance(s, str) or not s:
            raise ValueError(f"stop: {s!r} is not a non-empty str")
    return list(stop)


def _held(text: str, stops: List[str]) -> int:
    """How many characters at the end of `text` may be the start of a stop
    string (the longest such suffix): they wait for the next piece."""
    best = 0
    for s in stops:
        for k in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:k]):
                best = k
                break
    return best


class _Text:
    """Tokens' bytes in, text out: decoded as UTF-8 incrementally (a
    character split across tokens comes out with the token that completes
    it; invalid bytes become U+FFFD), and cut at the first stop string,
    holding back any end of the text that could still begin one."""

    def __init__(self, stops: List[str]) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._stops = stops
        self._pending = ""     # decoded, not given out yet
        self.stopped = False   # a stop string was found: the text ends

    def feed(self, data: bytes) -> str:
        """The text that may be given out after `data` ("" for none)."""
        self._pending += self._decoder.decode(data)
        pending = self._pending
        if not self._stops:
            self._pending = ""
            return pending
        cut = min((j for j in (pending.find(s) for s in self._stops)
                   if j >= 0), default=-1)
        if cut >= 0:
            self._pending = ""
            self.stopped = True
            return pending[:cut]
        keep = _held(pending, self._stops)
        self._pending = pending[len(pending) - keep:]
        return pending[:len(pending) - keep]

    def finish(self) -> str:
        """What is left at the end: held-back text and incomplete bytes
        (as U+FFFD)."""
        rest = self._pending + self._decoder.decode(b"", True)
        self._pending = ""
        return rest


class _Run:
    """What one generation left behind once its iterator is done: why it
    ended ("stop": an end-of-generation token or a stop string; "length":
    max_tokens or the context full) and the token counts."""

    def __init__(self, n_prompt: int) -> None:
        self.finish_reason: Optional[str] = None
        self.prompt_tokens = n_prompt
        self.completion_tokens = 0


class Model:
    """A language model from its GGUF file: Llama 2 and 3, SmolLM, Qwen2,
    Gemma 3 (docs/models.md).

    Model(path, context=0, weights="file", kv_dtype="f32",
    vocab_only=False) loads the file with the GIL released. `context` is
    the positions each sequence holds (prompt and generated tokens; 0:
    the smaller of the model's context length and 4096). `weights`:
    "file" (the file's types, computed on their quantized blocks, mapped
    from the file), or "f32", "f16", "bf16" (dequantized at load).
    `kv_dtype`: the KV cache's storage, "f32", "f16" or "bf16".
    `vocab_only=True` reads the tokenizer and metadata alone (tokenize,
    detokenize, chat_apply; no evaluation).

    Errors: a file that cannot be read or is not a model mhsa runs raises
    mhsa.Error with the C library's message (.status "IO", "FORMAT", ...);
    bad Python arguments raise TypeError or ValueError naming them.

    Threads: a Model may be shared by any number of threads, and every
    method may be called from several at once. The GIL is released while
    the library computes. Evaluations of one model take turns (a lock
    inside the C model); their results do not depend on the order. For
    evaluations in parallel, load one Model per thread. A streaming
    iterator (generate or create_chat_completion with stream=True) is
    used by one thread at a time. close() may come from any thread: calls
    in flight and unfinished iterators finish first, the memory is freed
    after them, and new calls raise ValueError.
    """

    def __init__(self, path: Union[str, os.PathLike], context: int = 0,
                 weights: str = "file", kv_dtype: str = "f32",
                 vocab_only: bool = False) -> None:
        context = _arrays.integer(context, "context", low=0)
        if weights not in _WEIGHTS:
            raise ValueError(f"weights: unknown {weights!r} (expected "
                             "'file', 'f32', 'f16' or 'bf16')")
        if kv_dtype not in _KV_DTYPES:
            raise ValueError(f"kv_dtype: unknown {kv_dtype!r} (expected "
                             "'f32', 'f16' or 'bf16')")
        vocab_only = _arrays.flag(vocab_only, "vocab_only")
        self.path = os.fspath(path)
        self._kv = _KV_DTYPES[kv_dtype]
        self._c = _CModel(self.path, context, _WEIGHTS[weights],
                              int(vocab_only))
        self._n_vocab = self._c.n_vocab
        # One sequence kept for the next call (its cache is the largest
        # allocation a call makes); a call that finds it taken makes its
        # own. The lock keeps close() from racing a sequence given back,
        # which would keep the C model alive after it.
        self._spare: List[Any] = []
        self._spare_lock = threading.Lock()

    # ---- what the model is ----------------------------------------------

    @property
    def n_vocab(self) -> int:
        """Token ids are 0 .. n_vocab - 1; a logits row has n_vocab
        floats."""
        return self._n_vocab

    @property
    def n_ctx(self) -> int:
        """Positions a sequence holds: the prompt and the generated tokens
        (the `context` given, or its default)."""
        return self._c.n_ctx

    @property
    def n_ctx_train(self) -> int:
        """The context length the model was trained for."""
        return self._c.n_ctx_train

    @property
    def arch(self) -> str:
        """general.architecture: "llama", "qwen2" or "gemma3"."""
        return self._c.arch

    @property
    def bos(self) -> int:
        """The beginning-of-sequence token, -1 when the file has none."""
        return self._c.bos

    @property
    def eos(self) -> int:
        """The end-of-sequence token, -1 when the file has none."""
        return self._c.eos

    @property
    def chat_template(self) -> Optional[str]:
        """tokenizer.chat_template (Jinja), or None when the file has
        none."""
        return self._c.chat_template

    @property
    def chat_format(self) -> Optional[str]:
        """The chat format recognised in the template: "chatml", "llama3",
        "gemma" or "llama2"; None when there is no template or it is none
        of these (then pass chat_format= to chat_apply)."""
        return self._c.chat_format

    @property
    def weight_types(self) -> str:
        """The weights' types as held, most bytes first ("q4_1/q8_0")."""
        return self._c.weight_types

    @property
    def weight_bytes(self) -> int:
        """Bytes the weights take as held."""
        return self._c.weight_bytes

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._c.closed

    def is_eog(self, token: int) -> bool:
        """True when generation ends at `token`: end of sequence, end of
        turn, or a token spelled as one ("<|im_end|>", ...)."""
        token = _arrays.integer(token, "token")
        if self._c.closed:
            raise ValueError("the model is closed")
        return self._c.is_eog(token)

    def __repr__(self) -> str:
        if self.closed:
            return f"<mhsa.Model {self.path!r} closed>"
        return (f"<mhsa.Model {self.path!r} arch={self.arch} "
                f"n_vocab={self.n_vocab} n_ctx={self.n_ctx} "
                f"weights={self.weight_types}>")

    # ---- text and tokens ------------------------------------------------

    def tokenize(self, text: Union[str, bytes], add_special: bool = True,
                 parse_special: bool = False) -> List[int]:
        """The token ids of `text` (str, or UTF-8 bytes). add_special: BOS
        first (and EOS last) as the model adds them. parse_special: the
        text of control tokens ("<|im_start|>") is that token; else it is
        plain text. Text that is not valid UTF-8 raises mhsa.Error naming
        the byte."""
        flags = ((_ADD_SPECIAL if _arrays.flag(add_special, "add_special")
                  else 0) |
                 (_PARSE_SPECIAL if _arrays.flag(parse_special,
                                                 "parse_special") else 0))
        return self._c.tokenize(text, flags)

    def detokenize(self, ids: Union[Sequence[int], np.ndarray],
                   special: bool = False) -> str:
        """The text of `ids`. Control tokens give nothing unless
        `special`. A SentencePiece vocabulary's leading space before the
        first word is kept, as each token's own text has it (the pieces
        that generate streams, joined, are detokenize of their ids).
        Bytes that are not valid UTF-8 (ids ending inside a character)
        become U+FFFD."""
        a = _token_ids(ids, "ids")
        flags = _DETOK_SPECIAL if _arrays.flag(special, "special") else 0
        return self._c.detokenize(a, flags).decode("utf-8", "replace")

    # ---- chat -----------------------------------------------------------

    def chat_apply(self, messages: Sequence[Dict[str, str]],
                   chat_format: Optional[str] = None,
                   add_assistant: bool = True) -> str:
        """The prompt text of a conversation, as llama.cpp's
        llama_chat_apply_template writes it: `messages` is a list of
        {"role": "system" | "user" | "assistant", "content": str}.
        chat_format: "chatml", "llama3", "gemma", "llama2", or None for
        the model's own (mhsa.Error, status "UNSUPPORTED", when it has
        none that is recognised). add_assistant opens the assistant's turn
        at the end. Tokenize the result with parse_special=True."""
        if chat_format is not None and not isinstance(chat_format, str):
            raise TypeError(f"chat_format: expected a str or None, got "
                            f"{type(chat_format).__name__}")
        return self._c.chat_apply(chat_format, _messages(messages),
                                  _arrays.flag(add_assistant,
                                               "add_assistant"))

    # ---- evaluation -----------------------------------------------------

    def _take_seq(self) -> Any:
        with self._spare_lock:
            if self._spare:
                return self._spare.pop()
        return _CSeq(self._c, self._kv)

    def _give_seq(self, seq: Any) -> None:
        seq.reset()
        with self._spare_lock:
            if not self._spare and not self._c.closed:
                self._spare.append(seq)

    def logits(self, ids: Union[Sequence[int], np.ndarray]) -> np.ndarray:
        """The logits of every position of `ids` run as a fresh sequence:
        a float32 array (len(ids), n_vocab), the bits mhsa_seq_eval gives
        with MHSA_LOGITS_ALL for the same ids (on any number of threads).
        Row i scores the token after ids[: i + 1]."""
        a = _token_ids(ids, "ids")
        if a.size == 0:
            raise ValueError("ids: empty (need at least one token)")
        if a.size > self.n_ctx:
            raise ValueError(f"ids: {a.size} tokens; the model's context "
                             f"is {self.n_ctx} positions")
        out = np.empty((a.size, self._n_vocab), np.float32)
        seq = self._take_seq()
        try:
            seq.eval(a, out, True)
        finally:
            self._give_seq(seq)
        return out

    # ---- generation -----------------------------------------------------

    def _prompt_ids(self, prompt: Prompt, parse_special: bool,
                    max_tokens: int) -> List[int]:
        if isinstance(prompt, (str, bytes)):
            flags = _ADD_SPECIAL | (_PARSE_SPECIAL if parse_special else 0)
            ids = self._c.tokenize(prompt, flags)
        else:
            a = _token_ids(prompt, "prompt")
            if a.size and (a.min() < 0 or a.max() >= self._n_vocab):
                raise ValueError(f"prompt: token ids must be in [0, "
                                 f"{self._n_vocab})")
            ids = a.tolist()
        if not ids:
            # An empty prompt starts from BOS, as mhsa-generate does.
            if self._c.bos < 0:
                raise ValueError("prompt: empty, and the model has no BOS "
                                 "token to start from")
            ids = [self._c.bos]
        if len(ids) + (max_tokens > 0) > self.n_ctx:
            raise ValueError(f"prompt: {len(ids)} tokens; the model's "
                             f"context is {self.n_ctx} positions, and "
                             "generating needs one more")
        return ids

    def _sampler(self, temperature: float, top_k: int, top_p: float,
                 min_p: float, repeat_penalty: float, repeat_last_n: int,
                 seed: int) -> Any:
        for name, v in (("temperature", temperature), ("top_p", top_p),
                        ("min_p", min_p), ("repeat_penalty", repeat_penalty)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(
                    v, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name}: expected a number, got "
                                f"{type(v).__name__} {v!r}")
        top_k = _arrays.integer(top_k, "top_k")
        repeat_last_n = _arrays.integer(repeat_last_n, "repeat_last_n")
        if (isinstance(seed, (bool, np.bool_))
                or not hasattr(seed, "__index__")):
            raise TypeError(f"seed: expected an integer, got "
                            f"{type(seed).__name__} {seed!r}")
        seed = int(seed)
        if not 0 <= seed < 2**64:
            raise ValueError(f"seed: {seed} is outside [0, 2**64)")
        # The ranges are the C library's to check (mhsa.Error naming the
        # field and its value).
        return _CSampler(self._n_vocab, float(temperature), top_k,
                             float(top_p), float(min_p),
                             float(repeat_penalty), repeat_last_n, seed)

    def _pieces(self, ids: List[int], max_tokens: int, sampler: Any,
                penalise: bool, stops: List[str], run: _Run) -> Iterator[str]:
        """The loop: prefill `ids`, then sample, stop or print, evaluate
        the new token; yields text pieces (complete UTF-8; stop strings and
        what may start one held back). Ends as mhsa-generate does: at an
        end-of-generation token (not printed), after max_tokens, or when
        the sequence is full."""
        c = self._c
        n = len(ids)
        if max_tokens == 0:
            run.finish_reason = "length"
            return
        hist = np.empty(self.n_ctx, np.int32)
        hist[:n] = ids
        logits = np.empty(self._n_vocab, np.float32)
        text = _Text(stops)
        room = self.n_ctx - n
        seq = self._take_seq()
        try:
            seq.eval(hist[:n], logits, False)
            run.finish_reason = "length"
            for i in range(min(max_tokens, room)):
                tok = sampler.sample(logits, hist, n if penalise else 0)
                if c.is_eog(tok):
                    run.finish_reason = "stop"
                    break
                hist[n] = tok
                n += 1
                run.completion_tokens += 1
                piece = text.feed(c.piece(tok, 0))
                if piece:
                    yield piece
                if text.stopped:
                    run.finish_reason = "stop"
                    return
                if i + 1 == max_tokens or i + 1 == room:
                    break
                seq.eval(tok, logits, False)
            rest = text.finish()
            if rest:
                yield rest
        finally:
            self._give_seq(seq)

    def generate(self, prompt: Prompt, max_tokens: int = 128,
                 temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, min_p: float = 0.0,
                 repeat_penalty: float = 1.0, repeat_last_n: int = 64,
                 seed: int = 0, stop: Stop = None, stream: bool = False,
                 parse_special: bool = False
                 ) -> Union[str, Iterator[str]]:
        """Text generated after `prompt`: a str, or with stream=True an
        iterator of its pieces as they come (each complete UTF-8; joined
        they are the str stream=False returns).

        prompt: a str (tokenized with BOS as the model adds it; with
        parse_special=True control tokens' text is that token) or a list
        of token ids, used as they are. An empty prompt starts from BOS.
        Generation ends at an end-of-generation token (not part of the
        text), after max_tokens tokens, when the context is full, or at
        the first stop string (`stop`: a str or a list of them), which is
        not part of the text; while the text's end might begin a stop
        string, it is held back.

        Sampling (mhsa_sampler): temperature 0 is greedy (the text is
        mhsa-generate's with --temperature 0). Otherwise the
        top_k largest logits (0: all), their softmax at the temperature,
        the top_p nucleus (1: off), min_p (0: off), one draw from the
        random stream `seed`: the same seed gives the same text on every
        machine and thread count. repeat_penalty (1: off) divides the
        positive logits (multiplies the negative ones) of the last
        repeat_last_n tokens of prompt and text (0: all of them).

        Bad arguments raise TypeError or ValueError (max_tokens < 0, a
        prompt longer than the context) or mhsa.Error with the C library's
        message (a sampling parameter out of its range), before anything
        is computed."""
        max_tokens = _arrays.integer(max_tokens, "max_tokens", low=0)
        stops = _stops(stop)
        sampler = self._sampler(temperature, top_k, top_p, min_p,
                                repeat_penalty, repeat_last_n, seed)
        ids = self._prompt_ids(prompt,
                               _arrays.flag(parse_special, "parse_special"),
                               max_tokens)
        penalise = float(repeat_penalty) not in (0.0, 1.0)
        run = _Run(len(ids))
        pieces = self._pieces(ids, max_tokens, sampler, penalise, stops, run)
        if _arrays.flag(stream, "stream"):
            return pieces
        return "".join(pieces)

    # ---- chat completions -----------------------------------------------

    def create_chat_completion(self, messages: Sequence[Dict[str, str]],
                               max_tokens: Optional[int] = None,
                               temperature: float = 0.0, top_p: float = 1.0,
                               seed: int = 0, stop: Stop = None,
                               stream: bool = False,
                               chat_format: Optional[str] = None,
                               top_k: int = 0, min_p: float = 0.0,
                               repeat_penalty: float = 1.0
                               ) -> Union[Dict[str, Any],
                                          Iterator[Dict[str, Any]]]:
        """An OpenAI chat completion: the messages through the chat
        template (chat_apply; chat_format None: the model's own), tokenized
        with BOS and control tokens parsed, then generated as generate()
        does (max_tokens None: until the end of the turn or the context is
        full).

        Returns {"id", "object": "chat.completion", "created", "model",
        "choices": [{"index": 0, "message": {"role": "assistant",
        "content"}, "finish_reason": "stop" | "length"}], "usage":
        {"prompt_tokens", "completion_tokens", "total_tokens"}}. With
        stream=True, an iterator of "chat.completion.chunk" dicts: the
        first with delta {"role": "assistant", "content": ""}, one per
        text piece with delta {"content"}, the last with an empty delta
        and the finish_reason."""
        prompt = self.chat_apply(messages, chat_format, True)
        if max_tokens is None:
            max_tokens = self.n_ctx
        max_tokens = _arrays.integer(max_tokens, "max_tokens", low=0)
        stops = _stops(stop)
        sampler = self._sampler(temperature, top_k, top_p, min_p,
                                repeat_penalty, 64, seed)
        ids = self._c.tokenize(prompt, _ADD_SPECIAL | _PARSE_SPECIAL)
        ids = self._prompt_ids(ids, False, max_tokens)
        penalise = float(repeat_penalty) not in (0.0, 1.0)
        run = _Run(len(ids))
        pieces = self._pieces(ids, max_tokens, sampler, penalise, stops, run)
        head = {"id": "chatcmpl-" + uuid.uuid4().hex,
                "created": int(time.time()),
                "model": os.path.basename(self.path)}
        if _arrays.flag(stream, "stream"):
            return _chunks(head, pieces, run)
        content = "".join(pieces)
        return {**head, "object": "chat.completion",
                "choices": [{"index": 0,
                             "message": {"role": "assistant",
                                         "content": content},
                             "finish_reason": run.finish_reason}],
                "usage": {"prompt_tokens": run.prompt_tokens,
                          "completion_tokens": run.completion_tokens,
                          "total_tokens": (run.prompt_tokens
                                           + run.completion_tokens)}}

    # ---- lifetime -------------------------------------------------------

    def close(self) -> None:
        """Frees the model (at once, or when the calls in flight and the
        unfinished iterators are done); later calls raise ValueError.
        Closing twice is a no-op."""
        with self._spare_lock:
            self._spare.clear()
            self._c.close()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _messages(messages: Sequence[Dict[str, str]]) -> List[tuple]:
    """[(role, content)] from OpenAI-style message dicts, checked."""
    if isinstance(messages, (str, bytes, dict)) or not hasattr(
            messages, "__iter__"):
        raise TypeError("messages: expected a list of {'role', 'content'} "
                        "dicts")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise TypeError(f"messages[{i}]: expected a dict with 'role' "
                            f"and 'content', got {m!r}")
        role, content = m["role"], m["content"]
        if role not in _ROLES:
            raise ValueError(f"messages[{i}]: role {role!r} is not one of "
                             f"{', '.join(_ROLES)}")
        if not isinstance(content, str):
            raise TypeError(f"messages[{i}]: content is "
                            f"{type(content).__name__}, expected str")
        out.append((role, content))
    return out


def _chunks(head: Dict[str, Any], pieces: Iterator[str],
            run: _Run) -> Iterator[Dict[str, Any]]:
    def chunk(delta: Dict[str, str], finish: Optional[str]) -> Dict[str, Any]:
        return {**head, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta,
                             "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""}, None)
    for piece in pieces:
        yield chunk({"content": piece}, None)
    yield chunk({}, run.finish_reason)
