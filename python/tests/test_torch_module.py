"""mhsa.torch.MultiheadAttention against torch.nn.MultiheadAttention:
state_dict() loads unchanged, outputs, returned weights and gradients agree
to 1e-4 with masks, key padding, need_weights/average_attn_weights,
is_causal and batch_first=False; a training loop follows the same loss
curve; and F.scaled_dot_product_attention where this PyTorch has it."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mhsa.torch as mt
from conftest import rel_err

TOL = 1e-4
E, H, B, T = 32, 4, 3, 10


def pair(bias=True, batch_first=True, seed=0):
    torch.manual_seed(seed)
    ref = torch.nn.MultiheadAttention(E, H, bias=bias, batch_first=batch_first)
    if bias:   # non-zero biases so that their gradients mean something
        with torch.no_grad():
            ref.in_proj_bias.normal_(0, 0.1)
            ref.out_proj.bias.normal_(0, 0.1)
    ours = mt.MultiheadAttention(E, H, bias=bias, batch_first=batch_first)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def run(mod, x, **kw):
    x = x.detach().clone().requires_grad_()
    y, w = mod(x, x, x, **kw)
    return x, y, w


def compare(ref, ours, x, kw_ref, kw_ours=None):
    xr, yr, wr = run(ref, x, **kw_ref)
    xo, yo, wo = run(ours, x, **(kw_ref if kw_ours is None else kw_ours))
    assert rel_err(yo.detach(), yr.detach()) < TOL
    if wr is None:
        assert wo is None
    else:
        assert wo.shape == wr.shape and rel_err(wo, wr) < TOL
    dy = torch.randn_like(yr)
    (yr * dy).sum().backward()
    (yo * dy).sum().backward()
    assert rel_err(xo.grad, xr.grad) < TOL
    for (n, p), (n2, p2) in zip(ref.named_parameters(),
                                ours.named_parameters()):
        assert n == n2 and rel_err(p2.grad, p.grad) < TOL, n
        p.grad = p2.grad = None


def test_state_dict_names_match():
    ref, ours = pair()
    assert list(ref.state_dict()) == list(ours.state_dict())
    ref, ours = pair(bias=False)
    assert list(ref.state_dict()) == list(ours.state_dict())


@pytest.mark.parametrize("bias", [True, False])
def test_plain_and_weights(bias):
    ref, ours = pair(bias=bias)
    x = torch.randn(B, T, E)
    compare(ref, ours, x, {})
    compare(ref, ours, x, {"need_weights": False})
    compare(ref, ours, x, {"average_attn_weights": False})


def test_masks_and_key_padding():
    ref, ours = pair(seed=1)
    x = torch.randn(B, T, E)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    compare(ref, ours, x, {"attn_mask": causal})
    additive = torch.randn(T, T).masked_fill(causal, float("-inf"))
    compare(ref, ours, x, {"attn_mask": additive})
    kpm = torch.zeros(B, T, dtype=torch.bool)
    kpm[1, 6:] = True
    kpm[2, 2:] = True
    compare(ref, ours, x, {"key_padding_mask": kpm})
    compare(ref, ours, x, {"key_padding_mask": kpm, "attn_mask": additive,
                           "average_attn_weights": False})
    fkpm = torch.zeros(B, T).masked_fill(kpm, float("-inf"))
    compare(ref, ours, x, {"key_padding_mask": fkpm})
    # is_causal (PyTorch 2's hint that attn_mask is the causal mask): the
    # same result as the boolean causal mask.
    compare(ref, ours, x, {"attn_mask": causal}, {"is_causal": True})


def test_batch_first_false():
    ref, ours = pair(batch_first=False, seed=2)
    compare(ref, ours, torch.randn(T, B, E), {})


def test_refusals():
    _, ours = pair()
    x = torch.randn(B, T, E)
    with pytest.raises(ValueError, match="self-attention"):
        ours(x, x.clone(), x)
    kpm = torch.zeros(B, T, dtype=torch.bool)
    kpm[0, 3] = True
    with pytest.raises(ValueError, match="on the right"):
        ours(x, x, x, key_padding_mask=kpm)
    with pytest.raises(ValueError, match="attn_mask"):
        ours(x, x, x, attn_mask=torch.zeros(B * H, T, T))
    with pytest.raises(ValueError, match=r"query: shape \(3, 10, 16\)"):
        y = torch.randn(B, T, 16)
        ours(y, y, y)


def test_training_follows_pytorch():
    ref, ours = pair(seed=3)
    torch.manual_seed(4)
    xs = [torch.randn(4, T, E) for _ in range(20)]
    target = torch.randn(4, T, E)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    curves = []
    for mod, kw in ((ref, {"attn_mask": causal}), (ours, {"is_causal": True})):
        opt = torch.optim.Adam(mod.parameters(), lr=1e-2)
        losses = []
        for x in xs:
            y, _ = mod(x, x, x, need_weights=False, **kw)
            loss = F.mse_loss(y, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        curves.append(np.array(losses))
    assert curves[0][-1] < curves[0][0]   # it learns
    assert np.abs(curves[0] - curves[1]).max() < 1e-4, curves


def test_inference_mode_matches_autograd():
    _, ours = pair(seed=5)
    x = torch.randn(B, T, E)
    with torch.no_grad():
        y0, w0 = ours(x, x, x)
    y1, w1 = ours(x, x, x)
    assert torch.equal(y0, y1.detach()) and torch.equal(w0, w1)


@pytest.mark.skipif(not hasattr(F, "scaled_dot_product_attention"),
                    reason="this PyTorch (< 2.0) has no "
                    "F.scaled_dot_product_attention")
def test_scaled_dot_product_attention_gqa():
    # GQA against SDPA with K/V heads repeated; weights from the module.
    ours = mt.MultiheadAttention(E, H, n_kv_heads=2, causal=True)
    x = torch.randn(B, T, E)
    y, _ = ours(x, x, x, need_weights=False)
    w, b = ours.in_proj_weight, ours.in_proj_bias
    dh = E // H
    qkv = x @ w.T + b
    q = qkv[..., :E].view(B, T, H, dh).transpose(1, 2)
    k = qkv[..., E:E + 2 * dh].view(B, T, 2, dh).transpose(1, 2)
    v = qkv[..., E + 2 * dh:].view(B, T, 2, dh).transpose(1, 2)
    k, v = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
    ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    yr = ours.out_proj(ctx.transpose(1, 2).reshape(B, T, E))
    assert rel_err(y.detach(), yr.detach()) < TOL


def test_parameter_changes_of_every_kind_reach_the_computation():
    # Each way of changing a parameter without autograd (.data, in-place
    # under no_grad, copy_, .data assignment) must be what the next forward
    # computes with, as torch.nn.MultiheadAttention's does.
    ref, ours = pair(seed=3)
    x = torch.randn(B, T, E)
    changes = [
        lambda m: m.in_proj_weight.data.mul_(0.5),
        lambda m: m.out_proj.weight.data.add_(0.25),
        lambda m: m.in_proj_bias.data.fill_(0.125),
        lambda m: m.out_proj.bias.data.copy_(torch.linspace(-1, 1, E)),
    ]

    def no_grad(f):
        def g(m):
            with torch.no_grad():
                f(m)
        return g

    changes += [
        no_grad(lambda m: m.in_proj_weight.mul_(1.5)),
        no_grad(lambda m: m.out_proj.weight.copy_(
            torch.eye(E) + 0.01 * torch.arange(E * E).reshape(E, E) / E)),
        no_grad(lambda m: m.in_proj_bias.zero_()),
    ]

    def assign(m):
        m.in_proj_weight.data = m.in_proj_weight.data.flip(0).clone()
    changes.append(assign)
    for i, change in enumerate(changes):
        ours(x, x, x)   # computes (and caches) with the weights before
        change(ref)
        change(ours)
        with torch.no_grad():
            yr, _ = ref(x, x, x)
            yo, _ = ours(x, x, x)
        assert rel_err(yo, yr) < TOL, i
        # and the autograd path the same
        yo, _ = ours(x, x, x)
        assert rel_err(yo.detach(), yr) < TOL, i


def test_two_forwards_then_one_backward():
    # Two calls before one backward (the weights unchanged between them):
    # both forwards' gradients, as torch's.
    ref, ours = pair(seed=4)
    x1, x2 = torch.randn(B, T, E), torch.randn(B, T, E)
    for m in (ref, ours):
        (m(x1, x1, x1)[0].sum() + 2 * m(x2, x2, x2)[0].sum()).backward()
    for (n, p), (_, p2) in zip(ref.named_parameters(),
                               ours.named_parameters()):
        assert rel_err(p2.grad, p.grad) < TOL, n
