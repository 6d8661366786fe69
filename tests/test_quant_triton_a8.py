"""specbench's Triton int8-activation kernels (w8a8_int8, w4a8) and per-token activation quantization under Triton's
CPU interpreter, against ``reference``; their shape limits, table keys and heuristics.

The interpreter cases run in one subprocess (``TRITON_INTERPRET`` is read at import). int8 x int8 products are
exact, so with float32 outputs the kernels must equal ``reference`` to float32 rounding; 16-bit outputs add the
output's rounding (the interpreter's float -> bf16 conversion truncates, so bf16 shows about twice the GPU's).
"""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest
import torch

from specbench.quantization import QuantizedWeight, get_scheme, kernel_table, quantize_rtn
from specbench.quantization.backends import BACKENDS
from specbench.quantization.int8_kernel import A8Config, check_shape
from tests.conftest import run_in_interpreter

INTERPRETED = textwrap.dedent("""
    import json, tempfile
    from pathlib import Path
    import torch
    from specbench.model import load_model
    from specbench.quantization import (
        QuantLinear, QuantizedWeight, build_quantizer, get_scheme, kernel_table, quantize_rtn,
    )
    from specbench.quantization.act_quant_kernel import quantize_per_token
    from specbench.quantization.backends import BACKENDS
    from specbench.quantization.backends.triton_a8 import A8Triton, a8_mm_partials
    from specbench.quantization.formats import read_compressed
    from specbench.quantization.int8_kernel import A8Config as C
    from specbench.quantization.qweight import fake_quant_act
    from tests.test_quant_checkpoints import ct_packed_tensors, random_int4, write_checkpoint
    from tests.test_quant_model import logits

    BACKENDS["triton"].cuda_only = False  # the interpreter runs the kernels on CPU tensors
    bf16, fp16, fp32 = torch.bfloat16, torch.float16, torch.float32

    def rel(a, b):
        return ((a.float() - b.float()).norm() / b.float().norm()).item()

    # per-token quantization: the codes and scales fake_quant_act means, one program a row and several
    gen = torch.Generator().manual_seed(0)
    for m, k, block in ((1, 300, None), (3, 300, 64), (17, 96, None), (2, 1030, 256)):  # 1, 5, 1, 5 programs a row
        x = torch.randn(m, k, generator=gen) * 3
        x[0, :6] = torch.tensor([2.5, -0.5, 1.5, 0.0, 3.5, 127.0])  # scale 1: ties round half to even
        if m > 1:
            x[1] = 0.0  # an all-zero row: scale at float32's tiny, codes 0
        for dtype in (fp32, bf16):
            q, s = quantize_per_token(x.to(dtype), block)
            xf = x.to(dtype).float()
            s_ref = (xf.abs().amax(-1) / 127).clamp_min(torch.finfo(torch.float32).tiny)
            assert q.dtype == torch.int8 and torch.equal(s, s_ref), (m, k, block, dtype)
            assert torch.equal(q.float(), torch.round(xf / s_ref[:, None]).clamp(-127, 127)), (m, k, block, dtype)
            assert torch.equal(q.float() * s[:, None], fake_quant_act(xf, "int8")), (m, k, block, dtype)
            assert q[0, :6].tolist() == [2, 0, 2, 0, 4, 127] and (m == 1 or not q[1].any())
    # near ties: x / s within an ulp or two of k + 1/2, where a quotient off by one ulp rounds the other way
    # (tests/test_quant_triton_a8_gpu.py checks the same on the GPU)
    steps = torch.tensor([0.0137, 0.3, 1.7e-3, 0.0913])[:, None]
    x = steps * torch.cat([torch.tensor([127.0]), torch.arange(-127, 126) + 0.5])
    q, s = quantize_per_token(x, 64)
    assert torch.equal(q.float(), torch.round(x / s[:, None]).clamp(-127, 127))

    def run(qw, m, dtype, cfg=None, seed=0):
        gen = torch.Generator().manual_seed(seed)
        fast = QuantLinear(qw, None, "triton", dtype)
        if cfg is not None:
            d = cfg.as_dict()
            fast.kernel._chosen[m] = ([0 if d.pop("path") == "gemv" else 1, *d.values()], "test")
        x = torch.randn(m, qw.shape[1], generator=gen).to(dtype)
        y = fast(x)
        assert y.dtype == dtype and y.shape == (m, qw.shape[0])
        assert int(fast.kernel.counters.abs().sum()) == 0, "split-K counters must be left at zero"
        k = fast.kernel
        config, _ = k.config(m)
        if config[3] > 1 and dtype == fp32:  # the sum left to the caller: every split's partial, counters untouched
            parts = a8_mm_partials(x, k.weight, k.ws, k.gs, k.counters, k.bits, k.group, config)
            assert parts.dtype == fp32 and parts.shape == (config[3], m, qw.shape[0])
            assert int(k.counters.abs().sum()) == 0
            assert rel(parts.sum(0), y) < 1e-5 and rel(parts[0], y) > 0.05
        return rel(y, QuantLinear(qw, None, "reference", fp32)(x.float()))

    torch.manual_seed(0)
    w = torch.randn(40, 512)
    float_groups = QuantizedWeight(get_scheme("w4a8"), torch.randint(-8, 8, (40, 512), dtype=torch.int8),
                                   torch.rand(40, 8) * 0.1 + 0.01, 64)  # group 64, float group scales, no channel
    weights = {"w8a8": quantize_rtn(w, get_scheme("w8a8_int8")), "w4a8 ch": quantize_rtn(w, get_scheme("w4a8"), -1),
               "w4a8 g128": quantize_rtn(w, get_scheme("w4a8"), 128), "w4a8 g64 float": float_groups}
    assert weights["w4a8 g128"].channel_scale is not None
    cases = [  # (weight, M, config or None for the heuristic)
        ("w8a8", 1, C("gemv", 16, 128, split=2)), ("w8a8", 1, C("dot", 32, 64, split=4)), ("w8a8", 3, None),
        ("w8a8", 17, C("dot", 16, 128, split=2, BM=16)), ("w8a8", 33, None),
        ("w4a8 ch", 1, C("gemv", 32, 256, split=2)), ("w4a8 ch", 3, C("dot", 16, 64, split=2)), ("w4a8 ch", 17, None),
        ("w4a8 g128", 1, C("gemv", 16, 64, split=2)), ("w4a8 g128", 1, None), ("w4a8 g128", 3, C("dot", 32, 128)),
        ("w4a8 g128", 17, C("dot", 16, 64, split=4, BM=32)),
        ("w4a8 g64 float", 1, C("gemv", 64, 32, split=2)), ("w4a8 g64 float", 17, C("dot", 16, 64, split=2)),
        ("w8a8", 3, C("dot", 32, 64, split=3, uneven=True)), ("w4a8 g128", 1, C("gemv", 16, 64, split=3, uneven=True)),
        ("w4a8 ch", 17, C("dot", 16, 64, split=2, BM=32, uneven=True)),  # uneven K ranges; equal on their code
        # dot K tiles of several groups, one dot and one group scale per group
        ("w4a8 g64 float", 17, C("dot", 16, 128, split=2)), ("w4a8 g64 float", 3, C("dot", 32, 256)),
        ("w4a8 g128", 17, C("dot", 16, 256, split=2, BM=32)),
        # codes times QQQ's integer group scales, one int32 sum (float group scales: the per-group scaling)
        ("w4a8 g128", 3, C("dot", 32, 128, scaled=True)),
        ("w4a8 g128", 17, C("dot", 16, 256, split=2, BM=32, scaled=True)),
        ("w4a8 g128", 33, C("dot", 16, 64, split=3, BM=32, uneven=True, scaled=True)),
        ("w4a8 g64 float", 17, C("dot", 16, 128, split=2, scaled=True)),
        # sm_90's heuristic for per-channel weights (K tiles of 256, 4 stages), on a small GPU so that K splits
        ("w8a8", 17, kernel_table.heuristic_a8(40, 512, 512, 17, 8, sms=8, hopper=True)),
        ("w4a8 ch", 33, kernel_table.heuristic_a8(40, 512, 512, 33, 4, sms=8, hopper=True)),
    ]
    assert all(c.BK == 256 and c.split == 2 and c.stages == 4 for _, _, c in cases[-2:])
    for name, m, cfg in cases:
        qw = weights[name]
        exact = run(qw, m, fp32, cfg)
        assert exact < 1e-5, (name, m, cfg, exact)
        for dtype in (bf16, fp16):
            err = run(qw, m, dtype, cfg, seed=1)
            assert err < (5e-3 if name == "w8a8" else 1e-2), (name, m, cfg, dtype, err)
    # negative control: nibbles in the wrong order are caught by the same tolerance
    qw = weights["w4a8 g128"]
    broken = A8Triton(qw, None)
    broken.weight = (broken.weight >> 4) | (broken.weight << 4)
    x = torch.randn(3, 512)
    assert rel(broken(x), QuantLinear(qw, None, "reference", fp32)(x)) > 0.1

    # tune's check of a candidate (CPU here): RTN weight, fresh activations, M and M - 1
    from specbench.quantization.tune import A8
    for scheme, group, m, cfg, dtype in (("w8a8_int8", 256, 1, C("gemv", 16, 128, split=2), torch.bfloat16),
                                         ("w4a8", 128, 1, C("gemv", 32, 64), torch.float16),
                                         ("w4a8", 256, 17, C("dot", 16, 64, split=2), torch.bfloat16)):
        tuner = A8(scheme, "cpu", dtype)
        assert tuner.launch(cfg, tuner.inputs(m, 256), tuner.weight(32, 256, group, 0), group,
                            torch.zeros(64, dtype=torch.int32)).dtype == dtype
        errors = tuner.errors(cfg, 32, 256, group, m)
        assert len(errors) == (2 if cfg.path == "dot" else 1) and max(errors) < tuner.tolerance, (scheme, cfg, errors)

    # published layouts -> canonical -> the triton kernels: compressed-tensors int4 with int8 per-token activations
    gen = torch.Generator().manual_seed(1)
    for group in (128, 256):
        q, z, s, g_idx, dense = random_int4(48, 256, group, gen, False)
        qw = read_compressed(ct_packed_tensors(q, z, s, g_idx, False), get_scheme("w4a8"))
        x = torch.randn(3, 256, generator=gen)
        want = fake_quant_act(x, "int8") @ dense.t()
        for m in (1, 3):
            assert rel(QuantLinear(qw, None, "triton", fp32)(x[:m]), want[:m]) < 1e-5, (group, m)

    # a compressed-tensors int-quantized W8A8 checkpoint: every layer on the triton kernel, logits equal reference's
    args = {"num_bits": 8, "type": "int", "symmetric": True, "dynamic": False}
    group = {"targets": ["re:.*_proj$"], "weights": {**args, "strategy": "channel"},
             "input_activations": {**args, "strategy": "token", "dynamic": True}}
    cfg = {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"g": group},
           "ignore": ["lm_head"]}
    def make(gen, n, k):
        s = torch.rand(n, 1, generator=gen).bfloat16() * 0.01 + 0.001
        codes = torch.randint(-127, 128, (n, k), generator=gen, dtype=torch.int8)
        return {"weight": codes, "weight_scale": s}, codes.float() * s.float()
    path, config, _ = write_checkpoint(Path(tempfile.mkdtemp()), cfg, make)
    out = {}
    for backend in ("triton", "reference"):
        model = load_model(str(path), dtype=fp32, quantizer=build_quantizer("auto", backend, config))
        layer = model.get_submodule("model.layers.0.self_attn.qkv")
        assert layer.info["scheme"] == "w8a8_int8" and layer.info["backend"] == backend
        out[backend] = logits(model)
    assert rel(out["triton"], out["reference"]) < 1e-4, rel(out["triton"], out["reference"])
    print("ok")
""")


