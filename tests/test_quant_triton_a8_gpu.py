"""specbench's Triton int8-activation kernels (w8a8_int8, w4a8) on the GPU against ``reference``, over every distinct
linear shape of Llama-3-8B/70B and M in {1, 2, 3, 16, 33, 64, 128}, with the committed table's configs (or the
heuristic), both M = 1 paths, and CUDA-graph replays (skipped without CUDA)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from specbench.quantization import QuantizedWeight, QuantLinear, get_scheme, quantize_rtn
from specbench.quantization.act_quant_kernel import quantize_per_token
from specbench.quantization.int8_kernel import A8Config
from specbench.quantization.tune import model_shapes

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
VARIANTS = [("w8a8_int8", -1), ("w4a8", -1), ("w4a8", 128)]
TOLERANCE = {8: 5e-3, 4: 1e-2}
MS = (1, 2, 3, 16, 33, 64, 128)
SHAPES = list(dict.fromkeys((k, n) for model in ("llama-3-8b", "llama-3-70b") for _, k, n in model_shapes(model)[0]))


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def layers(scheme: str, group: int, k: int, n: int, seed: int = 0) -> tuple[QuantLinear, QuantLinear]:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    qw = quantize_rtn(torch.randn(n, k, device="cuda", generator=gen) * 0.02, get_scheme(scheme), group)
    return QuantLinear(qw, None, "triton", torch.bfloat16), QuantLinear(qw, None, "reference", torch.bfloat16)


def test_activation_codes_are_those_of_a_true_division():
    """Per-token codes at near ties (x / s within an ulp or two of k + 1/2) and on an all-zero row, several programs
    a row, against torch's correctly rounded division."""
    steps = torch.tensor([0.0137, 0.3, 1.7e-3, 0.0913], device="cuda")[:, None]
    x = steps * torch.cat([torch.tensor([127.0, 0.0, 0.0]), torch.arange(-127, 126) + 0.5]).cuda()  # 256 wide
    x = torch.cat([x.repeat(1, 112), torch.zeros(1, 28672, device="cuda")])  # 28672 wide, like the down projection
    q, s = quantize_per_token(x)
    s_ref = (x.abs().amax(-1) / 127).clamp_min(torch.finfo(torch.float32).tiny)
    assert torch.equal(s, s_ref)
    assert torch.equal(q.float(), torch.round(x / s_ref[:, None]).clamp(-127, 127))
    assert not q[-1].any()


@pytest.mark.parametrize("scheme,group", VARIANTS)
@pytest.mark.parametrize("k,n", SHAPES)
def test_kernel_matches_reference_on_the_shipped_shapes(scheme, group, k, n):
    fast, ref = layers(scheme, group, k, n)
    assert fast.info["backend"] == "triton" and fast.info["kernel"].startswith("specbench Triton")
    gen = torch.Generator(device="cuda").manual_seed(1)
    for m in MS:
        x = torch.randn(m, k, device="cuda", generator=gen, dtype=torch.bfloat16)
        with torch.no_grad():
            err = rel(fast(x), ref(x))
        assert err < TOLERANCE[get_scheme(scheme).bits], (scheme, group, k, n, m, fast.kernel.config(m), err)
        assert int(fast.kernel.counters.abs().sum()) == 0, "split-K counters must be left at zero"


@pytest.mark.parametrize("scheme,group", VARIANTS)
@pytest.mark.parametrize("cfg", [A8Config("dot", 64, 256, split=2, BM=16), A8Config("dot", 64, 512, BM=64, stages=3),
                                 A8Config("dot", 128, 256, split=2, BM=64, warps=8, uneven=True)])
