#!/usr/bin/env python3
"""PyTorch interoperability test for mhsa's safetensors files, without PyTorch.

Usage: mha_interop.py INTEROP_DRIVER [--torch]

1. Writes a .safetensors file laid out exactly as safetensors.torch.save_file
   writes the state_dict() of a small model holding an nn.MultiheadAttention
   at `attn` (names attn.in_proj_weight, ..., plus tok_emb.weight etc. around
   it), in F32 and again in F16 and BF16.
2. Runs INTEROP_DRIVER (tests/io/interop/interop_driver.c): mhsa loads the file
   with prefix "attn.", runs the causal forward on x and saves its weights.
3. Compares mhsa's output with the same attention computed in float64 numpy
   (the math of torch.nn.MultiheadAttention, batch_first=True), and reads
   mhsa's saved file back with this script's own reader: names, dtypes,
   shapes and bits must be what PyTorch's load_state_dict() expects.
4. Does the same with the projections stored one by one, under Hugging
   Face names (q_proj, k_proj, v_proj, o_proj after a Llama-style prefix,
   F32 and BF16, with RoPE as transformers applies it to Llama) and the
   GPT's c_q, c_k, c_v, c_proj, with key/value head counts GQA_CASES; mhsa
   saves them back under the same names.

With --torch (or when torch is importable and MHSA_INTEROP_TORCH=1), the
same files also go through real torch.nn.MultiheadAttention: the module
exported from torch loads into mhsa, and mhsa's file loads into torch with
load_state_dict(strict=True), both reproducing torch's outputs; and the
same both ways for a Llama-style attention module (q_proj ... o_proj, no
biases, grouped-query, transformers' RoPE) written in torch.

Only the standard library and numpy are needed; exit status 77 (meson's
"skipped") when numpy is missing.
"""
import json
import os
import shlex
import struct
import subprocess
import sys
import tempfile



# The shared re-exec (tests/python_with.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from python_with import rerun_with  # noqa: E402

try:
    import numpy as np
except ImportError:
    rerun_with(["numpy"], "MHSA_INTEROP_REEXEC")
    print("numpy not available: skipping the interop test")
    sys.exit(77)

TOL = 1e-4
# Key/value head counts the split-name checks run with (H = 4): multi-head,
# grouped-query and multi-query.
GQA_CASES = (4, 2, 1)

# safetensors' dtype names, sizes, and its enum order (the writer sorts the
# data by dtype in descending enum order, then by name).
DTYPES = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16",
          "BF16", "I32", "U32", "F32", "F64", "I64", "U64"]
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2,
         "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4,
         "F64": 8, "I64": 8, "U64": 8}
NUMPY = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8",
         "I32": "<i4", "U8": "u1"}


def bf16_bits(a):
    """float32 array -> bfloat16 bits (uint16), round to nearest even, as
    torch's .to(torch.bfloat16) does."""
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2")


def bf16_to_f32(bits):
    return (bits.astype("<u4") << 16).view("<f4")


def save_file(path, tensors, metadata=None):
    """tensors: name -> (dtype, raw little-endian bytes, shape). Writes the
    file as safetensors' Rust writer does: data sorted by dtype (descending)
    then name, header {"__metadata__", tensors in data order}, compact JSON,
    padded with spaces to a multiple of 8 bytes."""
    order = sorted(tensors, key=lambda n: (-DTYPES.index(tensors[n][0]), n))
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in order:
        dtype, raw, shape = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_file(path):
    """A validating reader: returns (metadata, {name: (dtype, array)})."""
    with open(path, "rb") as f:
        buf = f.read()
    assert len(buf) >= 8, "file too short"
    (n,) = struct.unpack("<Q", buf[:8])
    assert 8 + n <= len(buf), "header length past the end"
    assert n % 8 == 0, "header not padded to 8 bytes (data unaligned)"

    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), "duplicate names"
        return dict(pairs)

    header = json.loads(buf[8:8 + n].decode("utf-8"),
                        object_pairs_hook=no_dups)
    data = buf[8 + n:]
    meta = header.pop("__metadata__", None)
    spans, out = [], {}
    for name, e in header.items():
        assert set(e) == {"dtype", "shape", "data_offsets"}, name
        b, end = e["data_offsets"]
        count = int(np.prod(e["shape"], dtype=np.int64))
        assert end - b == count * SIZES[e["dtype"]], name
        spans.append((b, end))
        raw = data[b:end]
        if e["dtype"] == "BF16":
            arr = bf16_to_f32(np.frombuffer(raw, "<u2"))
        else:
            arr = np.frombuffer(raw, NUMPY[e["dtype"]])
        out[name] = (e["dtype"], arr.reshape(e["shape"]))
    pos = 0
    for b, end in sorted(spans):
        assert b == pos, "gap or overlap at %d" % b
        pos = end
    assert pos == len(data), "offsets do not cover the data"
    return meta, out


