"""specbench's Triton w4a16 kernel under Triton's CPU interpreter, its config table, and ``quant.backend=auto``.

The interpreter cases run in one subprocess (``TRITON_INTERPRET`` is read at import). The ``dot`` path runs
with fp16 activations there: the interpreter's ``tl.dot`` mis-reads bfloat16 operands made by a cast (bf16 is
covered on the GPU by ``tune``'s check of every table entry and ``tests/test_quant_gpu.py``).
"""

from __future__ import annotations

import argparse
import json
import textwrap
from dataclasses import replace

import pytest
import torch

from specbench.quantization import (
    QuantizedWeight, QuantLinear, UnsupportedBackendError, get_scheme, kernel_table, quantize_rtn,
)
from specbench.quantization.backends import BACKENDS, resolve
from specbench.quantization.backends.triton_layer import PATHS
from specbench.quantization.int4_kernel import KernelConfig, check_shape, kernel_order
from specbench.quantization.int8_kernel import A8Config
from tests.conftest import run_in_interpreter

INTERPRETED = textwrap.dedent("""
    import torch
    from specbench.quantization import QuantLinear, get_scheme, quantize_rtn
    from specbench.quantization.backends import BACKENDS
    from specbench.quantization.backends.triton_int4 import Int4Triton, w4a16_mm_partials
    from specbench.quantization.formats import read_awq, read_compressed, read_gptq
    from specbench.quantization.int4_kernel import KernelConfig as C
    from tests.test_quant_checkpoints import awq_tensors, ct_packed_tensors, gptq_tensors, random_int4

    BACKENDS["triton"].cuda_only = False  # the interpreter runs the kernel on CPU tensors
    W4A16 = get_scheme("w4a16")
    bf16, fp16 = torch.bfloat16, torch.float16

    def rel(a, b):
        return ((a.float() - b.float()).norm() / b.float().norm()).item()

    def check(qw, m, dtype, cfg=None, seed=0):
        gen = torch.Generator().manual_seed(seed)
        fast = QuantLinear(qw, None, "triton", dtype)
        if cfg is not None:
            d = cfg.as_dict()
            fast.kernel._chosen[m] = ([0 if d.pop("path") == "gemv" else 1, *d.values()], "test")
        ref = QuantLinear(qw, None, "reference", torch.float32)
        x = torch.randn(m, qw.shape[1], generator=gen).to(dtype)
        y = fast(x)
        assert y.dtype == dtype and y.shape == (m, qw.shape[0])
        assert int(fast.kernel.counters.abs().sum()) == 0, "split-K counters must be left at zero"
        k = fast.kernel
        config, _ = k.config(m)
        if config[3] > 1:  # the same launch with the sum left to the caller: every split's partial, counters untouched
            parts = w4a16_mm_partials(x, k.packed, k.scales, k.zeros, k.counters, k.group, config)
            assert parts.dtype == torch.float32 and parts.shape == (config[3], m, qw.shape[0])
            assert int(k.counters.abs().sum()) == 0
            assert rel(parts.sum(0), y) < 1e-2 and rel(parts[0], y) > 0.05
        return rel(y, ref(x.float()))

    torch.manual_seed(0)
    w = torch.randn(40, 512)
    cases = [  # (group, sym, M, dtype, config or None for the heuristic)
        (128, True, 1, bf16, C("gemv", 32, 128, split=2)),
        (64, False, 1, bf16, C("gemv", 16, 256, split=2)),
        (-1, True, 1, bf16, None),
        (32, False, 1, fp16, C("gemv", 64, 512)),
        (128, True, 3, fp16, C("dot", 32, 128, split=2, DEQ=0)),
        (128, False, 17, fp16, C("dot", 16, 128, split=4, BM=32, DEQ=1)),
        (64, False, 5, fp16, C("dot", 32, 64, split=2, DEQ=2)),
        (-1, False, 7, fp16, C("dot", 16, 128, split=2, DEQ=2)),
        (128, False, 17, fp16, C("dot", 16, 128, split=4, BM=32, DEQ=3)),  # plane dots, the plain conversion
        (-1, True, 1, fp16, C("dot", 32, 256, split=2, DEQ=3)),
        (128, False, 17, fp16, C("dot", 64, 128, split=4, BM=32, DEQ=4)),  # the weight as the first operand
        (-1, True, 2, fp16, C("dot", 64, 256, split=2, DEQ=4)),
        (128, False, 17, fp16, C("dot", 64, 128, split=4, BM=32, DEQ=5)),  # the planes joined: one dot per tile
        (-1, True, 2, fp16, C("dot", 64, 256, split=2, DEQ=5)),
        (128, False, 5, fp16, C("dot", 64, 128, split=2, DEQ=6)),  # off + q planes, zero point via sum x
        (128, True, 1, fp16, C("dot", 64, 128, split=2, DEQ=6)),
        (-1, False, 3, fp16, C("dot", 64, 256, split=2, DEQ=6)),
        (128, False, 1, fp16, C("dot", 64, 128, split=2, DEQ=7)),  # one group per MMA column
        (256, True, 1, fp16, C("dot", 64, 128, DEQ=7)),  # two K tiles per group, one column
        (128, False, 1, fp16, C("dot", 64, 128, split=4, DEQ=7, stages=5)),  # four splits, five stages
        (128, False, 1, fp16, C("dot", 64, 128, split=3, DEQ=7, uneven=True)),  # uneven splits: 1, 1 and 2 groups
        (128, False, 5, fp16, C("dot", 64, 128, split=3, DEQ=5, uneven=True)),  # 1, 1 and 2 K tiles
        (128, False, 5, fp16, C("dot", 64, 128, split=3, DEQ=5, uneven=True, scales_ahead=True)),  # next tile's
        (128, True, 17, fp16, C("dot", 64, 128, split=2, BM=32, DEQ=5, scales_ahead=True)),  # scales a step early
        (128, False, 17, fp16, C("dot", 64, 128, split=2, BM=32, DEQ=9)),  # the planes scaled, the product added
        (256, True, 1, fp16, C("dot", 64, 128, split=3, DEQ=9, uneven=True)),  # two K tiles per group
        (64, False, 1, bf16, C("gemv", 16, 128, split=3, uneven=True)),
        (128, True, 3, fp16, C("dot", 64, 128, split=2, DEQ=6, uneven=True)),  # equal splits, per-program ranges
        (128, True, 30, fp16, C("dot", 64, 128, split=2, BM=16, DEQ=5, scales_ahead=True)),  # two row tiles per column
        (128, False, 30, fp16, C("dot", 64, 128, split=3, BM=16, DEQ=9, uneven=True)),  # tile, K split
        (-1, True, 33, fp16, None),
        (256, True, 130, fp16, None),  # past the split-K range: one split
    ]
    for group, sym, m, dtype, cfg in cases:
        qw = quantize_rtn(w, W4A16, group, sym)
        err = check(qw, m, dtype, cfg)
        assert err < 1e-2, (group, sym, m, dtype, cfg, err)
        # negative control: the wrong zero points must be caught by the same tolerance
        if not sym:
            qw.zeros = (qw.zeros + 3) % 16
            broken = Int4Triton(qw, dtype, None)
            qw.zeros = (qw.zeros - 3) % 16
            x = torch.randn(m, 512).to(dtype)
            assert rel(broken(x), QuantLinear(qw, None, "reference", torch.float32)(x.float())) > 0.1

    # K/8 not a multiple of 16: the storage's blocks of words shrink (8 words here)
    w192 = torch.randn(24, 192)
    for cfg, m in ((C("gemv", 16, 64), 1), (C("dot", 16, 64, split=3, DEQ=2), 3)):
        assert check(quantize_rtn(w192, W4A16, 64, False), m, fp16, cfg) < 1e-2, cfg

    # published layouts -> canonical -> the triton kernel; act-order weights permute the input
    gen = torch.Generator().manual_seed(1)
    readers = {
        "gptq v1": lambda q, z, s, g: read_gptq(gptq_tensors(q, z, s, g, v1=True), W4A16, v1=True),
        "gptq v2": lambda q, z, s, g: read_gptq(gptq_tensors(q, z, s, g, v1=False), W4A16, v1=False),
        "awq": lambda q, z, s, g: read_awq(awq_tensors(q, z, s, g), W4A16),
        "compressed-tensors": lambda q, z, s, g: read_compressed(ct_packed_tensors(q, z, s, g, True), W4A16),
    }
    for name, read in readers.items():
        for act_order in ((False, True) if name.startswith("gptq") else (False,)):
            for asym in (False, True):
                q, z, s, g_idx, dense = random_int4(48, 256, 64, gen, asym, act_order)
                qw = read(q, z, s, g_idx)
                assert (qw.perm is not None) == act_order
                x = torch.randn(3, 256, generator=gen)
                y = QuantLinear(qw, None, "triton", fp16)(x.half())
                assert rel(y, x @ dense.t()) < 1e-2, (name, act_order, asym)
                y1 = QuantLinear(qw, None, "triton", bf16)(x[:1].bfloat16())
                assert rel(y1, x[:1] @ dense.t()) < 1e-2, (name, act_order, asym, "M=1")
    print("ok")
""")