@pytest.mark.parametrize("scaled", [False, True])
def test_dot_tiles_of_several_groups(scheme, group, cfg, scaled):
    """K tiles of 256 and 512 inputs (for grouped weights, a dot and a group scale per group of 128, or with
    ``scaled`` the codes times QQQ's integer group scales and one sum) at M = 1..64."""
    if scaled and group == -1:
        pytest.skip("scaled codes are for grouped 4-bit weights")
    cfg = replace(cfg, scaled=scaled)
    fast, ref = layers(scheme, group, 4096, 1024)
    d = cfg.as_dict()
    d.pop("path")
    gen = torch.Generator(device="cuda").manual_seed(2)
    for m in (1, 17, 64):
        fast.kernel._chosen[m] = ([1, *d.values()], "test")
        x = torch.randn(m, 4096, device="cuda", generator=gen, dtype=torch.bfloat16)
        with torch.no_grad():
            err = rel(fast(x), ref(x))
        assert err < TOLERANCE[get_scheme(scheme).bits], (scheme, group, cfg, m, err)
        assert int(fast.kernel.counters.abs().sum()) == 0


@pytest.mark.parametrize("cfg", [A8Config("dot", 64, 128, BM=16, scaled=True),
                                 A8Config("dot", 128, 512, split=2, BM=64, warps=8, stages=3, scaled=True),
                                 A8Config("dot", 64, 256, split=3, BM=32, uneven=True, scaled=True)])
def test_codes_times_integer_scales_cover_every_byte(cfg):
    """Every 4-bit code times every integer group scale in [1, 16] (the bytes [-128, 112] the scaled dot path forms
    in registers), float32 activations: int8 products are exact, so the outputs equal reference's to float32
    rounding. The same weight with non-integer group scales runs the per-group float scaling."""
    n, k, group = 256, 4096, 128
    codes = (torch.arange(n * k, device="cuda").reshape(n, k) * 7 % 16 - 8).to(torch.int8)
    scales = (torch.arange(n * (k // group), device="cuda").reshape(n, k // group) * 5 % 16 + 1).float()
    channel = torch.rand(n, device="cuda") * 1e-2 + 1e-3
    gen = torch.Generator(device="cuda").manual_seed(3)
    for group_scales in (scales, scales + 0.5):
        qw = QuantizedWeight(get_scheme("w4a8"), codes, group_scales, group, channel_scale=channel)
        fast = QuantLinear(qw, None, "triton", torch.float32)
        ref = QuantLinear(qw, None, "reference", torch.float32)
        assert fast.kernel.gs.dtype == (torch.uint8 if group_scales is scales else torch.float16)
        d = cfg.as_dict()
        d.pop("path")
        for m in (1, 17, 64):
            fast.kernel._chosen[m] = ([1, *d.values()], "test")
            x = torch.randn(m, k, device="cuda", generator=gen)
            with torch.no_grad():
                err = rel(fast(x), ref(x))
            assert err < 1e-5, (cfg, m, group_scales is scales, err)


@pytest.mark.parametrize("scheme,group", VARIANTS)
@pytest.mark.parametrize("cfg", [A8Config("gemv", 32, 128, split=4), A8Config("gemv", 128, 128, split=2, warps=8),
                                 A8Config("dot", 64, 128, split=4, stages=4), A8Config("dot", 128, 64, split=1),
                                 A8Config("gemv", 64, 128, split=3, uneven=True),  # 10 or 11 K tiles each
                                 A8Config("dot", 64, 128, split=5, uneven=True)])
def test_both_one_row_paths_and_graph_replays(scheme, group, cfg):
    fast, ref = layers(scheme, group, 4096, 1024)
    d = cfg.as_dict()
    fast.kernel._chosen[1] = ([0 if d.pop("path") == "gemv" else 1, *d.values()], "test")
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        want = ref(x)
        assert rel(fast(x), want) < TOLERANCE[get_scheme(scheme).bits], (scheme, group, cfg)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = fast(x)
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
    assert rel(y, want) < TOLERANCE[get_scheme(scheme).bits], (scheme, group, cfg, "graph")
    assert int(fast.kernel.counters.abs().sum()) == 0
