"""Quantized linears against a float64 oracle, RTN error bounds, SmoothQuant, and the errors users see."""

from __future__ import annotations

import pytest
import torch

from specbench.quantization import (
    SCHEMES, QuantConfigError, QuantLinear, UnsupportedBackendError, build_quantizer, get_scheme, quantize_rtn,
    smooth,
)

LAYOUTS = [("w8a8_int8", -1, True), ("w8a8_fp8", -1, True), ("w8a16", -1, True), ("w4a16", 128, True),
           ("w4a16", 32, False), ("w4a16", -1, True), ("w4a8", -1, True), ("w4a8", 128, True)]


def gen(seed):
    return torch.Generator().manual_seed(seed)


def oracle_act(x: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token symmetric quantize-dequantize in float64, written independently of the library."""
    if kind == "none":
        return x
    qmax = 127.0 if kind == "int8" else 448.0
    scale = x.abs().max(dim=-1, keepdim=True).values / qmax
    q = x / scale
    q = q.round().clamp(-127, 127) if kind == "int8" else q.clamp(-448, 448).to(torch.float8_e4m3fn).double()
    return q * scale


def oracle_weight(qw) -> torch.Tensor:
    n, k = qw.shape
    g = qw.group_size
    w = qw.codes.double().reshape(n, k // g, g)
    if qw.zeros is not None:
        w = w - qw.zeros.double()[..., None]
    w = w * qw.scales.double()[..., None]
    if qw.channel_scale is not None:
        w = w * qw.channel_scale.double()[:, None, None]
    w = w.reshape(n, k)
    if qw.perm is not None:
        out = torch.zeros_like(w)
        out[:, qw.perm] = w
        w = out
    return w


@pytest.mark.parametrize("scheme,group,sym", LAYOUTS)
def test_reference_linear_matches_float64_oracle(scheme, group, sym):
    w = torch.randn(48, 256, generator=gen(0))
    qw = quantize_rtn(w, get_scheme(scheme), group, sym)
    qw.perm = torch.randperm(256, generator=gen(1))  # act-order input permutation, as GPTQ desc_act gives
    bias = torch.randn(48, generator=gen(2))
    layer = QuantLinear(qw, bias, "reference", torch.float32)
    x = torch.randn(2, 5, 256, generator=gen(3)) * torch.linspace(0.1, 4, 256)  # uneven channels
    expected = oracle_act(x.double(), qw.scheme.act) @ oracle_weight(qw).t() + bias.double()
    got = layer(x)
    assert got.shape == (2, 5, 48) and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-4)
    # the oracle is sharp: dropping the activation quantization of an a8 scheme is caught
    if qw.scheme.act != "none":
        assert (x.double() @ oracle_weight(qw).t() + bias.double() - got.double()).abs().max() > 1e-3


@pytest.mark.parametrize("scheme,group,sym", LAYOUTS)
def test_rtn_error_within_half_a_step(scheme, group, sym):
    w = torch.randn(64, 256, generator=gen(4)) * torch.rand(64, 1, generator=gen(5))
    w[3] = 0.0  # an all-zero row must not divide by zero
    qw = quantize_rtn(w, get_scheme(scheme), group, sym)
    err = (w - qw.dequantize()).abs()
    g = qw.group_size
    step = qw.scales.repeat_interleave(g, dim=1)
    if qw.channel_scale is not None:
        step = step * qw.channel_scale[:, None]
    if qw.scheme.weight == "fp8":  # 3 mantissa bits: half an ulp is 2^-4 relative; subnormals 2^-10 of the scale
        bound = torch.maximum(w.abs() * 2**-4, step * 2**-10)
    else:
        bound = step / 2
    assert torch.all(err <= bound * (1 + 1e-5) + 1e-12)
    assert torch.all(err[3] == 0)
    # each group's largest weight lands on the end of the grid, so the step is no coarser than it must be
    codes = qw.codes.float().reshape(64, -1, g)[torch.arange(64) != 3]
    if qw.scheme.weight == "int4" and not sym:
        assert codes.min() >= 0 and codes.max() <= 15 and torch.all(codes.amax(-1) - codes.amin(-1) >= 14)
    elif qw.channel_scale is None:
        top = {"int4": 7, "int8": 127, "fp8": 448}[qw.scheme.weight]
        assert torch.all(codes.abs().amax(-1) >= top) and codes.abs().max() <= top + (qw.scheme.weight == "int4")


def test_w4a8_group_scales_are_qqq_integers():
    qw = quantize_rtn(torch.randn(32, 512, generator=gen(6)), get_scheme("w4a8"), 128)
    assert qw.channel_scale is not None and torch.equal(qw.scales, qw.scales.round())
    assert qw.scales.min() >= 1 and qw.scales.max() <= 16
    w8 = qw.codes.float() * qw.scales.repeat_interleave(128, dim=1)  # what the int8 GEMM multiplies
    assert w8.abs().max() <= 128


def test_asymmetric_int4_beats_symmetric_on_shifted_weights():
    w = torch.rand(32, 128, generator=gen(7))  # all positive: symmetric wastes half the grid
    sym = (w - quantize_rtn(w, get_scheme("w4a16"), 32, True).dequantize()).abs().mean()
    asym = (w - quantize_rtn(w, get_scheme("w4a16"), 32, False).dequantize()).abs().mean()
    assert asym < 0.7 * sym


def test_smoothing_keeps_function_and_helps_int8():
    norm_w = torch.nn.Parameter(torch.ones(256))
    norm = torch.nn.Module()
    norm.weight = norm_w
    lin = torch.nn.Linear(256, 64, bias=False)
    torch.nn.init.normal_(lin.weight, generator=gen(8))
    x = torch.randn(32, 256, generator=gen(9))
    x[:, :4] *= 60.0  # outlier channels, as in LLM activations
    before = (x * norm.weight) @ lin.weight.t()
    w8a8 = lambda w: QuantLinear(quantize_rtn(w, get_scheme("w8a8_int8")), None, "reference", torch.float32)  # noqa: E731
    q_before = w8a8(lin.weight)(x * norm.weight)
    smooth(norm, [lin], x.abs().amax(0), alpha=0.5)
    with torch.no_grad():
        after = (x * norm.weight) @ lin.weight.t()
        q_after = w8a8(lin.weight)(x * norm.weight)
    torch.testing.assert_close(after, before, rtol=1e-4, atol=1e-3)
    assert (q_after - before).abs().mean() < 0.5 * (q_before - before).abs().mean()


def test_unknown_scheme_and_bad_layouts_are_refused():
    with pytest.raises(QuantConfigError, match="w4a16"):  # the message lists the known schemes
        build_quantizer("w3a16", "reference", {})
    with pytest.raises(QuantConfigError, match="group sizes"):
        quantize_rtn(torch.randn(8, 256), get_scheme("w8a8_int8"), 128)
    with pytest.raises(QuantConfigError, match="symmetric"):
        quantize_rtn(torch.randn(8, 256), get_scheme("w4a8"), 128, sym=False)


def test_impossible_backend_combinations_name_what_can_run():
    with pytest.raises(UnsupportedBackendError, match="does not implement w8a8_int8.*reference: w8a8_int8"):
        build_quantizer("w8a8_int8", "torch", {})
    with pytest.raises(UnsupportedBackendError, match="unknown backend 'cutlass'"):
        build_quantizer("w4a16", "cutlass", {})
    qw = quantize_rtn(torch.randn(64, 128), get_scheme("w4a16"))
    for backend in ("torch", "gemlite", "marlin"):
        with pytest.raises(UnsupportedBackendError, match="CUDA device.*torch: w4a16, w8a8_fp8"):
            QuantLinear(qw, None, backend, torch.bfloat16)


def test_every_scheme_has_a_reference_path():
    assert set(SCHEMES) >= {"w8a8_int8", "w8a8_fp8", "w4a16", "w4a8"}
    for name, scheme in SCHEMES.items():
        assert build_quantizer(name, "reference", {}).info()["scheme"] == name
        assert scheme.default_group in scheme.group_sizes


def test_partials_keep_the_lead_dims_and_the_act_order_permutation(monkeypatch):
    """``QuantLinear.partials`` (a compiled forward's split-K partials, ``transformer.settle`` adds them): the input
    permuted as ``forward`` permutes it, the partials shaped [split, *lead, N], their sum ``forward``'s output; none
    in eager code or with a bias."""
    qw = quantize_rtn(torch.randn(24, 64, generator=gen(0)), get_scheme("w4a16"), 32, True)
    qw.perm = torch.randperm(64, generator=gen(1))
    linear = QuantLinear(qw, None, "reference", torch.float32)
    kernel = linear.kernel

    def partials(x, row_reduced):  # two splits where the kernel leaves them (M > 1)
        return torch.stack([kernel(x), torch.zeros_like(kernel(x))]) if x.shape[0] > 1 else None

    kernel.partials = partials
    x = torch.randn(2, 3, 64, generator=gen(2))
    assert linear.partials(x) is None  # eager
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    parts = linear.partials(x)
    assert parts.shape == (2, 2, 3, 24)
    torch.testing.assert_close(parts.sum(0), linear(x))
    assert linear.partials(x[:1, :1]) is None  # the kernel's own choice (M = 1)
    linear.bias = torch.nn.Parameter(torch.ones(24), requires_grad=False)
    assert linear.partials(x) is None