@pytest.mark.slow  # the Triton interpreter: ~15 s on two cores
def test_kernel_and_checkpoint_layouts_match_reference_in_the_interpreter():
    assert run_in_interpreter(INTERPRETED) == "ok"


def test_shapes_the_kernel_cannot_run_name_the_constraint():
    assert "multiple of 8" in check_shape(64, 100, 100, KernelConfig("gemv", 32, 128))
    assert "fewer than split=9" in check_shape(64, 1024, 128, KernelConfig("dot", 32, 128, split=9, uneven=True))
    assert "3 equal ranges; uneven=True" in check_shape(64, 1024, 128, KernelConfig("dot", 32, 128, split=3))
    assert check_shape(64, 1024, 128, KernelConfig("dot", 32, 128, split=3, uneven=True)) is None  # 3, 3 and 2 tiles
    uneven_cols = KernelConfig("dot", 64, 128, split=3, DEQ=7, uneven=True)
    assert "at most BM=16" in check_shape(64, 8192, 128, uneven_cols)  # 22 groups
    assert check_shape(64, 8192, 128, KernelConfig("dot", 64, 128, split=7, DEQ=7, uneven=True)) is None  # 9 or 10
    assert "runs with 4 warps, not 8" in check_shape(8192, 8192, 128, KernelConfig("dot", 128, 128, 4, BM=64, warps=8,
                                                                                    stages=3, DEQ=9))
    assert check_shape(8192, 8192, 128, KernelConfig("dot", 128, 128, 4, BM=64, warps=4, stages=3, DEQ=9)) is None
    assert "must divide one another" in check_shape(64, 1536, 384, KernelConfig("dot", 32, 256))
    assert "block of 128 inputs" in check_shape(64, 1024, 128, KernelConfig("dot", 32, 64))
    assert "multiple of 128 (the packing's block" in check_shape(64, 960, 960, KernelConfig("dot", 32, 64))
    assert "must not exceed the group size" in check_shape(64, 1024, 64, KernelConfig("dot", 32, 128, DEQ=2))
    assert "must not exceed the group size" in check_shape(64, 1024, 128, KernelConfig("dot", 32, 256, DEQ=3))
    assert "must be >= 128" in check_shape(64, 1024, 64, KernelConfig("dot", 32, 64, DEQ=3))
    assert "per-channel weights are scaled once" in check_shape(64, 1024, 1024, KernelConfig("dot", 64, 128, DEQ=9))
    assert "must be even" in check_shape(63, 1024, 128, KernelConfig("dot", 64, 128, DEQ=9))
    assert "scales_ahead" in check_shape(64, 1024, 1024, KernelConfig("dot", 64, 128, DEQ=5, scales_ahead=True))
    assert "scales_ahead" in check_shape(64, 1024, 128, KernelConfig("dot", 64, 128, DEQ=9, scales_ahead=True))
    assert check_shape(64, 1024, 128, KernelConfig("dot", 32, 128, split=2, DEQ=2)) is None
    two_scales = quantize_rtn(torch.randn(64, 256), get_scheme("w4a16"), 128)
    two_scales.channel_scale = torch.ones(64)
    assert "QQQ" in BACKENDS["triton"].limits(two_scales, torch.bfloat16)
    assert "bf16/fp16" in BACKENDS["triton"].limits(quantize_rtn(torch.randn(64, 256), get_scheme("w4a16")),
                                                    torch.float32)