@pytest.mark.slow  # the Triton interpreter: ~25 s on two cores
def test_kernels_act_quant_and_checkpoint_layouts_match_reference_in_the_interpreter():
    assert run_in_interpreter(INTERPRETED) == "ok"


def test_a_layer_takes_narrow_tiles_its_split_k_counters_cover():
    """The tune tables gemv tiles of BN = 8 (faster on the 8B per-channel shapes at M = 1): a layer runs them, and
    refuses, naming its counters, a split config whose output tiles outnumber them."""
    from specbench.quantization.backends.triton_a8 import A8Triton

    layer = A8Triton(quantize_rtn(torch.randn(64, 1024), get_scheme("w4a8"), -1), None)
    for split in (1, 2):
        cfg = A8Config("gemv", 8, 256, split=split, warps=8, stages=2)
        layer._entries, layer._chosen = {"1": {"config": cfg.as_dict()}}, {}
        assert layer.config(1)[0] == [0, 8, 256, split, 16, 8, 2, 0, 0]
    layer.counters = layer.counters[:4]  # 64 / 8 = 8 output tiles
    layer._chosen = {}
    with pytest.raises(ValueError, match="splits K over 8 output tiles at M = 1, more than the layer's 4 counters"):
        layer.config(1)


def test_shapes_the_kernels_cannot_run_name_the_constraint():
    assert "multiples of 32" in check_shape(64, 496, 496, 4, A8Config("gemv", 32, 64))  # 4-bit chunks of 32
    assert "multiples of 32" in check_shape(64, 1024, 1024, 4, A8Config("gemv", 32, 16))
    assert "3 equal ranges; uneven=True" in check_shape(64, 1024, 1024, 8, A8Config("dot", 32, 128, split=3))
    assert check_shape(64, 1024, 1024, 8, A8Config("dot", 32, 128, split=3, uneven=True)) is None
    assert "fewer than split=9" in check_shape(64, 1024, 1024, 8, A8Config("dot", 32, 128, split=9, uneven=True))
    assert "must divide the group size 128" in check_shape(64, 1024, 128, 4, A8Config("gemv", 32, 256))
    assert check_shape(64, 1024, 128, 4, A8Config("dot", 32, 256)) is None  # two groups a K tile: a dot each
    assert "or be a multiple of it" in check_shape(64, 960, 96, 4, A8Config("dot", 32, 64))
    assert "BK >= 32" in check_shape(64, 1024, 1024, 8, A8Config("dot", 32, 16))
    assert check_shape(64, 1024, 1024, 4, A8Config("dot", 32, 32)) is None  # one 32-input chunk: one wgmma K step
    assert check_shape(64, 1024, 128, 4, A8Config("dot", 32, 128, split=2)) is None
    for scheme_bits, group, path in ((4, 1024, "dot"), (8, 1024, "dot"), (4, 128, "gemv")):
        assert "needs grouped 4-bit weights on the dot path" in check_shape(
            64, 1024, group, scheme_bits, A8Config(path, 32, 128, scaled=True))
    assert check_shape(64, 1024, 128, 4, A8Config("dot", 32, 256, scaled=True)) is None
    assert "too large for exact int32 sums" in check_shape(64, 2**18, 2**18, 8, A8Config("gemv", 32, 512))
    triton = BACKENDS["triton"]
    assert "fp8" not in triton.schemes and {"w4a16", "w8a8_int8", "w4a8"} <= set(triton.schemes)
    odd = QuantizedWeight(get_scheme("w4a8"), torch.zeros(64, 100, dtype=torch.int8), torch.ones(64, 1), 100)
    assert "must be multiples of 32 (4-bit codes" in triton.limits(odd, torch.bfloat16)
    assert "bf16/fp16/fp32" in triton.limits(quantize_rtn(torch.randn(64, 256), get_scheme("w8a8_int8")), torch.int8)


