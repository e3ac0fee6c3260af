#!/usr/bin/env python3
"""Writes the in-tree seed corpora (fuzz/corpus/<target>/) and the crafted
regression inputs of fuzz_forward (fuzz/regress/fuzz_forward/),
deterministically. Run from anywhere: python3 fuzz/make_seeds.py. The files
are committed; this script only documents how they were made. fuzz_gpt's
checkpoint seeds (odd first byte) are real checkpoints written by
mhsa_gpt_save, made by fuzz/make_gpt_seeds.c; its argument seeds are here."""
import json
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def put_regress(target, name, data):
    d = os.path.join(HERE, 'regress', target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def ff_header(isa, D, H, T, B, causal=1, bias=1, attn=0, mask_kind=0,
              extra=0, seq_len=None, others=0, kv=0, rope=None, theta=0,
              window=0, dtype=0, probe=0):
    """The first bytes of a fuzz_forward input (see read_setup there): isa
    0 auto, 1 scalar, 2 avx2; kv the index of Hkv among H's divisors
    (ascending); rope (R, interleaved) or None; theta and window the
    indices of the target's tables; seq_len a list of B lengths or None."""
    assert 1 <= D <= 24 and 1 <= H <= D and D % H == 0 and 1 <= B <= 3
    if T <= 24:
        t = T - 1
    else:
        assert 70 <= T <= 115 and (T - 70) % 3 == 0
        t = 240 + (T - 70) // 3
    flags = (causal | bias << 1 | attn << 2 | mask_kind << 3 | extra << 5 |
             (seq_len is not None) << 6 | others << 7)
    r = 0
    if rope:
        R, inter = rope
        assert R % 2 == 0 and 2 <= R <= D // H
        r = 1 | (R // 2 - 1) << 2 | inter << 7
    b = [isa, D - 1, H - 1, t, B - 1, flags, kv, r, theta, window,
         dtype | probe << 4]
    if seq_len is not None:
        assert len(seq_len) == B
        b += [n - 1 for n in seq_len]
    return bytes(b)


def ff_values(vals):
    """Value bytes of fuzz_forward: NaN, or multiples of 1/32 in
    [-3.75, 3.69] (selector (v * 32) + 136)."""
    out = []
    for v in vals:
        if v != v:
            out.append(4)
        else:
            sel = int(round(v * 32)) + 136
            assert 16 <= sel <= 254 and (sel - 136) / 32 == v
            out.append(sel)
    return bytes(out)


def safetensors(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    header, off = {}, 0
    if metadata is not None:
        header['__metadata__'] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {'dtype': dtype, 'shape': shape,
                        'data_offsets': [off, off + len(raw)]}
        off += len(raw)
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)
    return struct.pack('<Q', len(h)) + h + b''.join(t[3] for t in tensors)


def f32(vals):
    return struct.pack('<%df' % len(vals), *vals)


def f16(vals):
    return struct.pack('<%de' % len(vals), *vals)


def bf16(vals):
    return b''.join(struct.pack('<f', v)[2:] for v in vals)


def block(prefix, enc, dtype, bias=True, D=4):
    rng = random.Random(len(prefix) + D)
    def t(name, shape):
        n = 1
        for s in shape:
            n *= s
        return (prefix + name, dtype, shape,
                enc([rng.uniform(-1, 1) for _ in range(n)]))
    ts = [t('in_proj_weight', [3 * D, D]), t('out_proj.weight', [D, D])]
    if bias:
        ts += [t('in_proj_bias', [3 * D]), t('out_proj.bias', [D])]
    return ts


def block_set(prefix, enc, dtype, names, bias=True, D=4, H=2, Hkv=0):
    """The block's tensors under one set of names ('torch', 'hf' or 'c'),
    with grouped-query shapes: k and v have Hkv*dh rows (Hkv = 0: H)."""
    rng = random.Random(len(prefix) + D + 10 * Hkv)
    kv = (Hkv or H) * (D // H)

    def t(name, shape):
        n = 1
        for s in shape:
            n *= s
        return (prefix + name, dtype, shape,
                enc([rng.uniform(-1, 1) for _ in range(n)]))
    if names == 'torch':
        mods = [('in_proj_weight', 'in_proj_bias', D + 2 * kv),
                ('out_proj.weight', 'out_proj.bias', D)]
    else:
        q, k, v, o = (('q_proj', 'k_proj', 'v_proj', 'o_proj')
                      if names == 'hf' else ('c_q', 'c_k', 'c_v', 'c_proj'))
        mods = [(m + '.weight', m + '.bias', rows) for m, rows in
                ((q, D), (k, kv), (v, kv), (o, D))]
    ts = []
    for w, b, rows in mods:
        ts.append(t(w, [rows, D]))
        if bias:
            ts.append(t(b, [rows]))
    return ts


def main():
    # fuzz_forward: random bytes of a few lengths (shape bytes come first).
    rng = random.Random(1)
    for i, n in enumerate([16, 64, 200, 600, 2000]):
        put('fuzz_forward', 'random%d' % i,
            bytes(rng.randrange(256) for _ in range(n)))
    # special values only (selector bytes 0..15), causal + bias + attn + mask
    put('fuzz_forward', 'specials',
        bytes([1, 7, 1, 9, 1, 0x0f]) + bytes(i % 16 for i in range(3000)))
    # The 0.2 fields: short inputs (the values and the cached steps past
    # the input come from the target's own stream of small values).
    put('fuzz_forward', 'gqa_rope_window_f16', ff_header(
        0, D=24, H=6, T=20, B=3, attn=1, kv=1, rope=(4, 0), window=5,
        dtype=1, seq_len=[20, 1, 9], others=1))
    put('fuzz_forward', 'mqa_bf16_prefill', ff_header(
        0, D=16, H=8, T=100, B=2, kv=0, rope=(2, 1), theta=2, window=6,
        dtype=2, others=1))
    put('fuzz_forward', 'noncausal_padding', ff_header(
        1, D=12, H=4, T=17, B=3, causal=0, attn=1, mask_kind=1, kv=1,
        rope=(2, 0), theta=3, seq_len=[17, 4, 1], others=1))
    put('fuzz_forward', 'window1_seq1', ff_header(
        2, D=8, H=2, T=9, B=2, attn=1, kv=0, rope=(4, 1), window=2,
        seq_len=[1, 1], dtype=1))
    put('fuzz_forward', 'probe_theta', ff_header(
        0, D=8, H=4, T=5, B=1, kv=1, rope=(2, 0), theta=5, window=3,
        probe=5))
    # Regression inputs, rewritten for the 0.2 layout of the target (the
    # 0.1 files meant other things once the header grew): each reproduces
    # its original finding, on scalar and on AVX2.
    for isa, name in ((1, 'scalar'), (2, 'avx2')):
        # A row that reads a NaN query: its blocked weights stay +0 (the
        # NaN row sum used to multiply them).
        vals = [v * 0.25 for v in range(-8, 8)] * 5   # w_qkv 48, w_out 16
        x = [0.5, -0.25, 1.0, 0.75] * 5
        x[2 * 4 + 1] = float('nan')
        put_regress('fuzz_forward', 'nan-row-blocked-weight-' + name,
                    ff_header(isa, D=4, H=1, T=5, B=1, bias=0, attn=1) +
                    ff_values(vals[:64] + x))
        # T = 1 with a NaN query: the one-row decode path gives NaN, as the
        # tiled path does (it used to give a fully masked row's zeros).
        x1 = [float('nan'), 0.5, -0.5, 1.0]
        put_regress('fuzz_forward', 'nan-query-decode-path-' + name,
                    ff_header(isa, D=4, H=2, T=1, B=1, bias=0, attn=1,
                              kv=1) +
                    ff_values(vals[:64] + x1))

    # fuzz_safetensors: valid files in each dtype, with and without a
    # prefix, metadata, an extra tensor, and a zero-size tensor.
    put('fuzz_safetensors', 'f32', safetensors(block('', f32, 'F32')))
    put('fuzz_safetensors', 'f16_attn', safetensors(
        block('attn.', f16, 'F16', bias=False), {'format': 'pt'}))
    put('fuzz_safetensors', 'bf16', safetensors(block('', bf16, 'BF16')))
    put('fuzz_safetensors', 'extra', safetensors(
        block('attn.', f32, 'F32') +
        [('other', 'I64', [2], struct.pack('<2q', 1, 2)),
         ('empty', 'F32', [0, 3], b'')]))
    put('fuzz_safetensors', 'wrong_shape', safetensors(
        block('', f32, 'F32', D=2)))

    # The other sets of weight names, grouped-query shapes (k, v of Hkv
    # heads), two complete sets in one file, and a partial set.
    put('fuzz_safetensors', 'hf_f32', safetensors(
        block_set('', f32, 'F32', 'hf')))
    put('fuzz_safetensors', 'c_bf16_attn', safetensors(
        block_set('attn.', bf16, 'BF16', 'c', bias=False)))
    put('fuzz_safetensors', 'hf_f16_gqa', safetensors(
        block_set('', f16, 'F16', 'hf', Hkv=1), {'format': 'pt'}))
    put('fuzz_safetensors', 'c_gqa_attn', safetensors(
        block_set('attn.', f32, 'F32', 'c', bias=False, H=4, Hkv=2)))
    put('fuzz_safetensors', 'torch_gqa', safetensors(
        block_set('', f32, 'F32', 'torch', Hkv=1)))
    put('fuzz_safetensors', 'two_sets', safetensors(
        block_set('', f32, 'F32', 'torch') + block_set('', f16, 'F16', 'hf')))
    put('fuzz_safetensors', 'partial_hf', safetensors(
        block_set('', f32, 'F32', 'hf')[:4]))

    # fuzz_train_args: NUL-separated argument lists.
    for i, args in enumerate([
            ['--task', 'induction', '--heads', '2', '--d-model', '8'],
            ['--seq-len=1024', '--vocab', '65536', '--optim', 'sgd'],
            ['--lr', '1e-3', '--weight-decay=0.1', '--clip', '1'],
            ['--isa', 'scalar', '--threads', '2', '--seed', '18446744073709551615'],
            ['--save', 'm.st', '--load=m.st', '--heatmap-png', 'h.png',
             '--loss-csv', 'l.csv', '--epochs', '2', '--steps-per-epoch',
             '3', '--batch', '4'],
            ['--help'], ['--heads', '3', '--d-model', '8'], ['--lr', 'nan'],
            ['--kv-heads', '2', '--rope', '4', '--rope-theta=5e5',
             '--rope-interleaved', '--window', '8'],
            # the text task's parser (tools/mhsa-train/text_args.c)
            ['--task', 'text', '--preset', 'tiny', '--layers', '3',
             '--rope', '--no-proj', '--tie', '--steps', '5'],
            ['--task=text', '--embd', '48', '--heads', '6', '--epochs', '2',
             '--min-lr', '0', '--warmup=0', '--beta2', '0.95',
             '--val-fraction', '0.25', '--resume', 'r.st']]):
        put('fuzz_train_args', 'args%d' % i, '\0'.join(args).encode())

    # fuzz_gpt, mhsa-generate's arguments: mode byte 0 (even), then
    # NUL-separated arguments.
    for i, args in enumerate([
            ['--model', 'm.safetensors'],
            ['--model=m.st', '--prompt', 'Hello, world', '-n', '1073741824',
             '--temperature', '0', '--top-k', '16777216'],
            ['--model', 'x', '--seed', '0x10', '--threads=1024', '--isa',
             'avx2', '--temperature=1.5e0', '--top-k=0', '-n', '0'],
            ['--prompt=', '--isa=neon', '--model', 'a', '--seed',
             '18446744073709551615'],
            ['-h'], ['--model'], ['--model='], ['-n', '-1', '--model', 'm'],
            ['--temperature', 'inf', '--model', 'm'],
            ['--isa', 'sse', '--model', 'm'], ['m.st'],
            # one past each bound the help states (all refused)
            ['--top-k', '-1', '--model', 'm'],
            ['--top-k', '16777217', '--model', 'm'],
            ['--threads', '0', '--model', 'm'],
            ['--threads=1025', '--model', 'm'],
            ['-n', '1073741825', '--model', 'm'],
            ['--temperature=-0.5', '--model', 'm'],
            ['--seed', '-1', '--model', 'm']]):
        put('fuzz_gpt', 'args%d' % i, b'\0' + '\0'.join(args).encode())


if __name__ == '__main__':
    main()