def test_committed_h200_table_covers_the_shipped_shapes():
    from specbench.quantization.tune import model_shapes

    table = kernel_table.load("h200")
    assert table["gpu"] == "NVIDIA H200" and table["torch"] and table["triton"] and table["command"]
    for model in ("llama-3-8b", "llama-3-70b"):
        shapes, _ = model_shapes(model)
        for _, k, n in shapes:
            for group in (128, k):
                entries = table["entries"][kernel_table.shape_key(n, k, group)]
                assert "1" in entries and "16" in entries and "64" in entries
                for entry in entries.values():
                    assert entry["rel_error"] <= 1e-2
                    assert check_shape(n, k, group, KernelConfig(**entry["config"])) is None
                cfg, source = kernel_table.choose("h200", n, k, group, 1)
                assert source == "table h200" and cfg == KernelConfig(**entries["1"]["config"])
    for key, entries in table["entries"].items():  # every w4a16 entry, those of weights with zero points included
        scheme, n, k, group, _ = kernel_table.parse_key(key)
        if scheme != "w4a16":
            continue
        for entry in entries.values():
            assert entry["rel_error"] <= 1e-2 and check_shape(n, k, group, KernelConfig(**entry["config"])) is None
    assert any(key.endswith(":zp") for key in table["entries"])


def test_every_committed_entry_runs_in_a_layer_at_every_m_of_its_bucket():
    """What the tune tables, the layers run: each entry of every scheme, at the lowest and highest M its bucket serves,
    passes the layer's own checks (its split-K counters among them) and comes from the table, not the heuristic."""
    from specbench.quantization.backends.triton_layer import TritonLayer

    for gpu in ("h200", "h100"):  # the H100's own entries and the H200's it runs
        for key in kernel_table.load(gpu)["entries"]:
            scheme, n, k, group, zero_points = kernel_table.parse_key(key)
            entries = kernel_table.tuned_entries(gpu, n, k, group, scheme, zero_points)  # zp: over the symmetric's
            layer = TritonLayer(n, k, group, scheme, gpu, torch.device("cpu"), zero_points=zero_points)
            buckets = sorted(map(int, entries))
            for low, high in zip([0, *buckets], buckets):
                for m in {low + 1, high}:
                    assert layer.config(m)[1] == kernel_table.table_label(gpu, entries[str(high)]["table"]), (key, m)


def test_a_table_key_parses_back_to_its_weight():
    for scheme, n, k, group, zp in [("w4a16", 10240, 8192, 128, False), ("w4a16", 4096, 14336, 14336, True),
                                    ("w4a8", 57344, 8192, 128, False), ("w8a8_int8", 6144, 4096, 4096, False)]:
        key = kernel_table.shape_key(n, k, group, scheme, zp)
        assert kernel_table.parse_key(key) == (scheme, n, k, group, zp), key


def test_lookup_buckets_and_heuristic_fallback():
    cfg, source = kernel_table.choose("h200", 8192, 8192, 128, 9)  # next bucket up: 16
    entry = kernel_table.load("h200")["entries"]["8192x8192:g128"]["16"]
    assert source == "table h200" and cfg == KernelConfig(**entry["config"])
    big, _ = kernel_table.choose("h200", 8192, 8192, 128, 4096)  # prefill never splits K
    assert big.split == 1 and big.path == "dot"
    cfg, source = kernel_table.choose("h200", 384, 2048, 128, 1)  # no entry for this shape: sm_90's heuristic
    assert source == "heuristic" and cfg.DEQ == 7 and check_shape(384, 2048, 128, cfg) is None
    cfg, source = kernel_table.choose("h200", 384, 2048, 128, 1, hopper=False)  # the generic one
    assert source == "heuristic" and cfg.path == "gemv" and check_shape(384, 2048, 128, cfg) is None
    cfg, source = kernel_table.choose(None, 384, 2048, 64, 24)  # no table for this GPU
    assert source == "heuristic" and cfg.path == "dot" and cfg.BM == 32 and cfg.BK == 64
    assert check_shape(384, 2048, 64, cfg) is None