def test_w4a8_bytes_hold_inputs_i_and_i_plus_16_of_each_32():
    from specbench.quantization.backends.triton_a8 import pack_nibbles

    codes = torch.randint(-8, 8, (3, 64), dtype=torch.int8)
    packed = pack_nibbles(codes)
    assert packed.shape == (3, 32) and packed.dtype == torch.uint8
    low = ((packed & 0xF).to(torch.int8) ^ 8) - 8  # two's complement nibbles back to int8
    high = ((packed >> 4).to(torch.int8) ^ 8) - 8
    for c in range(2):
        assert torch.equal(low[:, 16 * c:16 * c + 16], codes[:, 32 * c:32 * c + 16])
        assert torch.equal(high[:, 16 * c:16 * c + 16], codes[:, 32 * c + 16:32 * c + 32])


def test_qqq_group_scales_travel_as_bytes_for_the_scaled_dot_path():
    from specbench.quantization.backends.triton_a8 import pack

    qqq = quantize_rtn(torch.randn(64, 512), get_scheme("w4a8"), 128)  # integer group scales in [1, 16]
    weight, ws, gs = pack(qqq)
    assert gs.dtype == torch.uint8 and gs.shape == (4, 64) and torch.equal(gs.float(), qqq.scales.t())
    assert torch.equal(ws, qqq.channel_scale / 16)
    halves = QuantizedWeight(get_scheme("w4a8"), qqq.codes, qqq.scales + 0.5, 128, channel_scale=qqq.channel_scale)
    assert pack(halves)[2].dtype == torch.float16
    wide = QuantizedWeight(get_scheme("w4a8"), qqq.codes, qqq.scales * 2, 128, channel_scale=qqq.channel_scale)
    assert pack(wide)[2].dtype == torch.float16  # the largest group scale is 16: 32 is no QQQ scale


