#!/usr/bin/env python3
# llama_ref.py — the Llama model of src/models/llama against a float64 PyTorch
# forward written here from the architecture's description, not from
# mhsa's code.
#
#   python3 llama_ref.py BUILD/tests/llama_logits
#
# The script writes small Llama GGUF files with random weights (GQA, full
# and partial rotary RoPE, two RoPE bases and RMSNorm epsilons, tied and
# untied heads, the tensor types F32, F16, BF16, Q8_0, Q4_0, Q4_1; the
# other types mhsa dequantizes take the same loader and are checked bit
# for bit in tests/io/test_gguf.c) and a byte-level BPE vocabulary. It
# then reads each file back with its own GGUF reader and dequantizer and
# runs the forward in float64. llama_logits (tests/models/llama_logits.c)
# runs the same tokens through mhsa__llama_forward on every ISA this
# machine has and on 1 and 2 threads, in one call and as a prefill
# followed by one token at a time. Each position's logits must satisfy
#   max |mhsa - ref| / max(1, max |ref|) <= 1e-4,
# which fp32 arithmetic meets with room to spare (about 1e-6 here) while a
# wrong RoPE pairing, epsilon or head grouping misses it by orders of
# magnitude. The text the helper encodes with the file's tokenizer must
# give this script's own BPE ids and decode back to itself.
#
# Exit 77 (meson: skipped) without torch/numpy; CI installs python3-torch.
import os
import shlex
import struct
import subprocess
import sys
import tempfile
import unicodedata



# The shared re-exec (tests/python_with.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from python_with import rerun_with  # noqa: E402

try:
    import numpy as np
    import torch
except ImportError as e:
    rerun_with(["numpy", "torch"], "MHSA_LLAMA_REF_REEXEC")
    print(f"skipped: {e}")
    sys.exit(77)

TOL = 1e-4

# ggml type numbers and block layouts (llama.cpp ggml/src/ggml-common.h)
F32, F16, Q4_0, Q4_1, Q8_0, BF16 = 0, 1, 2, 3, 8, 30

# ---- byte-level BPE (GPT-2) -------------------------------------------------


