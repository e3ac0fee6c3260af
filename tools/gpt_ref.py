#!/usr/bin/env python3
"""gpt_ref.py -- PyTorch reference values for the GPT (tests/train/test_gpt.c).

Builds small GPTs with tools/gpt_peer.py's PyTorch model, from weights drawn
here (seeded numpy, wide enough that every path carries a gradient), runs
one forward and backward on fixed tokens, and writes one safetensors file
per variant into tests/data/gpt/: the model's tensors under their GPT names
with the configuration in the metadata (so mhsa_gpt_load reads it as it
is), plus

    ref.tokens, ref.targets   (B, T) as floats (-1: not counted)
    ref.loss                  ()        mean cross-entropy
    ref.logits                (B, T, V)
    ref.grad.<name>           the gradient of every parameter

The test loads each file, runs mhsa's forward and backward and compares
(relative error 1e-4 per tensor), so the tests need no PyTorch.

    /usr/bin/python3 tools/gpt_ref.py            # rewrites tests/data/gpt
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_peer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "gpt")

BASE = {"vocab": 32, "n_layer": 2, "n_embd": 16, "n_head": 2,
        "block_size": 8, "rope_dim": 0, "tie_embeddings": 0, "no_proj": 0}
VARIANTS = {
    "plain": {},
    "tied_noproj": {"tie_embeddings": 1, "no_proj": 1, "n_layer": 1},
    "rope": {"rope_dim": 8, "n_head": 2},
    "rope_half": {"rope_dim": 4, "n_head": 2, "block_size": 7},
}
B = 2


def make(name, extra, seed):
    cfg = dict(BASE, **extra)
    torch.manual_seed(seed)
    model = gpt_peer.GPT(cfg).double()
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            lo, hi = (0.5, 1.5) if "ln_" in pname and "weight" in pname \
                else (-0.5, 0.5)
            # float32 values, so that mhsa starts from the very same ones
            w = rng.uniform(lo, hi, size=tuple(p.shape)).astype(np.float32)
            p.copy_(torch.from_numpy(w.astype(np.float64)))
    T, V = cfg["block_size"], cfg["vocab"]
    tok = rng.integers(0, V, size=(B, T))
    tok[0, 2] = tok[0, 0]                 # a repeated token
    tgt = rng.integers(0, V, size=(B, T))
    tgt[1, 3] = -1                        # not counted
    # Forward and backward in float64: the reference mhsa's fp32 is held to.
    logits = model(torch.from_numpy(tok))
    loss = F.cross_entropy(logits.reshape(-1, V),
                           torch.from_numpy(tgt).reshape(-1),
                           ignore_index=-1)
    loss.backward()
    tensors = {k: v.detach().float().numpy()
               for k, v in model.state_dict().items()}
    for pname, p in model.named_parameters():
        tensors["ref.grad." + pname] = p.grad.float().numpy()
    tensors["ref.tokens"] = tok.astype(np.float32)
    tensors["ref.targets"] = tgt.astype(np.float32)
    tensors["ref.loss"] = np.array(loss.item(), dtype=np.float32)
    tensors["ref.logits"] = logits.detach().float().numpy()
    meta = {"mhsa.gpt." + k: str(cfg[k]) for k in gpt_peer.CFG_KEYS}
    meta["generated_by"] = (f"tools/gpt_ref.py, torch {torch.__version__}, "
                            f"float64")
    path = os.path.join(OUT, name + ".safetensors")
    gpt_peer.st_write(path, tensors, meta)
    print(f"{path}: loss {loss.item():.6f}, {len(tensors)} tensors")


def main():
    os.makedirs(OUT, exist_ok=True)
    for i, (name, extra) in enumerate(VARIANTS.items()):
        make(name, extra, 1000 + i)


if __name__ == "__main__":
    main()