def rope_numpy(a, R, theta):
    """Rotary embedding as transformers applies it to Llama (rotate_half):
    a (B, heads, T, dh), the first R features of position t rotated in
    pairs (i, i + R/2) by the angle t * theta^(-2i/R)."""
    if not R:
        return a
    T = a.shape[2]
    ang = np.arange(T)[:, None] * theta ** (-np.arange(0, R, 2) / R)
    cos = np.cos(np.concatenate([ang, ang], -1))
    sin = np.sin(np.concatenate([ang, ang], -1))
    r = a[..., :R]
    half = np.concatenate([-r[..., R // 2:], r[..., :R // 2]], -1)
    return np.concatenate([r * cos + half * sin, a[..., R:]], -1)


def mha_numpy(x, w_qkv, b_qkv, w_out, b_out, H, causal, Hkv=None, rope=0,
              theta=10000.0):
    """torch.nn.MultiheadAttention(D, H, batch_first=True) in float64; with
    Hkv < H, grouped-query attention: w_qkv rows [Wq (D); Wk, Wv (Hkv*dh
    each)], query head h reading kv head h // (H // Hkv); with rope, Q and
    K rotated as rope_numpy does."""
    x = x.astype(np.float64)
    B, T, D = x.shape
    dh = D // H
    Hkv = Hkv or H
    kv = Hkv * dh
    qkv = x @ w_qkv.astype(np.float64).T + b_qkv
    q = rope_numpy(qkv[..., :D].reshape(B, T, H, dh).transpose(0, 2, 1, 3),
                   rope, theta)
    k, v = (np.repeat(qkv[..., D + i * kv:D + (i + 1) * kv]
                      .reshape(B, T, Hkv, dh).transpose(0, 2, 1, 3),
                      H // Hkv, axis=1) for i in range(2))
    k = rope_numpy(k, rope, theta)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    if causal:
        s = s + np.triu(np.full((T, T), -np.inf), 1)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return ctx @ w_out.astype(np.float64).T + b_out


# The names other than PyTorch's that mhsa reads: the projections one by
# one, as Hugging Face (Llama, Mistral, ...) and the lesson's GPT name them.
SPLIT_NAMES = {"hf": ("q_proj", "k_proj", "v_proj", "o_proj"),
               "c": ("c_q", "c_k", "c_v", "c_proj")}


def split_state(names, prefix, w_qkv, b_qkv, w_out, b_out, D):
    """The block's weights as a state_dict with separate projections:
    Wq = the first D rows of w_qkv, Wk and Wv the two halves of the rest."""
    kv = (w_qkv.shape[0] - D) // 2
    rows = (slice(0, D), slice(D, D + kv), slice(D + kv, D + 2 * kv))
    q, k, v, o = SPLIT_NAMES[names]
    sd = {}
    for mod, r in zip((q, k, v), rows):
        sd[prefix + mod + ".weight"] = f32(w_qkv[r])
        sd[prefix + mod + ".bias"] = f32(b_qkv[r])
    sd[prefix + o + ".weight"] = f32(w_out)
    sd[prefix + o + ".bias"] = f32(b_out)
    return sd


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def f32(a):
    return np.ascontiguousarray(a, dtype="<f4")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    driver = sys.argv[1]
    want_torch = "--torch" in sys.argv or \
        os.environ.get("MHSA_INTEROP_TORCH") == "1"
    D, H, V, B, T = 32, 4, 11, 2, 9
    rng = np.random.default_rng(1234)
    sd = {   # a state_dict of Embedding, Embedding, MHA at `attn`, Linear
        "tok_emb.weight": f32(rng.normal(size=(V, D))),
        "pos_emb.weight": f32(rng.normal(size=(T, D))),
        "attn.in_proj_weight": f32(rng.uniform(-0.3, 0.3, (3 * D, D))),
        "attn.in_proj_bias": f32(rng.uniform(-0.1, 0.1, 3 * D)),
        "attn.out_proj.weight": f32(rng.uniform(-0.3, 0.3, (D, D))),
        "attn.out_proj.bias": f32(rng.uniform(-0.1, 0.1, D)),
        "lm_head.weight": f32(rng.normal(size=(V, D))),
        "lm_head.bias": f32(rng.normal(size=V)),
    }
    x = f32(rng.normal(size=(B, T, D)))
    ok = True
    with tempfile.TemporaryDirectory(prefix="mhsa-interop-") as tmp:
        xin = os.path.join(tmp, "x.bin")
        x.tofile(xin)

        def run(weights, prefix, save=None, save_prefix="", names="torch",
                hkv=0, bias=1, rope=0, theta=0.0):
            yout = os.path.join(tmp, "y.bin")
            # In a cross build meson names the emulator (qemu-aarch64) in
            # MESON_EXE_WRAPPER: the driver is a foreign binary.
            wrapper = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
            cmd = wrapper + [driver, "--kv-heads", str(hkv), "--rope",
                             str(rope), "--rope-theta", repr(theta),
                             "--names", names, weights, prefix, str(D), str(H), "1",
                             str(bias), str(B), str(T), xin, yout]
            if save:
                cmd += [save, save_prefix]
            subprocess.run(cmd, check=True)
            return np.fromfile(yout, "<f4").reshape(B, T, D)

        def check(what, got, want, tol=TOL):
            nonlocal ok
            e = rel_err(got, want)
            good = np.all(np.isfinite(got)) and e <= tol
            print("%-44s rel err %.2e  %s" % (what, e, "ok" if good else
                                               "FAIL"))
            ok = ok and good

        # 1. F32, as torch saves it; an I64 buffer rides along (ignored).
        tensors = {n: ("F32", a.tobytes(), a.shape) for n, a in sd.items()}
        tensors["step"] = ("I64", struct.pack("<q", 1000), ())
        path = os.path.join(tmp, "model.safetensors")
        save_file(path, tensors, {"format": "pt"})
        saved = os.path.join(tmp, "mhsa.safetensors")
        y = run(path, "attn.", saved, "attn.")
        w = [sd["attn." + n] for n in ("in_proj_weight", "in_proj_bias",
                                       "out_proj.weight", "out_proj.bias")]
        y_ref = mha_numpy(x, w[0], w[1], w[2], w[3], H, True)
        check("F32 file -> mhsa forward vs numpy", y, y_ref)

        # 2. mhsa's file read back: exactly the keys, shapes, F32 bits that
        #    MultiheadAttention.load_state_dict() expects.
        meta, back = load_file(saved)
        names = sorted(n for n in sd if n.startswith("attn."))
        good = sorted(back) == names and all(
            back[n][0] == "F32" and back[n][1].shape == sd[n].shape and
            back[n][1].tobytes() == sd[n].tobytes() for n in names)
        print("%-44s %s" % ("mhsa's saved file read back", "ok" if good
                            else "FAIL: %s" % sorted(back)))
        ok = ok and good

        # 3. F16 and BF16 files: mhsa converts on load; the reference uses
        #    the rounded weights.
        for dt in ("F16", "BF16"):
            t16, w16 = {}, {}
            for n, a in sd.items():
                if dt == "F16":
                    bits = a.astype("<f2")
                    w16[n] = bits.astype(np.float32)
                else:
                    bits = bf16_bits(a)
                    w16[n] = bf16_to_f32(bits).reshape(a.shape)
                t16[n] = (dt, bits.tobytes(), a.shape)
            p16 = os.path.join(tmp, dt + ".safetensors")
            save_file(p16, t16, {"format": "pt"})
            y16 = run(p16, "attn.")
            w = [w16["attn." + n] for n in ("in_proj_weight", "in_proj_bias",
                                            "out_proj.weight",
                                            "out_proj.bias")]
            check(dt + " file -> mhsa forward vs numpy", y16,
                  mha_numpy(x, w[0], w[1], w[2], w[3], H, True))

        # 4. The same kind of weights under Hugging Face names (a Llama-
        #    style prefix, F32 and BF16) and the GPT's c_* names, with
        #    extra tensors around them; mhsa saves under the same names,
        #    which read back as that state_dict.
        for hkv in GQA_CASES:
            kv = hkv * (D // H)
            w_qkv = f32(rng.uniform(-0.3, 0.3, (D + 2 * kv, D)))
            b_qkv = f32(rng.uniform(-0.1, 0.1, D + 2 * kv))
            w_out = f32(rng.uniform(-0.3, 0.3, (D, D)))
            b_out = f32(rng.uniform(-0.1, 0.1, D))
            for names, prefix in (("hf", "model.layers.0.self_attn."),
                                  ("c", "transformer.h.0.attn.")):
                part = split_state(names, prefix, w_qkv, b_qkv, w_out, b_out,
                                   D)
                whole = dict(part)
                whole[prefix.replace(".0.", ".1.") + SPLIT_NAMES[names][0]
                      + ".weight"] = f32(rng.normal(size=(D + 1, D)))
                whole["lm_head.weight"] = sd["lm_head.weight"]
                for dt in ("F32", "BF16") if names == "hf" else ("F32",):
                    if dt == "F32":
                        t = {n: ("F32", a.tobytes(), a.shape)
                             for n, a in whole.items()}
                        rw = [w_qkv, b_qkv, w_out, b_out]
                    else:   # the reference uses the rounded weights
                        t = {n: ("BF16", bf16_bits(a).tobytes(), a.shape)
                             for n, a in whole.items()}
                        rw = [bf16_to_f32(bf16_bits(a)).reshape(a.shape)
                              for a in (w_qkv, b_qkv, w_out, b_out)]
                    path = os.path.join(tmp, "split.safetensors")
                    save_file(path, t, {"format": "pt"})
                    saved = os.path.join(tmp, "split_mhsa.safetensors")
                    # Llama-style: the Hugging Face layers with RoPE over
                    # the whole head (dh = 8), theta as Llama 3's.
                    rope = D // H if names == "hf" else 0
                    y = run(path, prefix, saved, prefix, names, hkv,
                            rope=rope, theta=500000.0)
                    check("%s %s names, Hkv=%d, RoPE %d -> mhsa vs numpy"
                          % (dt, names, hkv, rope), y,
                          mha_numpy(x, *rw, H, True, hkv, rope, 500000.0))
                    _, back = load_file(saved)
                    want = split_state(names, prefix, *rw, D)
                    good = sorted(back) == sorted(want) and all(
                        back[n][0] == "F32" and
                        back[n][1].shape == want[n].shape and
                        back[n][1].tobytes() == want[n].tobytes()
                        for n in want)
                    print("%-44s %s" % ("mhsa's %s file read back" % names,
                                        "ok" if good else
                                        "FAIL: %s" % sorted(back)))
                    ok = ok and good

        if want_torch:
            torch_checks(run, x, D, H, T, tmp, check)

    print("interop:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def torch_checks(run, x, D, H, T, tmp, check):
    """Real PyTorch both ways (not run in CI: Debian's python3-torch)."""
    import torch
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(D, H, bias=True, batch_first=True)
    with torch.no_grad():   # non-zero biases, so they are really checked
        m.in_proj_bias.uniform_(-0.1, 0.1)
        m.out_proj.bias.uniform_(-0.1, 0.1)
    mask = torch.triu(torch.full((T, T), float("-inf")), 1)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        y_t = m(xt, xt, xt, attn_mask=mask, need_weights=False)[0].numpy()
    # torch -> mhsa: the state_dict exactly as torch names it, no prefix.
    tensors = {n: ("F32", f32(p.detach().numpy()).tobytes(), tuple(p.shape))
               for n, p in m.state_dict().items()}
    path = os.path.join(tmp, "torch.safetensors")
    save_file(path, tensors, {"format": "pt"})
    saved = os.path.join(tmp, "mhsa_for_torch.safetensors")
    check("torch MHA state_dict -> mhsa vs torch", run(path, "", saved, ""),
          y_t)
    # mhsa -> torch: load_state_dict(strict=True) of mhsa's file.
    _, back = load_file(saved)
    m2 = torch.nn.MultiheadAttention(D, H, bias=True, batch_first=True)
    m2.load_state_dict({n: torch.from_numpy(a.copy()) for n, (_, a)
                        in back.items()}, strict=True)
    with torch.no_grad():
        y2 = m2(xt, xt, xt, attn_mask=mask, need_weights=False)[0].numpy()
    check("mhsa file -> torch load_state_dict vs torch", y2, y_t, 0)
    for hkv in GQA_CASES:
        llama_checks(run, x, D, H, hkv, T, tmp, check, mask)


def llama_checks(run, x, D, H, hkv, T, tmp, check, mask):
    """A Llama-style attention in torch (q_proj, k_proj, v_proj, o_proj,
    no biases, Hkv key/value heads, RoPE as transformers' LlamaAttention
    applies it), both ways under Hugging Face names."""
    import torch
    dh, theta = D // H, 500000.0
    inv_freq = 1.0 / (theta ** (torch.arange(0, dh, 2).float() / dh))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rotate_half(a):
        return torch.cat((-a[..., dh // 2:], a[..., :dh // 2]), dim=-1)

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = torch.nn.Linear(D, D, bias=False)
            self.k_proj = torch.nn.Linear(D, hkv * dh, bias=False)
            self.v_proj = torch.nn.Linear(D, hkv * dh, bias=False)
            self.o_proj = torch.nn.Linear(D, D, bias=False)

        def forward(self, x):
            B, T, _ = x.shape
            q = self.q_proj(x).view(B, T, H, dh).transpose(1, 2)
            k, v = (p(x).view(B, T, hkv, dh).transpose(1, 2)
                    .repeat_interleave(H // hkv, dim=1)
                    for p in (self.k_proj, self.v_proj))
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            s = q @ k.transpose(-1, -2) / dh ** 0.5 + mask
            o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
            return self.o_proj(o)

    layer = torch.nn.Module()
    layer.self_attn = Attention()
    xt = torch.from_numpy(x)
    with torch.no_grad():
        y_t = layer.self_attn(xt).numpy()
    tensors = {n: ("F32", f32(p.detach().numpy()).tobytes(), tuple(p.shape))
               for n, p in layer.state_dict().items()}
    path = os.path.join(tmp, "llama.safetensors")
    save_file(path, tensors, {"format": "pt"})
    saved = os.path.join(tmp, "mhsa_for_llama.safetensors")
    check("torch Llama-style (Hkv=%d, RoPE) -> mhsa vs torch" % hkv,
          run(path, "self_attn.", saved, "self_attn.", "hf", hkv, 0, dh,
              theta), y_t)
    _, back = load_file(saved)
    layer2 = torch.nn.Module()
    layer2.self_attn = Attention()
    layer2.load_state_dict({n: torch.from_numpy(a.copy()) for n, (_, a)
                            in back.items()}, strict=True)
    with torch.no_grad():
        y2 = layer2.self_attn(xt).numpy()
    check("mhsa hf file -> torch Llama-style vs torch", y2, y_t, 0)


if __name__ == "__main__":
    sys.exit(main())
