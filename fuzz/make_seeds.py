#!/usr/bin/env python3
"""Writes the in-tree seed corpora (fuzz/corpus/<target>/), deterministically.
Run from anywhere: python3 fuzz/make_seeds.py. The files are committed; this
script only documents how they were made."""
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
             '--rope-interleaved', '--window', '8']]):
        put('fuzz_train_args', 'args%d' % i, '\0'.join(args).encode())


if __name__ == '__main__':
    main()