def test_an_untuned_weight_runs_the_nearest_tuned_weights_entries():
    """Qwen3-8B's gate/up (24576 x 4096) and down (4096 x 12288) have no W4A16 entry; they run Llama-3-8B's
    (28672 x 4096, 4096 x 14336: within ``NEAR`` in N and K), and the layer says whose. A weight of another group kind,
    or farther away, does not borrow."""
    entries = {"28672x4096:g128": {"1": {"config": {"path": "gemv"}}}, "24576x4096:channel": {"1": {}},
               "4096x14336:g128": {"16": {"config": {}}}, "4096x14336:g128:zp": {"16": {"config": {"BN": 1}}},
               "w4a8:24576x4096:g128": {"1": {}}, "14336x4096:g128": {"1": {}}}
    assert kernel_table.nearest_entries(entries, 24576, 4096, 128) == {"1": {"config": {"path": "gemv"},
                                                                             "from": "28672x4096"}}
    assert kernel_table.nearest_entries(entries, 4096, 12288, 128)["16"]["from"] == "4096x14336"
    assert kernel_table.nearest_entries(entries, 4096, 12288, 128, zero_points=True)["16"]["config"] == {"BN": 1}
    assert kernel_table.nearest_entries(entries, 24576, 4096, 4096) == {}  # per-channel: no 4096-wide neighbour
    assert kernel_table.nearest_entries(entries, 8192, 8192, 128) == {}  # 2x away in K
    assert kernel_table.nearest_entries(entries, 28672, 4096, 128) == {}  # not itself; 14336 is 2x away
    for n, k, near in [(24576, 4096, "28672x4096"), (4096, 12288, "4096x14336")]:
        for m in (1, 16, 64):
            cfg, source = kernel_table.choose("h200", n, k, 128, m)
            assert source == f"table h200, {near}'s entry" and check_shape(n, k, 128, cfg) is None, (n, k, m)
        assert kernel_table.describe_source("h200", n, k, 128).endswith(f"{near}'s entries (no entry of its own)")
    assert kernel_table.describe_source("h200", 384, 2048, 128) == "heuristic (no table entry)"


HOPPER_HEURISTIC = textwrap.dedent("""
    import torch
    from specbench.quantization import QuantLinear, get_scheme, quantize_rtn, kernel_table
    from specbench.quantization.backends import BACKENDS

    BACKENDS["triton"].cuda_only = False  # the interpreter runs the kernel on CPU tensors
    torch.manual_seed(0)
    worst = 0.0
    for n, k, group, sym in ((128, 1536, 128, True), (64, 1024, 128, False), (128, 1024, -1, True)):
        qw = quantize_rtn(torch.randn(n, k) * 0.02, get_scheme("w4a16"), group, sym)
        fast, ref = QuantLinear(qw, None, "triton", torch.float16), QuantLinear(qw, None, "reference", torch.float32)
        g = k if group == -1 else group
        for m in (1, 2, 17, 33, 65):
            cfg = kernel_table.heuristic(n, k, g, m, sms=8, hopper=True)  # a small GPU: splits and uneven ranges
            d = cfg.as_dict()
            fast.kernel._chosen[m] = ([0 if d.pop("path") == "gemv" else 1, *d.values()], "hopper heuristic")
            x = torch.randn(m, k).half()
            y, want = fast(x).float(), ref(x.float())
            worst = max(worst, ((y - want).norm() / want.norm()).item())
            assert int(fast.kernel.counters.abs().sum()) == 0
    print(f"{worst:.1e}")
""")


@pytest.mark.slow  # the Triton interpreter: ~20 s on two cores
def test_hopper_heuristic_configs_match_reference_in_the_interpreter():
    assert float(run_in_interpreter(HOPPER_HEURISTIC)) < 1e-2


def test_hopper_heuristic_takes_the_tables_shape_of_entry():
    shapes = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (10240, 8192), (57344, 8192), (8192, 28672),
              (4608, 3584), (3584, 18944), (896, 896), (18944, 3584)]  # the Llama-3 shapes, then Qwen2.5-7B's, 0.5B's
    for n, k in shapes:
        for group in (128, 256, k):
            if k % group:
                continue
            for m in (1, 2, 7, 16, 31, 64, 100, 128):
                cfg = kernel_table.heuristic(n, k, group, m, hopper=True)
                assert check_shape(n, k, group, cfg) is None and cfg.path == "dot" and cfg.BK == 128, (n, k, m, cfg)
                bm = min(64, max(16, 1 << (m - 1).bit_length()))  # the power of two >= M in [16, 64]
                assert cfg.DEQ == (7 if m == 1 and group != k else 5) and cfg.BM == bm
                assert cfg.split & (cfg.split - 1) == 0 or cfg.split == k // 128
    # the table's own M = 1 entries for the 70B o and gate/up, and the 8B down: the same tile and split
    for n, k, split in ((8192, 8192, 4), (57344, 8192, 4), (4096, 14336, 8)):
        cfg = kernel_table.heuristic(n, k, 128, 1, hopper=True)
        assert (cfg.BN, cfg.split, cfg.DEQ) == (128, split, 7)
    # groups under 128 have no plane modes: the generic heuristic
    assert kernel_table.heuristic(4096, 4096, 64, 1, hopper=True) == kernel_table.heuristic(4096, 4096, 64, 1)
    assert kernel_table.choose(None, 4096, 4608, 128, 16, hopper=True)[0].DEQ == 5  # an untuned shape on an sm_90
    assert kernel_table.choose(None, 4096, 4608, 128, 16)[0].DEQ == 0  # elsewhere: the generic heuristic


