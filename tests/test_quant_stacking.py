"""Stacked quantized projections (one linear for q/k/v) compute what the separate reference linears compute,
whether their weights are packed as one (layouts agree) or run as parts (e.g. different act-order perms)."""

from __future__ import annotations

import pytest
import torch

from specbench.quantization import QuantLinear, get_scheme, quantize_rtn
from specbench.quantization.linear import QuantParts, stacked_quant_linear
from specbench.quantization.qweight import stack

K = 64
ROWS = {"q_proj": 32, "k_proj": 16, "v_proj": 16}


def parts(seed: int = 0, scheme: str = "w4a16", group: int = 32, sym: bool = False, perms: bool = False):
    """q/k/v quantized weights of one layer; ``perms``: each with its own act-order permutation."""
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name, n in ROWS.items():
        qw = quantize_rtn(torch.randn(n, K, generator=gen), get_scheme(scheme), group, sym)
        if perms:
            qw.perm = torch.randperm(K, generator=gen)
        out[name] = qw
    return out


def separate(weights, bias, x):
    """The three reference linears, one by one, outputs side by side."""
    biases = [None] * 3 if bias is None else bias.split(list(ROWS.values()))
    return torch.cat([QuantLinear(qw, b, "reference", torch.float32)(x) for qw, b in zip(weights.values(), biases)], -1)


@pytest.mark.parametrize("scheme,group,sym", [("w4a16", 32, False), ("w4a16", 32, True), ("w4a8", -1, True),
                                              ("w8a8_int8", -1, True), ("w8a8_fp8", -1, True)])
def test_stacked_qkv_equals_the_three_reference_linears(scheme, group, sym):
    weights = parts(scheme=scheme, group=group, sym=sym)
    bias = torch.randn(sum(ROWS.values()))
    x = torch.randn(3, K)
    linear = stacked_quant_linear(weights, bias, "reference", torch.float32)
    assert isinstance(linear, QuantLinear) and linear.info["stacked"] == "q_proj+k_proj+v_proj"
    assert linear.out_features == sum(ROWS.values())
    torch.testing.assert_close(linear(x), separate(weights, bias, x), rtol=1e-5, atol=1e-5)


def test_shared_act_order_perm_stacks_and_different_perms_run_as_parts():
    weights = parts(perms=True)
    shared = parts(seed=1)
    for qw in shared.values():
        qw.perm = weights["q_proj"].perm  # one perm for all three (a GPTQ checkpoint quantized q/k/v together)
    x = torch.randn(2, 1, K)
    one = stacked_quant_linear(shared, None, "reference", torch.float32)
    assert isinstance(one, QuantLinear) and torch.equal(one.perm, weights["q_proj"].perm)
    torch.testing.assert_close(one(x), separate(shared, None, x), rtol=1e-5, atol=1e-5)
    split = stacked_quant_linear(weights, torch.ones(64), "reference", torch.float32)
    assert isinstance(split, QuantParts) and list(split.parts) == list(ROWS)
    torch.testing.assert_close(split(x), separate(weights, torch.ones(64), x), rtol=1e-5, atol=1e-5)
    assert split(x).shape == (2, 1, 64)


def test_layouts_that_differ_are_not_stacked():
    base = parts()
    assert stack(list(base.values())) is not None
    symmetric = {**base, "k_proj": parts(sym=True)["k_proj"]}  # zero points in q and v only
    other_group = {**base, "v_proj": parts(group=64)["v_proj"]}
    other_scheme = {**base, "v_proj": parts(scheme="w4a8", group=-1, sym=True)["v_proj"]}
    one_perm = {**base, "q_proj": parts(perms=True)["q_proj"]}
    for mixed in (symmetric, other_group, other_scheme, one_perm):
        assert stack(list(mixed.values())) is None
        x = torch.randn(2, K)
        torch.testing.assert_close(stacked_quant_linear(mixed, None, "reference", torch.float32)(x),
                                   separate(mixed, None, x), rtol=1e-5, atol=1e-5)
