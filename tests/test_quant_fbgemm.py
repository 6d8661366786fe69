"""The fbgemm backend: clean refusals without the package or a Hopper GPU, the w4a8_fp8 grid, the operand
conventions it packs (CPU), and its kernels against ``reference`` (GPU with fbgemm-gpu-genai, else skipped)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from specbench.quantization import QuantizedWeight, QuantLinear, UnsupportedBackendError, get_scheme, quantize_rtn
from specbench.quantization import kernel_table
from specbench.quantization.backends import BACKENDS, build_kernel, resolve
from specbench.quantization.backends.fbgemm import w4a16_operands
from specbench.quantization.qweight import FP8

FBGEMM = BACKENDS["fbgemm"]


class OnGPU(QuantizedWeight):
    """A weight that says it lives on a GPU, for the checks that come before any kernel runs."""

    device = property(lambda self: torch.device("cuda"))


def on_gpu(qw: QuantizedWeight) -> OnGPU:
    return OnGPU(**qw.__dict__)


def test_refuses_off_cuda_and_without_the_package_naming_the_fix(monkeypatch):
    qw = quantize_rtn(torch.randn(128, 256), get_scheme("w8a8_fp8"))
    with pytest.raises(UnsupportedBackendError, match="needs the weights on a CUDA device"):
        build_kernel(FBGEMM, qw, torch.bfloat16)
    monkeypatch.setattr(FBGEMM, "package", "no_such_fbgemm_gpu.experimental.gen_ai")
    with pytest.raises(UnsupportedBackendError, match=r"pip install specbench\[fbgemm\]`.*1\.6\.x for torch 2\.11"):
        build_kernel(FBGEMM, on_gpu(qw), torch.bfloat16)
    # auto skips it (a dotted package whose parent is missing) and falls back to the next of the order
    monkeypatch.setattr(kernel_table, "gpu_key", lambda device=None: "h200")
    assert kernel_table.backend_order("h200", "w8a8_fp8")[0][0] == "fbgemm"
    w4 = quantize_rtn(torch.randn(128, 256), get_scheme("w4a16"), 128)
    assert resolve("auto", on_gpu(w4), torch.bfloat16)[0] == "triton"
    fp8_w4 = quantize_rtn(torch.randn(128, 256), get_scheme("w4a8_fp8"), 128)
    with pytest.raises(UnsupportedBackendError, match="none of fbgemm can run w4a8_fp8"):
        resolve("auto", on_gpu(fp8_w4), torch.bfloat16)


def test_layout_limits_are_named(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    w = torch.randn(256, 512)
    assert FBGEMM.limits(on_gpu(quantize_rtn(w, get_scheme("w4a16"), 128)), torch.bfloat16) is None
    assert FBGEMM.limits(on_gpu(quantize_rtn(w, get_scheme("w4a16"), -1, sym=False)), torch.float16) is None
    assert "multiple of 128" in FBGEMM.limits(on_gpu(quantize_rtn(w, get_scheme("w4a16"), 64)), torch.bfloat16)
    assert "multiples of 128" in FBGEMM.limits(on_gpu(quantize_rtn(w[:200], get_scheme("w8a8_fp8"))), torch.bfloat16)
    assert "not torch.float32" in FBGEMM.limits(on_gpu(quantize_rtn(w, get_scheme("w8a8_fp8"))), torch.float32)
    fp8_w4 = quantize_rtn(w, get_scheme("w4a8_fp8"), 128)
    assert FBGEMM.limits(on_gpu(fp8_w4), torch.bfloat16) is None
    fp8_w4.scales = fp8_w4.scales * 0.75  # no longer powers of two
    assert "powers of two" in FBGEMM.limits(on_gpu(fp8_w4), torch.bfloat16)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    assert "sm90" in FBGEMM.limits(on_gpu(quantize_rtn(w, get_scheme("w8a8_fp8"))), torch.bfloat16)


def test_w4a8_fp8_rtn_makes_exact_fp8_products_within_half_a_step():
    w = torch.randn(64, 512) * torch.logspace(-2, 1, 512)  # groups of very different ranges
    qw = quantize_rtn(w, get_scheme("w4a8_fp8"), 128)
    mantissa, _ = torch.frexp(qw.scales)
    assert (mantissa == 0.5).all() and qw.scales.max() == 1.0 and qw.channel_scale is not None
    products = qw.codes.float() * qw.scales.repeat_interleave(128, 1)
    assert torch.equal(products.to(FP8).float(), products)  # code x group scale is exact in e4m3
    step = (qw.scales * qw.channel_scale[:, None]).repeat_interleave(128, 1)
    assert ((qw.dequantize() - w).abs() <= step / 2 + 1e-6).all()


def test_w4a16_operands_encode_the_canonical_weight():
    """Decode the packed pairs as the op reads them (low nibble first, signed) and apply W = q * s + z."""
    for sym, group in ((True, 128), (False, 128), (False, -1)):
        qw = quantize_rtn(torch.randn(32, 512), get_scheme("w4a16"), group, sym)
        pairs, scales, offsets = w4a16_operands(qw)
        assert pairs.dtype == torch.int8 and pairs.shape == (32, 256)
        byte = pairs.to(torch.int16) & 0xFF
        nibbles = torch.stack([byte & 0xF, byte >> 4], -1).reshape(32, 512)
        q = nibbles - 16 * (nibbles >= 8)
        g = qw.group_size
        w = q * scales.t().repeat_interleave(g, 1) + offsets.t().repeat_interleave(g, 1)
        torch.testing.assert_close(w, qw.dequantize(), atol=1e-6, rtol=1e-6)


def _fbgemm_ready() -> bool:
    try:
        return (torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)
                and importlib.util.find_spec("fbgemm_gpu.experimental.gen_ai") is not None)
    except (ImportError, OSError):
        return False


def _shipped_shapes() -> list[tuple[int, int]]:
    from specbench.quantization.tune import model_shapes

    return list(dict.fromkeys((k, n) for model in ("llama-3-8b", "llama-3-70b") for _, k, n in model_shapes(model)[0]))


# (scheme, group, sym, bound): 4-bit 1e-2, 8-bit 5e-3 (bf16 output rounding is ~1e-3)
# f8i4bf16_shuffled misses the 4-bit bound: rel. error 1.03e-2 at M = 2 on 28672x4096 (H200, 2026-12-01, fbgemm-gpu-genai
# 1.6.0; docs/quantization.md); strict, so a kernel or packing that reaches the bound shows up as a pass
W4A8_FP8_MISSES = pytest.mark.xfail(strict=True, reason="fbgemm's w4a8_fp8 kernel is ~1e-2 off the reference")
GPU_LAYOUTS = [("w4a16", 128, True, 1e-2), ("w4a16", 128, False, 1e-2), ("w4a16", -1, True, 1e-2),
               pytest.param("w4a8_fp8", 128, True, 1e-2, marks=W4A8_FP8_MISSES), ("w8a8_fp8", -1, True, 5e-3)]


@pytest.mark.skipif(not _fbgemm_ready(), reason="needs an sm90 GPU and fbgemm-gpu-genai")
@pytest.mark.parametrize("scheme,group,sym,bound", GPU_LAYOUTS)
def test_fbgemm_matches_reference_on_shipped_shapes(scheme, group, sym, bound):
    """rel. error vs reference at M in {1, 2, 16, 64, 128}; with fp8 activations the reference quantizes them as the
    kernel does, so the error must also stay under a quarter of what that fake quantization itself changes."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    worst = {}
    for i, (k, n) in enumerate(_shipped_shapes()):
        qw = quantize_rtn(torch.randn(n, k, device="cuda", generator=gen) * 0.02, get_scheme(scheme), group, sym)
        fast = QuantLinear(qw, None, "fbgemm", torch.bfloat16)
        w = qw.dequantize()
        for m in (1, 2, 16, 64, 128):
            x = torch.randn(m, k, device="cuda", generator=gen, dtype=torch.bfloat16)
            ref = QuantLinear(qw, None, "reference", torch.bfloat16).kernel(x).float()
            err = ((fast(x).float() - ref).norm() / ref.norm()).item()
            limit = bound
            if qw.scheme.act == "fp8":
                unquantized = x.float() @ w.t()
                limit = min(bound, 0.25 * ((ref - unquantized).norm() / unquantized.norm()).item())
            worst[k, n, m] = err
            assert err <= limit, (scheme, group, sym, k, n, m, err, limit)
        del fast, w
    print(scheme, group, sym, "worst rel. error", max(worst.values()))
    if kernel_table.gpu_key() == "h200" and scheme != "w4a16":
        assert resolve("auto", qw, torch.bfloat16)[0] == "fbgemm"