def test_an_h100_runs_its_own_entries_else_the_h200_ones_and_says_so():
    assert kernel_table.table_of("h100") == "h100" and kernel_table.table_of("h200") == "h200"
    assert kernel_table.table_of(None) is None
    own = json.loads((kernel_table.TABLES / "h100.json").read_text())
    assert own["gpu"].startswith("NVIDIA H100") and "--gpu h100" in own["command"] and own["entries"]
    for scheme, group, config_cls in [("w4a16", 128, KernelConfig), ("w4a16", 8192, KernelConfig),
                                      ("w4a8", 128, A8Config)]:
        rows = own["entries"].get(kernel_table.shape_key(8192, 8192, group, scheme), {})
        buckets = sorted(map(int, kernel_table.tuned_entries("h100", 8192, 8192, group, scheme)))
        for m in (1, 4, 16, 32, 64):  # its own buckets over the H200's, the rest the H200's
            cfg, source = kernel_table.choose("h100", 8192, 8192, group, m, scheme)
            bucket = str(next(b for b in buckets if b >= m))
            if bucket in rows:
                assert source == "table h100" and cfg == config_cls(**rows[bucket]["config"])
            else:
                h200 = kernel_table.choose("h200", 8192, 8192, group, m, scheme)[0]
                assert source == "table h200 (for h100)" and cfg == h200
    assert kernel_table.backend_order("h100", "w4a16")[1] == "table h200 (for h100)"  # its table has no order
    assert kernel_table.describe_source("h100", 8192, 8192, 8192) == "table h200 (for h100)"  # per-channel
    assert kernel_table.describe_source("h100", 8192, 8192, 128, "w4a8") == "table h100"  # every bucket its own
    assert kernel_table.describe_source("h100", 4096, 4096, 128, "w4a8") == "table h100 + table h200 (for h100)"
    assert kernel_table.describe_source("h200", 8192, 8192, 128, "w4a8") == "table h200"


def test_a_gpu_table_layers_over_its_siblings_per_bucket(tmp_path, monkeypatch):
    entry = lambda bm: {"config": KernelConfig("dot", 64, 128, 2, BM=bm, DEQ=5).as_dict(), "ms": 0.01}
    (tmp_path / "h200.json").write_text(json.dumps({"gpu": "NVIDIA H200", "backends": {"w4a16": ["triton"]},
                                                    "entries": {"64x256:g128": {"16": entry(16), "64": entry(64)}}}))
    (tmp_path / "h100.json").write_text(json.dumps({"gpu": "NVIDIA H100", "entries": {
        "64x256:g128": {"64": entry(32)}, "32x256:g128": {"16": entry(16)}}}))
    monkeypatch.setattr(kernel_table, "TABLES", tmp_path)
    monkeypatch.setattr(kernel_table, "TABLES_OF", {"h100": ("h100", "h200"), "h200": ("h200",), "h800": ()})
    kernel_table.load.cache_clear()
    try:
        table = kernel_table.load("h100")
        assert table["gpu"] == "NVIDIA H100" and table["backends_table"] == "h200"
        assert table["entries"]["64x256:g128"] == {"16": {**entry(16), "table": "h200"},
                                                   "64": {**entry(32), "table": "h100"}}
        assert kernel_table.choose("h100", 64, 256, 128, 64) == (KernelConfig(**entry(32)["config"]), "table h100")
        assert kernel_table.choose("h100", 64, 256, 128, 8) == (KernelConfig(**entry(16)["config"]),
                                                                "table h200 (for h100)")
        assert kernel_table.choose("h200", 64, 256, 128, 64) == (KernelConfig(**entry(64)["config"]), "table h200")
        assert kernel_table.describe_source("h100", 32, 256, 128) == "table h100"
        assert kernel_table.backend_order("h100", "w4a16") == (("triton",), "table h200 (for h100)")
        assert kernel_table.load("h800") == {}
    finally:
        kernel_table.load.cache_clear()


def test_heuristic_tiles_are_powers_of_two_for_any_k():
    # K = 384, 2304 (Gemma-2-2B's hidden size), 896: a multiple of 128 that 512 does not divide once gave BK = 384
    for k in (384, 896, 2304, 4096):
        for group in (32, 128, k):
            for m in (1, 2, 33):
                cfg = kernel_table.heuristic(96, k, group, m)
                assert cfg.BK & (cfg.BK - 1) == 0 and check_shape(96, k, group, cfg) is None, (k, group, m, cfg)
    assert "BK=384" in check_shape(96, 384, 384, KernelConfig("gemv", 64, 384))
    refusal = check_shape(64, 288, 96, kernel_table.heuristic(64, 288, 96, 1))  # the schemes refuse group 96 first
    assert "group size 96" in refusal and "power of two" in refusal


def test_weights_with_zero_points_take_their_own_entries_else_the_symmetric_ones(monkeypatch):
    from specbench.quantization.backends.triton_int4 import Int4Triton

    sym = {"16": {"config": KernelConfig("dot", 64, 128, 2, BM=16, DEQ=5).as_dict()},
           "32": {"config": KernelConfig("dot", 64, 128, 2, BM=32, DEQ=5).as_dict()}}
    own = {"16": {"config": KernelConfig("dot", 64, 128, 2, BM=16, DEQ=6).as_dict()}}
    table = {"entries": {"64x256:g128": sym, "64x256:g128:zp": own, "32x256:g128": sym}}
    monkeypatch.setattr(kernel_table, "load", lambda gpu: table)
    assert kernel_table.shape_key(64, 256, 128, zero_points=True) == "64x256:g128:zp"
    assert kernel_table.tuned_entries("h200", 64, 256, 128, zero_points=True) == {"16": own["16"], "32": sym["32"]}
    assert kernel_table.tuned_entries("h200", 64, 256, 128) == sym
    assert kernel_table.tuned_entries("h200", 32, 256, 128, zero_points=True) == sym  # none of its own
    assert kernel_table.describe_source("h200", 64, 256, 128, zero_points=True) == "table h200 (zero points)"
    assert "symmetric" in kernel_table.describe_source("h200", 32, 256, 128, zero_points=True)
    w = torch.randn(64, 256)
    layers = {s: Int4Triton(quantize_rtn(w, get_scheme("w4a16"), 128, s), torch.float16, "h200") for s in (True, False)}
    deq = lambda c: KernelConfig(PATHS[c[0]], *c[1:]).DEQ  # noqa: E731
    assert {s: deq(layer.config(16)[0]) for s, layer in layers.items()} == {True: 5, False: 6}
    assert layers[False].config(32)[0][4] == 32  # the bucket it lacks: the symmetric entry's BM