def bytes_to_unicode():
    """GPT-2's byte alphabet: printable bytes as themselves, the rest
    moved to 256 and up, so every byte is one visible code point."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = bytes_to_unicode()
U2B = {u: b for b, u in B2U.items()}


def cls(ch):
    c = unicodedata.category(ch)
    if ch.isspace():
        return "s"
    return "L" if c[0] == "L" else "N" if c[0] == "N" else "o"


def gpt2_split(text):
    """GPT-2's pre-tokenizer regex by hand:
    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|
    \\s+(?!\\S)|\\s+"""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "'":
            suf = next((s for s in ("re", "ve", "ll", "s", "t", "m", "d")
                        if text.startswith(s, i + 1)), None)
            if suf:
                out.append(text[i:i + 1 + len(suf)])
                i += 1 + len(suf)
                continue
        # ' ?X+' for X a letter, a number or neither (nor a space)
        j = i + 1 if c == " " and i + 1 < n and cls(text[i + 1]) != "s" \
            else i
        k = cls(text[j])
        if k != "s":
            e = j + 1
            while e < n and cls(text[e]) == k:
                e += 1
            out.append(text[i:e])
            i = e
            continue
        # a run of spaces, leaving its last one to lead the next word
        e = i
        while e < n and cls(text[e]) == "s":
            e += 1
        if e < n and e - i > 1:
            e -= 1
        out.append(text[i:e])
        i = e
    return out


def bpe_encode(text, vocab, ranks):
    ids = []
    for piece in gpt2_split(text):
        sym = [B2U[b] for b in piece.encode("utf-8")]
        while len(sym) > 1:
            best = None
            for a in range(len(sym) - 1):
                r = ranks.get((sym[a], sym[a + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, a)
            if best is None:
                break
            a = best[1]
            sym[a:a + 2] = [sym[a] + sym[a + 1]]
        for s in sym:
            if s in vocab:
                ids.append(vocab[s])
            else:
                ids.extend(vocab[ch] for ch in s)
    return ids


def make_vocab(n_vocab, words):
    """256 byte tokens, then every left-to-right merge that builds each of
    `words` (byte alphabet), then filler tokens up to n_vocab."""
    tokens = [B2U[b] for b in range(256)]
    merges = []
    for w in words:
        sym = [B2U[b] for b in w.encode("utf-8")]
        acc = sym[0]
        for s in sym[1:]:
            if acc + s not in tokens:
                merges.append(f"{acc} {s}")
                tokens.append(acc + s)
            acc += s
    while len(tokens) < n_vocab:
        tokens.append(f"<filler{len(tokens)}>")
    return tokens, merges


# ---- GGUF writing -----------------------------------------------------------


def f16_bits(x):
    return np.asarray(x, np.float32).astype(np.float16).view(np.uint16)


def quantize(w, t):
    """w (rows, cols) float32 -> the bytes of ggml type t, row-major."""
    w = np.ascontiguousarray(w, np.float32)
    if t == F32:
        return w.tobytes()
    if t == F16:
        return w.astype(np.float16).tobytes()
    if t == BF16:   # round to nearest even, as ggml does
        u = w.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return u.astype(np.uint16).tobytes()
    blk = w.reshape(-1, 32)
    out = bytearray()
    for b in blk:
        if t == Q8_0:
            d = np.abs(b).max() / 127
            q = np.round(b / d) if d else np.zeros(32)
            out += f16_bits(d).tobytes() + q.astype(np.int8).tobytes()
        elif t == Q4_0:
            mx = b[np.argmax(np.abs(b))]
            d = mx / -8
            q = np.clip((b / d + 8.5).astype(np.int32) if d else
                        np.full(32, 8), 0, 15)
            out += f16_bits(d).tobytes()
            out += (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
        elif t == Q4_1:
            lo, hi = b.min(), b.max()
            d = (hi - lo) / 15
            q = np.clip((((b - lo) / d) + 0.5).astype(np.int32) if d else
                        np.zeros(32, np.int32), 0, 15)
            out += f16_bits(d).tobytes() + f16_bits(lo).tobytes()
            out += (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
        else:
            raise ValueError(t)
    return bytes(out)


def gstr(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gval(v):
    """(type, bytes) of a metadata value: str, int (u32), float (f32),
    list of str."""
    if isinstance(v, str):
        return 8, gstr(v)
    if isinstance(v, bool):
        return 7, struct.pack("<B", v)
    if isinstance(v, int):
        return 4, struct.pack("<I", v)
    if isinstance(v, float):
        return 6, struct.pack("<f", v)
    if isinstance(v, list):
        return 9, struct.pack("<IQ", 8, len(v)) + b"".join(map(gstr, v))
    raise TypeError(v)


def write_gguf(path, meta, tensors, align=32):
    """tensors: (name, array (rows, cols) or (n,), ggml type)"""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors),
                                          len(meta)))
    for k, v in meta.items():
        t, b = gval(v)
        out += gstr(k) + struct.pack("<I", t) + b
    datas, off = [], 0
    for name, w, t in tensors:
        ne = list(reversed(w.shape))   # innermost first
        data = quantize(w.reshape(-1, ne[0]), t)
        out += gstr(name) + struct.pack("<I", len(ne))
        out += struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", t, off)
        datas.append(data)
        off += -(-len(data) // align) * align
    for d in datas:
        out += bytes(-len(out) % align)
        out += d
    with open(path, "wb") as f:
        f.write(out)


# ---- GGUF reading (the reference's own) -------------------------------------


class Reader:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.b = f.read()
        self.o = 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.o)
        self.o += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def str(self):
        n = self.take("Q")
        s = self.b[self.o:self.o + n].decode("utf-8")
        self.o += n
        return s

    def val(self, t):
        scal = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f",
                7: "?", 10: "Q", 11: "q", 12: "d"}
        if t in scal:
            return self.take(scal[t])
        if t == 8:
            return self.str()
        if t == 9:
            et, n = self.take("I"), self.take("Q")
            return [self.val(et) for _ in range(n)]
        raise ValueError(t)


def dequant(raw, t, n):
    """The n values of ggml type t in raw, as float64."""
    if t == F32:
        return np.frombuffer(raw, np.float32, n).astype(np.float64)
    if t == F16:
        return np.frombuffer(raw, np.float16, n).astype(np.float64)
    if t == BF16:   # the top 16 bits of an fp32
        u = np.frombuffer(raw, np.uint16, n).astype(np.uint32) << 16
        return u.view(np.float32).astype(np.float64)
    nb = n // 32
    if t == Q8_0:
        blk = np.frombuffer(raw, np.uint8, nb * 34).reshape(nb, 34)
        d = blk[:, :2].copy().view(np.float16).astype(np.float64)
        q = blk[:, 2:].copy().view(np.int8).astype(np.float64)
        return (q * d).reshape(-1)
    if t in (Q4_0, Q4_1):
        sz = 18 if t == Q4_0 else 20
        blk = np.frombuffer(raw, np.uint8, nb * sz).reshape(nb, sz)
        d = blk[:, :2].copy().view(np.float16).astype(np.float64)
        qs = blk[:, sz - 16:]
        # low nibbles are elements 0..15, high nibbles 16..31
        q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float64)
        if t == Q4_0:
            return ((q - 8) * d).reshape(-1)
        m = blk[:, 2:4].copy().view(np.float16).astype(np.float64)
        return (q * d + m).reshape(-1)
    raise ValueError(t)


def read_gguf(path):
    r = Reader(path)
    assert r.b[:4] == b"GGUF"
    r.o = 4
    _, nt, nkv = r.take("I"), r.take("Q"), r.take("Q")
    meta = {}
    for _ in range(nkv):
        k = r.str()
        meta[k] = r.val(r.take("I"))
    infos = []
    for _ in range(nt):
        name = r.str()
        nd = r.take("I")
        ne = [r.take("Q") for _ in range(nd)]
        infos.append((name, ne, r.take("I"), r.take("Q")))
    align = meta.get("general.alignment", 32)
    base = -(-r.o // align) * align
    bsize = {F32: (1, 4), F16: (1, 2), BF16: (1, 2), Q8_0: (32, 34),
             Q4_0: (32, 18), Q4_1: (32, 20)}
    tensors = {}
    for name, ne, t, off in infos:
        n = int(np.prod(ne))
        per, nbytes = bsize[t]
        raw = r.b[base + off:base + off + n // per * nbytes]
        x = dequant(raw, t, n).reshape(list(reversed(ne)))
        tensors[name] = torch.from_numpy(x.copy())
    return meta, tensors


# ---- the float64 forward ----------------------------------------------------


def rmsnorm(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope(x, rope_dim, theta):
    """x (T, heads, dh): adjacent pairs (2i, 2i+1) of the first rope_dim
    features rotated by pos * theta^(-2i / rope_dim)."""
    T = x.shape[0]
    i = torch.arange(rope_dim // 2, dtype=torch.float64)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * \
        theta ** (-2 * i / rope_dim)
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    x = x.clone()
    a, b = x[..., 0:rope_dim:2].clone(), x[..., 1:rope_dim:2].clone()
    x[..., 0:rope_dim:2] = a * c - b * s
    x[..., 1:rope_dim:2] = a * s + b * c
    return x


def forward(meta, w, tokens):
    g = lambda k, d=None: meta.get("llama." + k, d)
    L, D = g("block_count"), g("embedding_length")
    H = g("attention.head_count")
    KV = g("attention.head_count_kv", H)
    dh = D // H
    rd = g("rope.dimension_count", dh)
    theta = float(g("rope.freq_base", 10000.0))
    eps = float(g("attention.layer_norm_rms_epsilon"))
    T = len(tokens)
    x = w["token_embd.weight"][tokens]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    for l in range(L):
        p = lambda n: w[f"blk.{l}.{n}.weight"]
        h = rmsnorm(x, p("attn_norm"), eps)
        q = rope((h @ p("attn_q").T).view(T, H, dh), rd, theta)
        k = rope((h @ p("attn_k").T).view(T, KV, dh), rd, theta)
        v = (h @ p("attn_v").T).view(T, KV, dh)
        # query head j reads kv head j // (H / KV), as llama.cpp groups
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        s = torch.einsum("thd,shd->hts", q, k) / dh ** 0.5
        s = s.masked_fill(mask, float("-inf")).softmax(-1)
        att = torch.einsum("hts,shd->thd", s, v).reshape(T, D)
        x = x + att @ p("attn_output").T
        h = rmsnorm(x, p("ffn_norm"), eps)
        gate = torch.nn.functional.silu(h @ p("ffn_gate").T)
        x = x + (gate * (h @ p("ffn_up").T)) @ p("ffn_down").T
    head = w.get("output.weight", w["token_embd.weight"])
    return rmsnorm(x, w["output_norm.weight"], eps) @ head.T


# ---- the test files ---------------------------------------------------------

TEXT = "Hello world, it's caf\u00e9 cafe\u0301 \U0001F600\U0001F600!\n"
WORDS = ["Hello", " world", "'s", " caf\u00e9", "cafe", " \U0001F600",
         "\U0001F600", "or", "ld"]


def model_file(path, cfg, types, tokens, merges, rng):
    """cfg: the llama.* sizes; types: ggml type of each matrix by name
    (blk.N. prefix for the layers); norms stay F32 as real files have
    them."""
    D, F, H, KV = cfg["d"], cfg["ff"], cfg["h"], cfg["kv"]
    dh = D // H
    V = len(tokens)
    meta = {
        "general.architecture": "llama",
        "general.alignment": 32,
        "llama.block_count": cfg["layers"],
        "llama.context_length": 64,
        "llama.embedding_length": D,
        "llama.feed_forward_length": F,
        "llama.attention.head_count": H,
        "llama.attention.head_count_kv": KV,
        "llama.rope.dimension_count": cfg["rope_dim"],
        "llama.rope.freq_base": cfg["theta"],
        "llama.attention.layer_norm_rms_epsilon": cfg["eps"],
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "gpt-2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.merges": merges,
    }

    def mat(rows, cols, scale=1.0):
        return (rng.standard_normal((rows, cols)) * scale /
                cols ** 0.5).astype(np.float32)

    def norm(n):
        return (1 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    ts = [("token_embd.weight",
           rng.standard_normal((V, D)).astype(np.float32),
           types["token_embd"])]
    if not cfg["tied"]:
        ts.append(("output.weight", mat(V, D, 2.0), types["output"]))
    ts.append(("output_norm.weight", norm(D), F32))
    shapes = {"attn_q": (D, D, 2.0), "attn_k": (KV * dh, D, 2.0),
              "attn_v": (KV * dh, D, 1.0), "attn_output": (D, D, 1.0),
              "ffn_gate": (F, D, 1.0), "ffn_up": (F, D, 1.0),
              "ffn_down": (D, F, 1.0)}
    for l in range(cfg["layers"]):
        ts.append((f"blk.{l}.attn_norm.weight", norm(D), F32))
        ts.append((f"blk.{l}.ffn_norm.weight", norm(D), F32))
        for n, (r, c, sc) in shapes.items():
            ts.append((f"blk.{l}.{n}.weight", mat(r, c, sc),
                       types[f"blk.{l}.{n}"]))
    write_gguf(path, meta, ts)


def layer_types(l0, l1):
    names = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate",
             "ffn_up", "ffn_down"]
    t = {f"blk.0.{n}": x for n, x in zip(names, l0)}
    t.update({f"blk.1.{n}": x for n, x in zip(names, l1)})
    return t


CASES = [
    # GQA 8:2, full rotary, base 1e4, untied Q8_0 head
    ("untied_full_rope",
     dict(layers=2, d=64, ff=96, h=8, kv=2, rope_dim=8, theta=10000.0,
          eps=1e-5, tied=False),
     dict(token_embd=F16, output=Q8_0,
          **layer_types([Q4_0, Q4_1, Q8_0, BF16, F16, Q4_1, Q8_0],
                        [BF16, F32, Q4_0, Q4_1, Q8_0, F16, Q4_0]))),
    # multi-query 4:1, 6 of 16 features rotated, base 5e5, an epsilon
    # large enough to matter, the head tied to a BF16 embedding
    ("tied_partial_rope",
     dict(layers=2, d=64, ff=96, h=4, kv=1, rope_dim=6, theta=500000.0,
          eps=0.05, tied=True),
     dict(token_embd=BF16,
          **layer_types([Q8_0, F16, Q4_1, Q4_0, BF16, Q8_0, Q4_1],
                        [F16, Q4_0, BF16, F32, Q4_0, Q4_1, F16]))),
]


def run_helper(exe, path, out, text_path, toks, prefill, isa, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env.pop("MHSA_ISA", None)
    # In a cross build meson names the emulator (qemu-aarch64) in
    # MESON_EXE_WRAPPER: the helper is a foreign binary.
    wrapper = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
    cmd = wrapper + [exe, "--isa", isa, "--text", text_path, path, out,
           str(prefill)] + [str(t) for t in toks]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode == 77:
        return None
    if r.returncode != 0:
        shown = " ".join(cmd[:len(wrapper) + 6])
        sys.exit(f"FAIL: {shown} ...: exit {r.returncode}\n"
                 f"{r.stdout}{r.stderr}")
    assert r.stdout.split()[:2] == ["isa", isa], r.stdout
    b = open(out, "rb").read()
    n, V, nid = struct.unpack_from("<3i", b)
    o = 12
    one = np.frombuffer(b, np.float32, n * V, o).reshape(n, V)
    o += 4 * n * V
    split = np.frombuffer(b, np.float32, n * V, o).reshape(n, V)
    o += 4 * n * V
    ids = list(np.frombuffer(b, np.int32, nid, o))
    o += 4 * nid
    (m,) = struct.unpack_from("<i", b, o)
    return one, split, ids, b[o + 4:o + 4 + m]


def rel_err(got, ref):
    """Per position: max |got - ref| / max(1, max |ref|)."""
    ref = ref.numpy()
    scale = np.maximum(1.0, np.abs(ref).max(axis=1))
    return np.abs(got.astype(np.float64) - ref).max(axis=1) / scale


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: llama_ref.py LLAMA_LOGITS")
    exe = sys.argv[1]
    torch.set_num_threads(1)
    rng = np.random.default_rng(20261201)
    tokens, merges = make_vocab(300, WORDS)
    vocab = {t: i for i, t in enumerate(tokens)}
    ranks = {tuple(m.split(" ")): i for i, m in enumerate(merges)}
    want_ids = bpe_encode(TEXT, vocab, ranks)
    assert len(want_ids) < len(TEXT.encode()), "the merges did nothing"
    seq = [int(t) for t in rng.integers(0, len(tokens), 13)]
    seq[:len(want_ids[:6])] = want_ids[:6]
    prefill = 5
    failed = 0
    ran = set()
    with tempfile.TemporaryDirectory() as tmp:
        text_path = os.path.join(tmp, "text")
        with open(text_path, "wb") as f:
            f.write(TEXT.encode())
        for name, cfg, types in CASES:
            path = os.path.join(tmp, name + ".gguf")
            model_file(path, cfg, types, tokens, merges, rng)
            meta, w = read_gguf(path)
            assert ("output.weight" in w) == (not cfg["tied"])
            ref = forward(meta, w, seq)
            print(f"{name}: max |ref| {ref.abs().max():.3g}")
            for isa in ("scalar", "avx2", "avx512", "neon"):
                for threads in (1, 2):
                    got = run_helper(exe, path, os.path.join(tmp, "out"),
                                     text_path, seq, prefill, isa, threads)
                    if got is None:
                        break
                    ran.add(isa)
                    one, split, ids, dec = got
                    e1, e2 = rel_err(one, ref), rel_err(split, ref)
                    ok = e1.max() <= TOL and e2.max() <= TOL
                    print(f"  {isa:6s} {threads} thread(s): one call "
                          f"{e1.max():.2e}, prefill {prefill} + one by one "
                          f"{e2.max():.2e} {'ok' if ok else 'FAIL'}")
                    if not ok:
                        failed += 1
                        print("    per position:",
                              " ".join(f"{a:.1e}/{b:.1e}"
                                       for a, b in zip(e1, e2)))
                    if ids != want_ids or dec != TEXT.encode():
                        failed += 1
                        print(f"    tokenizer FAIL: ids {ids}, want "
                              f"{want_ids}; decoded {dec!r}")
    print(f"ISAs run: {' '.join(sorted(ran))}; text {TEXT!r} -> "
          f"{len(want_ids)} ids")
    if "scalar" not in ran:
        sys.exit("FAIL: the scalar table did not run")
    if failed:
        sys.exit(f"FAIL: {failed} comparisons out of tolerance")


if __name__ == "__main__":
    main()
