#!/usr/bin/env python3
"""make_gemma_greedy.py -- the Gemma 3 reference ids for mhsa's tests.

Runs transformers' Gemma3ForCausalLM on the GGUF file itself
(from_pretrained(dir, gguf_file=..., dtype=float32): transformers
dequantizes every tensor to fp32 and takes the norms' stored 1 + w back to
w), greedily, and writes per prompt

    prompt: TEXT            ("\\n" for a newline)
    prompt_ids: ...         (transformers' tokenizer built from the GGUF)
    new_ids: ...            (up to --new greedy ids; an end-of-generation
                             id ends them and is not written)
    top2_gaps: ...          (the top-two logit gap at every step, the
                             step that chose an end-of-generation id too)

Needs torch, transformers, accelerate, gguf, sentencepiece and numpy, in a
virtual environment outside the repository:

    python3 -m venv VENV && VENV/bin/pip install torch transformers \\
        accelerate gguf sentencepiece numpy
    VENV/bin/python tools/gemma-ref/make_gemma_greedy.py \\
        --model gemma-3-270m-q4_k_m.gguf \\
        --out tests/data/gemma3/gemma3_greedy.txt

It prints, per prompt, how many steps come before the first whose gap is
under --near (the steps .ci/test-gemma.sh compares), and exits 1 when a
prompt has fewer than --min-steps of them.
"""
import argparse
import os
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

# The prompts: chat turns, code, numbers, letters, English, French,
# Spanish, German, Chinese, Russian. Each chosen (from about 40 candidates)
# for at least 7 steps before the first whose top-two gap is under 0.5:
# the 270M base model continues most open prompts through near ties.
# The first three are those CI also runs on every other ISA.
PROMPTS = [
    "<start_of_turn>user\nWrite a haiku about the sea.<end_of_turn>\n"
    "<start_of_turn>model\n",
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n",
    "lundi, mardi, mercredi,",
    "2, 4, 6, 8, 10,",
    "A B C D E F G",
    "uno, dos, tres, cuatro,",
    "一、二、三、四、",
    "понедельник, вторник, среда,",
    "We hold these truths to be self-evident, that all men",
    "Montag, Dienstag, Mittwoch,",
    "<start_of_turn>user\nTranslate to German: Good morning!<end_of_turn>\n"
    "<start_of_turn>model\n",
]

# End of generation: eos and <end_of_turn> (llama.cpp's eog set, mhsa's).
EOG_TEXT = ["<eos>", "<end_of_turn>"]


def greedy(model, ids, n_new, eog):
    """New ids (up to n_new, stopping before an eog id) and the top-two gap
    of every step."""
    new, gaps = [], []
    past = None
    inp = torch.tensor([ids])
    with torch.no_grad():
        for _ in range(n_new):
            out = model(input_ids=inp, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].float()
            top = torch.topk(logits, 2)
            gaps.append(float(top.values[0] - top.values[1]))
            tok = int(top.indices[0])
            if tok in eog:
                break
            new.append(tok)
            inp = torch.tensor([[tok]])
    return new, gaps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="the .gguf file")
    ap.add_argument("--out", required=True)
    ap.add_argument("--new", type=int, default=24)
    ap.add_argument("--near", type=float, default=0.5)
    ap.add_argument("--min-steps", type=int, default=7)
    a = ap.parse_args()
    torch.manual_seed(0)
    d, name = os.path.split(os.path.abspath(a.model))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name,
                                                 dtype=torch.float32)
    model.eval()
    cfg = model.config
    print("config: head_dim %s query_pre_attn_scalar %s sliding_window %s "
          "layer_types %s rope_theta %s rope_local_base_freq %s "
          "rope_scaling %s final_logit_softcapping %s "
          "attn_logit_softcapping %s hidden_activation %s" %
          (cfg.head_dim, cfg.query_pre_attn_scalar, cfg.sliding_window,
           getattr(cfg, "layer_types", None),
           getattr(cfg, "rope_theta", None),
           getattr(cfg, "rope_local_base_freq", None),
           getattr(cfg, "rope_scaling", None),
           cfg.final_logit_softcapping, cfg.attn_logit_softcapping,
           cfg.hidden_activation), file=sys.stderr)
    eog = {tok.convert_tokens_to_ids(t) for t in EOG_TEXT}
    lines = ["# transformers %s, torch %s: Gemma3ForCausalLM on %s" %
             (__import__("transformers").__version__, torch.__version__,
              name),
             "# dequantized to fp32, greedy, %d new tokens at most "
             "(tools/gemma-ref/make_gemma_greedy.py)." % a.new,
             "# Per prompt: the prompt line, its ids, the new ids and "
             "top2_gaps."]
    short = 0
    for p in PROMPTS:
        ids = tok(p, add_special_tokens=True)["input_ids"]
        new, gaps = greedy(model, ids, a.new, eog)
        steps = next((i for i, g in enumerate(gaps) if g < a.near),
                     len(gaps))
        short += steps < a.min_steps
        print("%-50r %2d steps of gap >= %g, min gap %.4f: %r" %
              (p[:50], steps, a.near, min(gaps), tok.decode(new)),
              file=sys.stderr)
        lines.append("prompt: " + p.replace("\n", "\\n"))
        lines.append("prompt_ids: " + " ".join(map(str, ids)))
        lines.append("new_ids: " + " ".join(map(str, new)))
        lines.append("top2_gaps: " + " ".join("%.4f" % g for g in gaps))
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("%d prompts written to %s; %d with fewer than %d compared steps"
          % (len(PROMPTS), a.out, short, a.min_steps), file=sys.stderr)
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