def test_partials_go_to_a_norm_only_where_it_reads_few_enough_a_row():
    """A compiled forward leaves split-K sums to the consumer at M > 1 and at most 8 splits; a norm (one program a
    row) takes at most ``DEFER_MAX_ROW`` partials a row: the 8B's o/down at 8 splits (they gained), not the 70B's
    (its verify of 8 rows ran 0.2 ms slower on an H100, session 48); SiLU x up (elementwise) takes any of them."""
    from specbench.quantization.backends.triton_layer import leaves_partials

    assert leaves_partials(8, 4096, 31, row_reduced=True)  # 8B o / down, bucket 32
    assert not leaves_partials(8, 8192, 8, row_reduced=True)  # 70B o / down, bucket 16
    assert leaves_partials(4, 8192, 32, row_reduced=True) and leaves_partials(8, 8192, 8, row_reduced=False)
    assert not leaves_partials(8, 4096, 1, row_reduced=False)  # M = 1 sums in the kernel
    assert not leaves_partials(12, 4096, 16, row_reduced=False) and not leaves_partials(1, 4096, 16, False)


@pytest.mark.parametrize("scheme,gpu", [("w4a16", "h200"), ("w4a8", "h200"), ("w4a16", None)])
def test_config_lookup_traces_whole_under_torch_compile(scheme, gpu):
    """``engine.compile`` traces each linear's per-M config choice into the graph (fullgraph): the lookup must
    read no file while traced (it did, through the table's loader, and compile failed on the H200), and once per
    shape: a trace that read the layer's cache of configs was traced again when the cache filled, on the H100 inside
    a CUDA graph's capture, where Inductor's first launch of a new kernel cannot time its configs."""
    from torch._dynamo.testing import CompileCounter

    from specbench.quantization.backends.triton_layer import TritonLayer

    layer = TritonLayer(8192, 8192, 128, scheme, gpu, torch.device("cpu"))
    counter = CompileCounter()
    traced = torch.compile(lambda x: x * layer.config(x.shape[0])[0][1], fullgraph=True, dynamic=False,
                           backend=counter)
    for m in (1, 24):
        for _ in range(3):
            assert traced(torch.ones(m, 2)).flatten()[0].item() == layer.config(m)[0][1]
    assert counter.frame_count == 2  # one trace per M


def test_auto_backend_is_reference_off_a_gpu_and_recorded():
    qw = quantize_rtn(torch.randn(32, 256), get_scheme("w4a16"), 128)
    assert resolve("auto", qw, torch.float32)[0] == "reference"
    layer = QuantLinear(qw, None, "auto", torch.float32)
    assert layer.info["backend"] == "reference" and layer.info["backend_choice"].startswith("auto")
    assert QuantLinear(qw, None, "reference", torch.float32).info["backend_choice"] == "given"
    assert kernel_table.backend_order("h200", "w4a16")[0][0] == "triton"
    assert kernel_table.backend_order(None, "w8a8_int8") == (("triton", "gemlite"), "default order")


class OnH200(QuantizedWeight):
    """A weight that says it lives on a GPU, for auto's choice without one."""

    device = property(lambda self: torch.device("cuda"))


def test_auto_backend_on_a_gpu_follows_the_table_and_says_what_to_install(monkeypatch):
    monkeypatch.setattr(kernel_table, "gpu_key", lambda device=None: "h200")
    monkeypatch.setattr(BACKENDS["gemlite"], "package", "a_package_that_is_not_installed")
    qw = quantize_rtn(torch.randn(32, 256), get_scheme("w4a16"), 128)
    name, how = resolve("auto", OnH200(**qw.__dict__), torch.bfloat16)
    assert name == "triton" and how == "auto (table h200, h200)"
    int8 = OnH200(**quantize_rtn(torch.randn(32, 256), get_scheme("w8a8_int8")).__dict__)
    assert resolve("auto", int8, torch.bfloat16) == ("triton", "auto (table h200, h200)")
    monkeypatch.setattr(BACKENDS["triton"], "package", "a_package_that_is_not_installed")
    with pytest.raises(UnsupportedBackendError, match="quant.backend=auto: none of triton, gemlite can run w8a8_int8"):
        resolve("auto", int8, torch.bfloat16)


def test_gpu_key_names_the_gpu_of_cuda_tensors_only(monkeypatch):
    """A tensor on the CPU of a machine with an H200 runs no table (Triton's interpreter runs the kernels there)."""
    def name(device=None):
        if device is not None and torch.device(device).type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return "NVIDIA H200"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", name)
    assert kernel_table.gpu_key(torch.device("cuda", 0)) == "h200" and kernel_table.gpu_key() == "h200"
    assert kernel_table.gpu_key(torch.device("cpu")) is None