def test_a8_table_keys_and_heuristics():
    assert kernel_table.shape_key(8192, 8192, 8192, "w8a8_int8") == "w8a8_int8:8192x8192:channel"
    assert kernel_table.shape_key(8192, 8192, 128) == "8192x8192:g128"  # w4a16 keys stay unprefixed
    cfg, source = kernel_table.choose(None, 1024, 8192, 128, 1, "w4a8")
    assert source == "heuristic" and (cfg.path, cfg.BN, cfg.BK) == ("gemv", 128, 128) and cfg.split > 1
    cfg, source = kernel_table.choose(None, 1024, 8192, 8192, 1, "w8a8_int8")
    assert (cfg.path, cfg.BN, cfg.BK) == ("gemv", 32, 512) and 132 <= 32 * cfg.split <= 2 * 132 * 2
    cfg, _ = kernel_table.choose(None, 8192, 8192, 8192, 33, "w8a8_int8")
    assert cfg.path == "dot" and cfg.BM == 64 and check_shape(8192, 8192, 8192, 8, cfg) is None
    big, _ = kernel_table.choose(None, 8192, 8192, 8192, 4096, "w4a8")  # prefill never splits K
    assert big.split == 1
    assert kernel_table.backend_order(None, "w8a8_int8")[0][0] == "triton"
    assert kernel_table.backend_order(None, "w4a8")[0][:2] == ("marlin", "triton")  # Marlin's QQQ where no table


def test_tune_candidates_fit_every_shipped_shape():
    from specbench.quantization.tune import kernel_for, model_shapes

    for model in ("llama-3-8b", "llama-3-70b"):
        for _, k, n in model_shapes(model)[0]:
            for scheme, group in (("w8a8_int8", k), ("w4a8", k), ("w4a8", 128)):
                bits = get_scheme(scheme).bits
                for m in (1, 16, 64):
                    cands = kernel_for(scheme).candidates(n, k, group, m)
                    assert cands[0] == kernel_table.heuristic_a8(n, k, group, m, bits, hopper=True) and len(cands) >= 8
                    assert all(check_shape(n, k, group, bits, c) is None for c in cands), (scheme, n, k, m)
                    assert {c.path for c in cands} == ({"gemv", "dot"} if m == 1 else {"dot"})
                    scaled = {c for c in cands if c.scaled}  # grouped 4-bit dot tiles of several groups, each both ways
                    assert scaled == ({replace(c, scaled=True) for c in cands if c.path == "dot" and c.BK > group}
                                      if scheme == "w4a8" and group == 128 else set()), (scheme, n, k, m)
