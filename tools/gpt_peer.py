#!/usr/bin/env python3
"""gpt_peer.py -- the PyTorch peer of `mhsa-train --task text`.

It builds the same GPT in PyTorch (Debian's python3-torch), loads the same
initial weights from the checkpoint `mhsa-train --save-init` wrote, reads
the same bytes, draws the same batches (the C side's splitmix64 sampler,
reproduced below), and trains with the same AdamW, clipping and warm-up +
cosine schedule, all taken from that checkpoint's metadata. So both loss
curves start from one point and may differ only by floating-point rounding.

    mhsa-train --task text --preset tiny --steps 300 --save-init init.st \\
        --loss-csv mhsa.csv --save mhsa.st
    python3 tools/gpt_peer.py --init init.st --loss-csv torch.csv \\
        --save torch.st
    mhsa-train --task text --eval torch.st     # the same val loss

It prints training tokens/s (forward, backward, clipping and the optimiser
step, as mhsa-train counts them) and the final validation loss, and can
save its model as a checkpoint mhsa-generate loads. `--eval FILE` prints
the validation loss of any checkpoint. Needs only torch and numpy (the
safetensors reader and writer are below: the `safetensors` module is not in
Debian 12).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MASK64 = (1 << 64) - 1
FORTUNES = ("/usr/share/games/fortunes", "/usr/share/fortunes")


# ---- safetensors (F32 / F16 / BF16 in, F32 out) ------------------------------

def st_read(path):
    """(tensors as float32 numpy arrays by name, metadata dict)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        raw = body[b:end]
        shape = tuple(e["shape"])
        if e["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif e["dtype"] == "F16":
            a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif e["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            a = u.view(np.float32)
        else:
            raise ValueError(f"{path}: tensor {name}: dtype {e['dtype']}")
        out[name] = a.reshape(shape).astype(np.float32)
    return out, meta


def st_write(path, tensors, meta):
    """Writes float32 tensors with string metadata; temp file + rename."""
    header = {"__metadata__": dict(meta)}
    header["__metadata__"]["format"] = "pt"
    blobs, off = [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ---- the data: mhsa_text_load / mhsa_text_batch / mhsa_text_val_batch -------

def load_text(path, val_fraction):
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(os.fsencode(path))
                       if b"." not in n)
        parts = []
        for n in names:
            p = os.path.join(os.fsencode(path), n)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    parts.append(f.read())
        data = b"".join(parts)
    else:
        with open(path, "rb") as f:
            data = f.read()
    n_val = int(len(data) * val_fraction)   # floor of a double product
    return np.frombuffer(data, dtype=np.uint8), len(data) - n_val, n_val


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def train_batch(data, n_train, rng, B, T):
    idx = np.empty((B, T + 1), dtype=np.int64)
    for b in range(B):
        rng, r = splitmix64(rng)
        o = r % (n_train - T)
        idx[b] = data[o:o + T + 1]
    t = torch.from_numpy(idx)
    return t[:, :-1].contiguous(), t[:, 1:].contiguous(), rng


def val_windows(data, n_train, n_val, T):
    """All validation windows as (tokens, targets), (n, T) each."""
    nw = (n_val - 1) // T if n_val >= 1 else 0
    v = data[n_train:n_train + nw * T + 1].astype(np.int64)
    idx = np.stack([v[i * T:i * T + T + 1] for i in range(nw)])
    t = torch.from_numpy(idx)
    return t[:, :-1].contiguous(), t[:, 1:].contiguous()


# ---- the model: mhsa_gpt --------------------------------------------------------

def rope_tables(T, dh, R, theta=10000.0):
    """cos, sin (T, R/2), angles in float64 (as the API asks)."""
    i = np.arange(R // 2, dtype=np.float64)
    inv = theta ** (-2.0 * i / R)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    return torch.from_numpy(np.cos(ang)), torch.from_numpy(np.sin(ang))


def rope(x, cos, sin, R):
    """x (B, H, T, dh): pairs (i, i + R/2) of the first R features rotated."""
    h = R // 2
    u, v, rest = x[..., :h], x[..., h:R], x[..., R:]
    c = cos[:x.shape[2]].to(x.dtype)
    s = sin[:x.shape[2]].to(x.dtype)
    return torch.cat([u * c - v * s, u * s + v * c, rest], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D = cfg["n_embd"]
        self.H, self.R = cfg["n_head"], cfg["rope_dim"]
        self.c_q, self.c_k, self.c_v = (nn.Linear(D, D) for _ in range(3))
        self.c_proj = None if cfg["no_proj"] else nn.Linear(D, D)
        if self.R:
            cos, sin = rope_tables(cfg["block_size"], D // self.H, self.R)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

    def forward(self, x):
        B, T, D = x.shape
        H, dh = self.H, D // self.H
        q, k, v = (f(x).view(B, T, H, dh).transpose(1, 2)
                   for f in (self.c_q, self.c_k, self.c_v))
        if self.R:
            q, k = rope(q, self.cos, self.sin, self.R), \
                rope(k, self.cos, self.sin, self.R)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.c_proj(y) if self.c_proj is not None else y


class MLP(nn.Module):
    def __init__(self, D):
        super().__init__()
        self.c_fc, self.c_proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D = cfg["n_embd"]
        self.ln_1, self.attn = nn.LayerNorm(D), Attention(cfg)
        self.ln_2, self.mlp = nn.LayerNorm(D), MLP(D)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        V, D = cfg["vocab"], cfg["n_embd"]
        self.wte = nn.Embedding(V, D)
        self.wpe = None if cfg["rope_dim"] else \
            nn.Embedding(cfg["block_size"], D)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = None if cfg["tie_embeddings"] else \
            nn.Linear(D, V, bias=False)

    def forward(self, idx):
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(idx.shape[1]))
        for blk in self.h:
            x = blk(x)
        x = self.ln_f(x)
        w = self.wte.weight if self.lm_head is None else self.lm_head.weight
        return F.linear(x, w)


CFG_KEYS = ("vocab", "n_layer", "n_embd", "n_head", "block_size", "rope_dim",
            "tie_embeddings", "no_proj")


def model_from(path):
    tensors, meta = st_read(path)
    cfg = {k: int(meta["mhsa.gpt." + k]) for k in CFG_KEYS}
    model = GPT(cfg)
    sd = model.state_dict()
    missing = set(sd) - set(tensors)
    if missing:
        sys.exit(f"gpt_peer: {path}: missing tensors {sorted(missing)}")
    model.load_state_dict({k: torch.from_numpy(tensors[k].copy())
                           for k in sd})
    return model, cfg, meta


def save_model(model, cfg, path):
    meta = {"mhsa.gpt." + k: str(cfg[k]) for k in CFG_KEYS}
    st_write(path, {k: v.detach().numpy()
                    for k, v in model.state_dict().items()}, meta)


@torch.no_grad()
def val_loss(model, val, B, max_windows=0):
    tok, tgt = val
    n = tok.shape[0] if not max_windows else min(max_windows, tok.shape[0])
    total = 0.0
    for i in range(0, n, B):
        j = min(i + B, n)
        logits = model(tok[i:j])
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                 tgt[i:j].reshape(-1),
                                 reduction="sum").item()
    return total / (n * tok.shape[1])


def lr_cosine(s, warmup, total, lr_max, lr_min):
    """mhsa_lr_cosine, in float32 as the C side returns it."""
    if warmup > 0 and s < warmup:
        return float(np.float32(lr_max) * np.float32(s + 1) /
                     np.float32(warmup))
    span = total - 1 - max(warmup, 0)
    if span <= 0:
        return lr_max
    if s >= total - 1:
        return lr_min
    frac = (s - max(warmup, 0)) / span
    c = 0.5 * (1.0 + math.cos(math.pi * frac))
    return float(np.float32(lr_min + c * (lr_max - lr_min)))


def default_data():
    for d in FORTUNES:
        if os.path.isdir(d):
            return d
    sys.exit("gpt_peer: no --data and no fortune files (apt-get install "
             "fortunes)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init", help="checkpoint from mhsa-train --save-init")
    ap.add_argument("--eval", help="only print the val loss of a checkpoint")
    ap.add_argument("--data", help="text file or folder (default: fortunes)")
    ap.add_argument("--val-fraction", type=float, default=0.1,
                    help="with --eval: held-out tail (0.1)")
    ap.add_argument("--batch", type=int, default=16,
                    help="with --eval: windows per forward (16)")
    ap.add_argument("--steps", type=int, help="stop after this many steps "
                    "(default: the run's; the schedule stays the run's)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=0)
    ap.add_argument("--val-tokens", type=int, default=32768)
    ap.add_argument("--loss-csv")
    ap.add_argument("--save")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    data_path = a.data or default_data()

    if a.eval:
        model, cfg, _ = model_from(a.eval)
        data, n_train, n_val = load_text(data_path,
                                         float(np.float32(a.val_fraction)))
        val = val_windows(data, n_train, n_val, cfg["block_size"])
        print(f"val loss: {val_loss(model, val, a.batch):.6f} "
              f"({val[0].shape[0]} held-out windows of "
              f"{cfg['block_size']} bytes)")
        return
    if not a.init:
        ap.error("--init or --eval is required")

    model, cfg, meta = model_from(a.init)
    f32 = lambda k: float(np.float32(meta["train." + k]))  # noqa: E731
    B, T = int(meta["train.batch"]), cfg["block_size"]
    total, warmup = int(meta["train.steps"]), int(meta["train.warmup"])
    lr, min_lr, clip = f32("lr"), f32("min_lr"), f32("clip")
    rng = int(meta["train.rng"])
    data, n_train, n_val = load_text(data_path, f32("val_fraction"))
    if n_train + n_val != int(meta["train.data_bytes"]):
        sys.exit(f"gpt_peer: {data_path} is not the data of {a.init}")
    val = val_windows(data, n_train, n_val, T)
    steps = min(a.steps or total, total)
    eval_every = a.eval_every or max(1, total // 10)

    decay = [p for p in model.parameters() if p.dim() == 2]
    other = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": f32("weight_decay")},
         {"params": other, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, f32("beta2")), eps=1e-8)
    print(f"gpt_peer: torch {torch.__version__}, {a.threads} thread(s), "
          f"L={cfg['n_layer']} D={cfg['n_embd']} H={cfg['n_head']} T={T}, "
          f"batch {B}, {steps} of {total} steps", file=sys.stderr)
    rows, train_time = [], 0.0
    for s in range(steps):
        tok, tgt, rng = train_batch(data, n_train, rng, B, T)
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_cosine(s, warmup, total, lr, min_lr)
        logits = model(tok)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               tgt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        train_time += time.perf_counter() - t0
        v = ""
        if (s + 1) % eval_every == 0 or s + 1 == steps:
            v = val_loss(model, val, B, max(1, a.val_tokens // T))
            print(f"step {s + 1:6d}/{steps}  loss {loss.item():.4f}  "
                  f"val {v:.4f}  {(s + 1) * B * T / train_time:.0f} tok/s",
                  file=sys.stderr)
        rows.append((s + 1, loss.item(), v))
    tps = steps * B * T / train_time
    if a.loss_csv:
        with open(a.loss_csv, "w") as f:
            f.write("step,loss,val_loss\n")
            for s, l, v in rows:
                f.write(f"{s},{l:.9g},{'' if v == '' else f'{v:.9g}'}\n")
    if a.save:
        save_model(model, cfg, a.save)
    print(f"train tokens/s: {tps:.0f}")
    print(f"val loss: {val_loss(model, val, B):.6f} ({val[0].shape[0]} "
          f"held-out windows of {T} bytes)")


if __name__ == "__main__":
    main()