def test_auto_backend_on_a_gpu_without_a_table_prefers_marlin_then_specbench(monkeypatch):
    """An A100 (the papers' GPU) has no committed table: Marlin (GPTQModel), SpecMQuant's kernel there, comes first;
    without GPTQModel specbench's kernel, whose configs there are heuristic."""
    monkeypatch.setattr(kernel_table, "gpu_key", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    qw = OnH200(**quantize_rtn(torch.randn(64, 256), get_scheme("w4a16"), 128).__dict__)
    monkeypatch.setattr(BACKENDS["marlin"], "package", "torch")  # "installed"
    assert resolve("auto", qw, torch.float16)[0] == "marlin"
    monkeypatch.setattr(BACKENDS["marlin"], "package", "a_package_that_is_not_installed")
    name, how = resolve("auto", qw, torch.float16)
    assert (name, how) == ("triton", "auto (default order, NVIDIA A100-SXM4-80GB)")
    assert kernel_table.backend_order(None, "w4a8")[0][:2] == ("marlin", "triton")


def test_tune_candidates_offer_plane_dots_at_every_m_and_keep_the_current_entry():
    from specbench.quantization.tune import candidates

    entry = KernelConfig("gemv", 16, 1024, 1, warps=8, stages=1)
    for m in (1, 16, 64):
        cands = candidates(8192, 8192, 128, m, (entry,) if m == 1 else ())
        planes = [c for c in cands if c.path == "dot" and c.DEQ == 3]
        assert planes and all(c.BK == 128 and c.BM >= 16 for c in planes)
        assert all(check_shape(8192, 8192, 128, c) is None for c in cands)
    assert candidates(8192, 8192, 128, 1, (entry,))[1] == entry
    assert {c.BN for c in candidates(8192, 28672, 128, 1) if c.DEQ == 3} >= {128, 256}
    gate_up = candidates(57344, 8192, 128, 1)
    assert any(c.split in (3, 5, 6, 7) and c.DEQ == 7 and c.uneven for c in gate_up)  # uneven splits
    assert {c.uneven for c in gate_up if c.split == 4 and c.DEQ == 7} == {False, True}  # both codes for equal ones


def test_tune_narrows_to_paths_and_modes_but_keeps_the_heuristic_and_the_entry():
    from specbench.quantization.tune import candidates, narrowed

    entry = KernelConfig("dot", 128, 128, 4, BM=16, warps=4, stages=4, DEQ=7)
    cands = candidates(8192, 8192, 128, 1, (entry,))
    assert {c.path for c in cands[2:]} == {"gemv", "dot"}
    gemv = narrowed(cands, 2, ["gemv"], None)
    assert gemv[:2] == cands[:2] and entry in gemv and len(gemv) > 10
    assert all(c.path == "gemv" for c in gemv[2:])
    dot5 = narrowed(cands, 2, ["dot"], [5])
    assert dot5[:2] == cands[:2] and len(dot5) > 10 and all(c.path == "dot" and c.DEQ == 5 for c in dot5[2:])
    both = narrowed(cands, 1, ["gemv", "dot"], [5])  # --deq narrows the dot candidates only
    assert {c.path for c in both[1:]} == {"gemv", "dot"} and all(c.DEQ == 5 for c in both[1:] if c.path == "dot")
    assert entry not in both[1:] and narrowed(cands, 2, ["gemv", "dot"], None) == cands
    eight = narrowed(cands, 2, ["dot"], [5], [8])  # --warps narrows every path
    assert eight[:2] == cands[:2] and len(eight) > 2 and all(c.warps == 8 and c.DEQ == 5 for c in eight[2:])


def test_tune_neighbours_change_one_field_a_step_and_toggle_scales_ahead():
    from specbench.quantization.int8_kernel import A8Config
    from specbench.quantization.tune import candidates, neighbours

    entry = KernelConfig("dot", 128, 128, 1, BM=16, warps=4, stages=3, DEQ=5, uneven=True)
    near = neighbours(entry)
    assert entry not in near and len(near) == len(set(near))
    assert replace(entry, scales_ahead=True) in near and replace(entry, uneven=False) in near
    assert replace(entry, split=2) in near and replace(entry, split=2, scales_ahead=True) in near
    assert all(c.split >= 1 and c.stages >= 1 for c in near)  # split 1 is not halved to 0
    changed = lambda c: sum(a != b for a, b in zip(c.as_dict().values(), entry.as_dict().values()))  # noqa: E731
    assert all(changed(c) <= 2 for c in near if c.DEQ == 5)  # one field, and scales_ahead
    assert replace(entry, DEQ=9) in near  # the other plane-dot mode (invalid ones are left to check_shape)
    assert any(c.scales_ahead for c in candidates(8192, 8192, 128, 16))  # the full grid offers it too
    a8 = neighbours(A8Config("dot", 64, 256, 2, BM=16, warps=4, stages=3))
    assert A8Config("dot", 64, 256, 4, BM=16, warps=4, stages=3) in a8 and len(a8) == 9
    assert A8Config("dot", 64, 256, 2, BM=16, warps=4, stages=3, scaled=True) in a8  # left to check_shape, as DEQ


def test_tune_final_round_picks_the_fastest_on_fresh_timings_not_the_luckiest(monkeypatch):
    from specbench.quantization import tune

    speed = {"lucky": 3.0, "fast": 1.0, "middle": 2.0, "slow": 9.0}
    timed_again = []
    monkeypatch.setattr(tune, "time_config", lambda run, weights, replays: timed_again.append(run()) or speed[run()])
    first = [(0.5, "lucky"), (0.9, "fast"), (0.7, "middle"), (5.0, "slow")]
    assert tune.final_round(first, lambda cfg: (lambda: cfg), [], 5, finalists=3, rounds=2) == (1.0, "fast")
    assert timed_again == ["lucky", "middle", "fast"] * 2  # the finalists only, in turn


def test_the_packing_gives_each_nibble_plane_consecutive_inputs():
    """Word 16b + r of a 128-input block holds inputs 128b + 16j + r at nibble j (8b + r and 8j below group 128), so
    plane j of a tile multiplies a contiguous slice of x; every input appears once."""
    for k, group, per in ((512, 128, 16), (512, 512, 16), (512, 64, 8), (96, 32, 4)):
        order = kernel_order(k, group)
        assert sorted(order.tolist()) == list(range(k))
        words = order.view(-1, 8)  # [word, nibble]
        for j in range(8):
            assert words[:per, j].tolist() == list(range(per * j, per * j + per)), (k, group, j)
        assert words[per, 0] == 8 * per  # the next block


def test_a_merging_tune_keeps_the_old_tables_notes_and_command_except_for_what_it_redoes():
    from specbench.quantization.tune import carry_over

    old = {"command": "tune --schemes w4a16", "entries": {"8192x8192:g128": {"1": {}}}, "backends": {"w4a16": ["x"]},
           "errors": ["w4a16 8192x8192 g128 M=64: 3 candidates skipped", "budget spent before w4a8 8192x8192 g-1 M=64"]}
    table = {"command": "tune --schemes w4a8", "entries": {}, "errors": []}
    carry_over(table, old, [("w4a8", 8192, 8192, -1, 64)])
    assert table["entries"] == old["entries"] and table["backends"] == old["backends"]
    assert table["errors"] == ["w4a16 8192x8192 g128 M=64: 3 candidates skipped"]
    assert table["command"] == "tune --schemes w4a16; then, merged: tune --schemes w4a8"
    # a run on weights with zero points keeps the notes of the symmetric weight's (and names its own apart)
    table = {"command": "tune --zero-points", "entries": {}, "errors": []}
    carry_over(table, old, [("w4a16", 8192, 8192, 128, 64)], zero_points=True)
    assert "w4a16 8192x8192 g128 M=64: 3 candidates skipped" in table["errors"]


def tune_options(**changed) -> argparse.Namespace:
    """``tune``'s command-line defaults, with ``changed`` over them."""
    from specbench.quantization.tune import arguments

    return argparse.Namespace(**{**vars(arguments().parse_args(["--gpu", "h100"])), **changed})


def test_a_resumed_tune_times_only_what_no_run_of_its_code_and_options_has_timed():
    """``--resume`` skips a (weight, bucket) pair whose entry this code and these options wrote (per-channel weights
    keyed by K, zero points apart); an entry of another run, or of other options, is timed again."""
    from specbench.quantization.tune import pending, run_signature

    sig = run_signature(tune_options())
    assert sig == run_signature(tune_options())
    assert sig != run_signature(tune_options(around_entry=True))
    work = [("w4a16", 8192, 8192, 128, 1), ("w4a16", 8192, 8192, 128, 64), ("w4a8", 8192, 8192, -1, 1),
            ("w4a16", 1024, 8192, 128, 1)]
    entries = {kernel_table.shape_key(8192, 8192, 128, "w4a16"): {"1": {"run": sig}, "64": {"run": "other code"}},
               kernel_table.shape_key(8192, 8192, 8192, "w4a8"): {"1": {"run": sig}}}
    assert pending(work, entries, sig) == [work[1], work[3]]
    assert pending(work[:2], entries, sig, zero_points=True) == work[:2]  # zero points: their own entries only


def test_a_resumed_tune_with_nothing_left_keeps_its_out_table_and_times_nothing(tmp_path, monkeypatch, capsys):
    """The whole ``--resume`` path up to the GPU: every pair of the run already in --out by this code and these
    options, so nothing is compiled or timed (no GPU is touched) and the entries come back as they were."""
    from specbench.quantization import tune

    monkeypatch.setattr(kernel_table, "gpu_key", lambda: "h100")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H100 80GB HBM3")
    sig = tune.run_signature(tune_options())
    shapes = {(n, k) for _, k, n in tune.model_shapes("llama-3-8b")[0]}
    entries = {kernel_table.shape_key(n, k, k, "w8a8_int8"): {"1": {"run": sig, "ms": 0.01}} for n, k in shapes}
    out = tmp_path / "h100.json"
    out.write_text(json.dumps({"command": "tune", "entries": entries, "errors": ["kept note"]}))
    table = tune.main(["--gpu", "h100", "--schemes", "w8a8_int8", "--models", "llama-3-8b", "--buckets", "1",
                       "--groups", "-1", "--workers", "0", "--resume", "--out", str(out)])
    assert f"--resume: {len(shapes)} of {len(shapes)} (weight, bucket) pairs already timed" in capsys.readouterr().out
    assert table["entries"] == entries and table["errors"] == ["kept note"]
    assert json.loads(out.read_text())["entries"] == entries


def test_a_tune_refuses_a_group_size_or_linear_it_would_find_nothing_to_time_for(capsys):
    """``--groups 0`` (bash's own ``GROUPS``, the user's group id, once reached a device call as the group size) timed
    nothing and wrote the table back unchanged; it is refused, before any GPU is needed, naming the sizes offered, and
    so is an unknown ``--shapes`` label."""
    from specbench.quantization import tune

    with pytest.raises(SystemExit):
        tune.main(["--gpu", "h100", "--schemes", "w4a8", "w8a8_int8", "--groups", "0", "-1"])
    err = capsys.readouterr().err
    assert "--groups 0:" in err and "they take -1 128" in err
    with pytest.raises(SystemExit):  # w8a8_int8 is per-channel only
        tune.main(["--gpu", "h100", "--schemes", "w8a8_int8", "--groups", "128"])
    assert "--groups 128:" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a misspelt linear would leave nothing to time
        tune.main(["--gpu", "h100", "--shapes", "gateup"])
    assert "invalid choice: 'gateup'" in capsys.readouterr().err


def test_timed_graphs_cycle_the_weight_copies_to_enough_launches():
    """A timed graph launches every copy in turn, whole passes only, at least ``GRAPH_LAUNCHES`` times in all."""
    from specbench.quantization.tune import GRAPH_LAUNCHES, launch_cycle

    for copies in (["a"], ["a", "b", "c"], list(range(GRAPH_LAUNCHES)), list(range(GRAPH_LAUNCHES + 3))):
        cycle = launch_cycle(copies)
        assert len(cycle) >= GRAPH_LAUNCHES and len(cycle) % len(copies) == 0
        assert cycle[:len(copies)] == copies and cycle == copies * (len(cycle) // len(copies))
        assert len(cycle) < GRAPH_LAUNCHES + len(copies)
