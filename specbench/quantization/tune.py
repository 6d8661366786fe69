"""Time the Triton kernels' candidate configs for every linear shape of the shipped models; write the table.

    python -m specbench.quantization.tune --gpu h200 [--schemes w4a16 w8a8_int8 w4a8] [--budget-s 300] [--out PATH]
        [--models llama-3-70b] [--shapes qkv gate_up] [--buckets 1 16 64] [--groups 128] [--deq 3] [--warps 8]
        [--zero-points] [--around-entry] [--dtype float16]

For each scheme's kernel (w4a16: ``int4_kernel``; w8a8_int8 / w4a8: ``int8_kernel``), each (N, K, group kind) of
Llama-3-8B/70B's and Qwen3-8B's linears and each M bucket, every candidate is timed on random weights as CUDA-graph
replays over enough weight copies to defeat L2, at least ``GRAPH_LAUNCHES`` launches a graph (median of ``--replays``;
the int8-activation kernels on pre-quantized activations, since the activation-quant kernel is the same for every
candidate); the fastest goes into
``specbench/quantization/tables/<gpu>.json`` with its time and the heuristic's, so the table records what it
gained, if it agrees with an fp32 matmul of the dequantized weight (and, for int8 activations, the per-token
fake-quantized input) on fresh random data. Activations, scales and outputs are in ``--dtype`` (float16 by default,
as SpecMQuant's low-bit runs; the fp16 and bf16 builds of a config differ, ``int4_convert``), and each entry
records it. The five fastest are timed again, three rounds in turn, and the
fastest median wins. ``--zero-points`` times w4a16 weights with zero points (AWQ, asymmetric GPTQ) into entries of
their own (``kernel_table``), the symmetric weight's entry among the candidates. Work runs bucket by bucket (M = 1
for every shape first); a shape whose candidates outlast ``--budget-s`` keeps the best of those timed (the
heuristic's config and the current entry always among them). Candidates are compiled first in parallel processes
(Triton's disk cache). The table is rewritten after every shape, so a run cut off by ``--budget-s`` keeps what it
measured; shapes left out use the heuristic. Entries of an existing table that this run does not time (other
buckets, groups, models, schemes) are kept. A GPU with a sibling (``kernel_table.SIBLINGS``: an H100 runs the H200's
entries) and no table of its own starts an empty one: the sibling's entries compete, and only what this GPU timed is
written.
Each entry records the run that timed it (``run_signature``: the package's source hash and the options that choose
the candidates; not one cut short by the budget), so ``--resume`` on a cut-off run's ``--out`` times only what that
run left: a full-grid tune can span several device calls.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from specbench.quantization import int8_kernel, kernel_table, splitk
from specbench.quantization.act_quant_kernel import quantize_per_token
from specbench.quantization.formats import unpack_int32
from specbench.quantization.int4_kernel import (
    GROUP_COLUMNS, SCALED_PLANES, KernelConfig, blocked, check_shape, kernel_order, launch, unblocked,
)
from specbench.quantization.int8_kernel import A8Config
from specbench.quantization.qweight import fake_quant_act, quantize_rtn
from specbench.quantization.schemes import SCHEMES
from specbench.runner.environment import ptxas_version, source_hash

# the shipped configs' distinct linear shapes (Llama-3.1-8B and 3.3-70B share these; Qwen3-8B is Quasar's target)
MODELS = {"llama-3-70b": "llama-3-70b-instruct", "llama-3-8b": "llama-3-8b-instruct", "qwen3-8b": "qwen3-8b"}
LINEARS = ("qkv", "o", "gate_up", "down")  # one decoder layer's linears as the model runs them, in order
BUCKETS = (1, 16, 64, 4, 32, 128)  # tuned in this order, so a cut-off run has the main ones
GROUPS = (128, -1)  # g128 and per-channel
L2_DEFEAT_BYTES = 192 * 2**20
# launches per timed graph at least, cycling over the weight copies: a graph replay's own start added 5-11 µs to a
# graph of one 70B launch (docs/benchmarks.md, session 31), which a forward's back-to-back kernels do not pay
GRAPH_LAUNCHES = 8
SPLITS = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16)  # uneven ones too (``splitk``): grids of whole waves
KERNEL_SCHEMES = ("w4a16", "w8a8_int8", "w4a8")


def model_shapes(name: str) -> tuple[list[tuple[str, int, int]], int]:
    """(label, in_features, out_features) of one decoder layer's linears as the model runs them (q/k/v and gate/up
    stacked), and the layer count."""
    from specbench.model import ModelConfig, load_hf_config

    c = ModelConfig.from_hf(load_hf_config(MODELS[name]))
    h, i = c.hidden_size, c.intermediate_size
    q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    return list(zip(LINEARS, (h, q, h, i), (q + 2 * kv, h, 2 * i, h))), c.num_hidden_layers


def both_k_ranges(configs: list) -> list:
    """Each config with equal K ranges and with each program's own (``splitk``): they compile differently, and
    neither is faster for every config. Where the split does not divide K only the second runs."""
    return [replace(c, uneven=u) for c in configs for u in (False, True)]


def candidates(n: int, k: int, group: int, m: int, also: tuple[KernelConfig, ...] = ()) -> list[KernelConfig]:
    """Configs worth timing for this shape and M (the heuristic's first, then ``also``), each one that fits."""
    out = [kernel_table.heuristic(n, k, group, m, hopper=True), *also]  # the tune's GPUs are sm_90
    if m == 1:
        grid = itertools.product((16, 32, 64, 128), (256, 512, 1024, 2048), (4, 8), (1,))
        out += [KernelConfig("gemv", bn, bk, s, warps=w, stages=st) for bn, bk, w, st in grid for s in SPLITS]
    bms = [b for b in (16, 32, 64, 128) if b >= min(m, 64) and b <= max(16, 2 * m)][:2]
    splits = [s for s in SPLITS if m <= kernel_table.MAX_SPLIT_M or s == 1]
    if m > 1:
        grid = itertools.product(bms, (64, 128), (64, 128), (3,), (0, 1, 2))
        out += [KernelConfig("dot", bn, bk, s, BM=bm, warps=4, stages=st, DEQ=d)
                for bm, bn, bk, st, d in grid for s in splits]
    # plane dots with two-per-instruction conversion, M = 1 included (BM 16 rows, the rest masked); wider N tiles
    # and the same with the weight as the first operand (DEQ 4; BN is the MMA's 64-row side)
    # (DEQ 7: M = 1 alone, one group per MMA column; 7 and 9 also with 5 and 6 stages)
    grid = itertools.product(bms, (64, 128, 256), (128, 256), (4, 8), (3, 4, 5, 6), (3, 4, 5, 6, 7, 9))
    out += [KernelConfig("dot", bn, bk, s, BM=bm, warps=w, stages=st, DEQ=d)
            for bm, bn, bk, w, st, d in grid for s in splits
            if (bm * bn <= 64 * 128 or w == 8) and (d == 3 or bn >= 64) and (st <= 4 or d in (GROUP_COLUMNS, SCALED_PLANES))
            and (d != GROUP_COLUMNS or m == 1)]
    # DEQ 4-6 also with each tile's scales loaded a K step ahead (``scales_ahead``; grouped weights)
    out += [replace(c, scales_ahead=True) for c in out[1 + len(also):] if c.path == "dot" and 4 <= c.DEQ <= 6]
    g = k if group == -1 else group
    out[1 + len(also):] = both_k_ranges(out[1 + len(also):])
    fitting = [c for c in dict.fromkeys(out) if check_shape(n, k, g, c) is None]
    tiles = lambda c: -(-n // c.BN) * (1 if c.path == "gemv" else -(-m // c.BM))  # noqa: E731
    # keep grids between half a wave and eight waves of 132 SMs (32 for DEQ 7, whose narrow tiles fit up to 7 per SM)
    waves = lambda c: 32 if c.DEQ == GROUP_COLUMNS else 8  # noqa: E731
    return [c for i, c in enumerate(fitting) if i == 0 or 66 <= tiles(c) * c.split <= waves(c) * 132]


def candidates_a8(n: int, k: int, group: int, m: int, bits: int) -> list[A8Config]:
    """Configs worth timing for the int8-activation kernel (the heuristic's first), each one that fits."""
    out = [kernel_table.heuristic_a8(n, k, group, m, bits, hopper=True)]  # the tune's GPUs are sm_90
    grouped = group != k
    if m == 1:  # gemv: 256-1024 weight bytes per channel per tile (grouped 4-bit: half a group or one)
        bks = (group // 2, group) if grouped else tuple(b * 8 // bits for b in (256, 512, 1024))
        grid = itertools.product((32, 64, 128, 256) if grouped else (16, 32, 64, 128), bks, (4, 8))
        out += [A8Config("gemv", bn, bk, s, warps=w, stages=2) for bn, bk, w in grid for s in SPLITS]
    bms = [b for b in (16, 32, 64, 128) if b >= min(m, 64) and b <= max(16, 2 * m)][:2]
    bks = (64, 128, 256, 512) if grouped else (128, 256, 512)  # grouped tiles of several groups: a dot per group
    # grouped 4-bit tiles of several groups also with ``scaled`` (one dot a tile; within one group the float scaling
    # is already one dot, so the scaled codes' extra instructions cannot pay)
    # dot: wider N tiles read each activation tile for more weights (at BN 64 and M = 64 a program reads twice as many
    # activation bytes as weight bytes); two warp groups where the [BN, BM] accumulator would not fit four warps
    grid = itertools.product(bms, (64, 128, 256), bks, (3, 4), (4, 8))
    out += [A8Config("dot", bn, bk, s, BM=bm, warps=w, stages=st, scaled=scaled)
            for bm, bn, bk, st, w in grid for s in SPLITS if m <= kernel_table.MAX_SPLIT_M or s == 1
            if (w == 4 and bm * bn <= 64 * 128) or (w == 8 and bm * bn >= 64 * 128)
            for scaled in ((False, True) if grouped and bits == 4 and bk > group else (False,))]
    out[1:] = both_k_ranges(out[1:])
    fitting = [c for c in dict.fromkeys(out) if int8_kernel.check_shape(n, k, group, bits, c) is None]
    tiles = lambda c: -(-n // c.BN) * (1 if c.path == "gemv" else -(-m // c.BM))  # noqa: E731
    # gemv: at most 32 weight words per thread (two tiles in flight and the accumulator must stay in registers)
    small = lambda c: c.path == "dot" or c.BN * c.BK * bits // 32 <= 32 * 32 * c.warps  # noqa: E731
    return [c for i, c in enumerate(fitting) if i == 0 or (66 <= tiles(c) * c.split <= 8 * 132 and small(c))]


def neighbours(cfg) -> list:
    """Configs one step from ``cfg`` in one field (BN, split, stages, warps halved or doubled or one more or less;
    ``uneven`` toggled, and ``scaled`` where the config has it; ``DEQ`` 5 and 9 swapped), each also with
    ``scales_ahead`` toggled where the config has it (the caller drops those that do not fit): a
    local search around an entry (``--around-entry``), for a new option or a drifted GPU, in seconds where the full
    grid takes hours."""
    steps = [("BN", cfg.BN // 2), ("BN", cfg.BN * 2), ("split", cfg.split // 2), ("split", cfg.split * 2),
             ("stages", cfg.stages - 1), ("stages", cfg.stages + 1), ("warps", 8 if cfg.warps == 4 else 4),
             ("uneven", not cfg.uneven)] + ([("scaled", not cfg.scaled)] if hasattr(cfg, "scaled") else [])
    near = [replace(cfg, **{field: value}) for field, value in steps if field in ("uneven", "scaled") or value > 0]
    if getattr(cfg, "DEQ", None) in (5, 9):  # the two plane-dot modes for grouped weights at any M (9: 4 warps)
        other = 9 if cfg.DEQ == 5 else 5
        near.append(replace(cfg, DEQ=other, warps=4 if other == 9 else cfg.warps, scales_ahead=False))
    if hasattr(cfg, "scales_ahead"):
        near = [c for base in near + [cfg] for c in (base, replace(base, scales_ahead=not base.scales_ahead))]
    return [c for c in dict.fromkeys(near) if c != cfg]


def narrowed(cands: list, kept: int, paths: list[str], deq: list[int] | None, warps: list[int] | None = None) -> list:
    """The first ``kept`` candidates (the heuristic's config, the current entry) and, of the rest, those on ``paths``;
    with ``deq``, dot candidates only of those modes; with ``warps``, only candidates of those warp counts."""
    return [c for i, c in enumerate(cands) if i < kept or (c.path in paths and (
        deq is None or c.path == "gemv" or c.DEQ in deq) and (warps is None or c.warps in warps))]


def final_round(timed: list[tuple[float, object]], runner, weights: list[tuple], replays: int,
                finalists: int = 5, rounds: int = 3) -> tuple[float, object]:
    """(ms, config) of the fastest of the ``finalists`` best-timed candidates, each timed again ``rounds`` times in
    turn with four times the replays: the first round's minimum over hundreds of noisy timings favours the luckiest
    candidate, not the fastest."""
    best = sorted(timed, key=lambda t: t[0])[:finalists]
    times = {i: [] for i in range(len(best))}
    for _ in range(rounds):
        for i, (_, cfg) in enumerate(best):
            times[i].append(time_config(runner(cfg), weights, 4 * replays))
    return min(((statistics.median(times[i]), cfg) for i, (_, cfg) in enumerate(best)), key=lambda t: t[0])


def random_weight(n: int, k: int, group: int, device: str, seed: int, dtype: torch.dtype = torch.bfloat16) -> tuple:
    gen = torch.Generator(device=device).manual_seed(seed)
    packed = blocked(torch.randint(-2**31, 2**31 - 1, (k // 8, n), device=device, dtype=torch.int32, generator=gen))
    scales = (torch.rand(k // group, n, device=device, generator=gen) * 1e-2 + 1e-3).to(dtype)
    return packed, scales


def launch_cycle(copies: list) -> list:
    """``copies`` repeated to at least ``GRAPH_LAUNCHES`` items (each pass over them still defeats L2)."""
    return copies * -(-GRAPH_LAUNCHES // len(copies))


def time_config(run_one, weights: list[tuple], replays: int) -> float:
    """Median ms of one ``run_one(weight)`` launch, from CUDA-graph replays over all ``weights``, cycled to at least
    ``GRAPH_LAUNCHES`` launches."""
    weights = launch_cycle(weights)
    run = lambda: [run_one(w) for w in weights]  # noqa: E731
    run()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / len(weights))
    return statistics.median(times)


def rel_error(cfg: KernelConfig, n: int, k: int, group: int, m: int, asym: bool, dtype: torch.dtype,
              seed: int = 1) -> float:
    """||kernel - fp32 dequantized matmul|| / ||reference|| on fresh random codes, scales and (asym) zero points."""
    packed, scales = random_weight(n, k, group, "cuda", seed, dtype)
    gen = torch.Generator(device="cuda").manual_seed(seed + 1)
    zeros = torch.randint(0, 16, scales.shape, device="cuda", generator=gen).to(dtype) if asym else None
    x = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen)
    counters = torch.zeros(splitk.tile_counters(n, m, cfg) + 1, dtype=torch.int32, device="cuda")
    y = launch(x, packed, scales, zeros, counters, group, cfg).float()
    q = torch.empty(k, n, device="cuda")
    q[kernel_order(k, group).cuda()] = unpack_int32(unblocked(packed), 4, 0).float()  # [K, N] in input order
    z = 8.0 if zeros is None else zeros.float().repeat_interleave(group, 0)
    w = (q - z) * scales.float().repeat_interleave(group, 0)
    ref = x.float() @ w
    return ((y - ref).norm() / ref.norm()).item()


class W4A16:
    """The w4a16 kernel (``int4_kernel``) as ``main`` times and checks it."""

    scheme, bits, tolerance, config = "w4a16", 4, 1e-2, KernelConfig

    def __init__(self, zero_points: bool = False, dtype: torch.dtype = torch.bfloat16):
        self.zero_points, self.dtype = zero_points, dtype

    def candidates(self, n, k, group, m):
        return candidates(n, k, group, m)

    def fits(self, cfg, n, k, group):
        return check_shape(n, k, group, cfg) is None

    def weight(self, n, k, group, seed):
        packed, scales = random_weight(n, k, group, "cuda", seed, self.dtype)
        if not self.zero_points:
            return packed, scales, None
        gen = torch.Generator(device="cuda").manual_seed(seed + 1)
        return packed, scales, torch.randint(0, 16, scales.shape, device="cuda", generator=gen).to(scales.dtype)

    def inputs(self, m, k):
        return torch.randn(m, k, device="cuda", dtype=self.dtype)

    def launch(self, cfg, x, weight, group, counters):
        return launch(x, *weight, counters, group, cfg)

    def errors(self, cfg, n, k, group, m):
        return [rel_error(cfg, n, k, group, mm, asym, self.dtype) for mm in {m, max(1, m - 1)}
                if cfg.path == "dot" or mm == 1 for asym in (False, True)]


class A8:
    """An int8-activation kernel (``int8_kernel``: w8a8_int8 or w4a8) as ``main`` times and checks it; timed on
    pre-quantized activations."""

    config = A8Config

    def __init__(self, scheme: str, device: str = "cuda", dtype: torch.dtype = torch.bfloat16):
        self.scheme, self.bits, self.device, self.dtype = scheme, SCHEMES[scheme].bits, device, dtype
        self.tolerance = 5e-3 if self.bits == 8 else 1e-2

    def candidates(self, n, k, group, m):
        return candidates_a8(n, k, group, m, self.bits)

    def fits(self, cfg, n, k, group):
        return int8_kernel.check_shape(n, k, group, self.bits, cfg) is None

    def weight(self, n, k, group, seed):
        gen = torch.Generator(device=self.device).manual_seed(seed)
        codes = torch.randint(-128, 128, (n, k * self.bits // 8), device=self.device, dtype=torch.int8, generator=gen)
        ws = torch.rand(n, device=self.device, generator=gen) * 1e-2 + 1e-3
        gs = None if group == k else torch.randint(1, 17, (k // group, n), device=self.device, generator=gen,
                                                   dtype=torch.uint8)  # QQQ's integer group scales, as ``pack``'s
        return codes if self.bits == 8 else codes.view(torch.uint8), ws, gs

    def inputs(self, m, k):
        return quantize_per_token(torch.randn(m, k, device=self.device, dtype=self.dtype))

    def launch(self, cfg, x, weight, group, counters):
        return int8_kernel.launch(*x, *weight, counters, self.bits, group, cfg, self.dtype)

    def errors(self, cfg, n, k, group, m, seed=1):
        """Rel. errors against fp32 ``fake_quant(x) @ dequantized W.T`` on an RTN weight, at M (and M - 1)."""
        from specbench.quantization.backends.triton_a8 import pack

        gen = torch.Generator(device=self.device).manual_seed(seed)
        w = torch.randn(n, k, device=self.device, generator=gen) * 0.02
        qw = quantize_rtn(w, SCHEMES[self.scheme], -1 if group == k else group)
        packed, dense = pack(qw), qw.dequantize()
        counters = torch.zeros(splitk.tile_counters(n, m, cfg) + 1, dtype=torch.int32, device=self.device)
        out = []
        for mm in {m, max(1, m - 1)} if cfg.path == "dot" else {1}:
            x = torch.randn(mm, k, device=self.device, dtype=self.dtype, generator=gen)
            y = int8_kernel.matmul(x, *packed, counters, self.bits, group, cfg).float()
            ref = fake_quant_act(x.float(), "int8") @ dense.t()
            out.append(((y - ref).norm() / ref.norm()).item())
        return out


def kernel_for(scheme: str, zero_points: bool = False, dtype: torch.dtype = torch.bfloat16):
    """The kernel ``main`` times for ``scheme`` in ``dtype``; ``zero_points``: w4a16 on weights with zero points."""
    if scheme == "w4a16":
        return W4A16(zero_points, dtype)
    return A8(scheme, dtype=dtype)


def _compile(tasks: list[tuple[str, bool, object, int, int, str]]) -> int:
    """(worker) Run each (scheme, zero points, config, group, M, dtype name) once on a small weight of the same group
    kind: fills Triton's disk cache."""
    done = 0
    for scheme, zero_points, cfg, group_kind_k, m, dtype in tasks:
        kernel = kernel_for(scheme, zero_points, getattr(torch, dtype))
        k = max(4096, 16 * cfg.BK)
        group = k if group_kind_k == -1 else group_kind_k
        n = 4 * cfg.BN
        weight, x = kernel.weight(n, k, group, 0), kernel.inputs(m, k)
        counters = torch.zeros(splitk.tile_counters(n, m, cfg) + 1, dtype=torch.int32, device="cuda")
        try:
            kernel.launch(replace(cfg, split=min(cfg.split, 2)), x, weight, group, counters)
            done += 1
        except Exception:  # noqa: BLE001 - the timing loop reports it
            pass
    torch.cuda.synchronize()
    return done


def prewarm(tasks: list[tuple], workers: int, deadline: float) -> None:
    """Compile ``tasks`` (``_compile``'s) in ``workers`` processes until ``deadline``."""
    chunks = [tasks[i::workers] for i in range(workers)]
    pool = multiprocessing.get_context("spawn").Pool(workers)
    try:
        result = pool.map_async(_compile, chunks)
        result.wait(max(0.0, deadline - time.monotonic()))
    finally:
        pool.terminate()
        pool.join()


def work_label(scheme: str, n: int, k: int, group: int, m: int, zero_points: bool = False) -> str:
    """How the table's ``errors`` name one (scheme, N, K, group, M) of the work."""
    return f"{scheme}{':zp' if zero_points else ''} {n}x{k} g{group} M={m}"


def carry_over(table: dict, old: dict, work: list[tuple], zero_points: bool = False) -> None:
    """Merge the table this run extends into ``table``: its entries (this run re-tunes only ``work``), their notes in
    ``errors`` but those of re-tuned (scheme, N, K, group, M), auto's backend order and its source, and its command
    ahead of this one."""
    table["entries"] = old.get("entries", {})
    table.update({key: old[key] for key in ("backends", "backends_source") if key in old})
    redone = [work_label(*w, zero_points) for w in work]
    table["errors"] = [e for e in old.get("errors", []) if not any(label in e for label in redone)] + table["errors"]
    if old.get("command"):
        table["command"] = f"{old['command']}; then, merged: {table['command']}"


def run_signature(args: argparse.Namespace) -> str:
    """What made a run's entries: the code (``source_hash``) and the options that choose and time the candidates."""
    opts = {key: getattr(args, key) for key in ("paths", "deq", "warps", "around_entry", "dtype", "replays")}
    return f"{source_hash()} " + json.dumps(opts, sort_keys=True, separators=(",", ":"))


def pending(work: list[tuple], entries: dict, signature: str, zero_points: bool = False) -> list[tuple]:
    """The (scheme, N, K, group, M) of ``work`` whose entry in ``entries`` was not timed by a run of ``signature``."""
    def done(scheme: str, n: int, k: int, g: int, m: int) -> bool:
        key = kernel_table.shape_key(n, k, k if g == -1 else g, scheme, zero_points)
        return entries.get(key, {}).get(str(m), {}).get("run") == signature
    return [w for w in work if not done(*w)]


def arguments() -> argparse.ArgumentParser:
    """The command line of ``python -m specbench.quantization.tune``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", required=True, choices=kernel_table.GPUS)
    parser.add_argument("--out", type=Path, default=None, help="default: the committed table of --gpu; a new path "
                        "starts from the committed table's entries (none where --gpu has no table of its own)")
    parser.add_argument("--schemes", nargs="+", default=list(KERNEL_SCHEMES), choices=KERNEL_SCHEMES)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--buckets", nargs="+", type=int, default=list(BUCKETS))
    parser.add_argument("--groups", nargs="+", type=int, default=list(GROUPS),
                        help="-1: per-channel; a scheme takes only the ones it supports")
    parser.add_argument("--shapes", nargs="+", default=None, choices=LINEARS,
                        help="only these linears (``model_shapes``' labels); default: all")
    parser.add_argument("--paths", nargs="+", default=["gemv", "dot"], choices=["gemv", "dot"],
                        help="time only candidates of these paths (besides the heuristic's config and the current "
                        "entry); default: both")
    parser.add_argument("--deq", nargs="+", type=int, default=None, help="w4a16: time only dot candidates with these "
                        "DEQ modes (besides the heuristic's config and the current entry), e.g. 3; default: all")
    parser.add_argument("--warps", nargs="+", type=int, default=None, help="time only candidates with these warp "
                        "counts (besides the heuristic's config and the current entry), e.g. 8; default: all")
    parser.add_argument("--zero-points", action="store_true", help="w4a16 weights with zero points, into their own "
                        "entries (NxK:<group kind>:zp)")
    parser.add_argument("--around-entry", action="store_true", help="time only the heuristic's config, the current "
                        "entry and its neighbours (one field a step away: ``neighbours``) where there is an entry")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"],
                        help="activations, scales and outputs (default: float16, as SpecMQuant's low-bit runs)")
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=300.0)
    parser.add_argument("--workers", type=int, default=12, help="processes that compile candidates first")
    parser.add_argument("--resume", action="store_true", help="time only the (weight, bucket) pairs whose entry in "
                        "--out no run of this code and these options has timed (a cut-off run's --out goes on)")
    return parser


def main(argv: list[str] | None = None) -> dict:
    parser = arguments()
    args = parser.parse_args(argv)
    if args.zero_points and args.schemes != ["w4a16"]:
        parser.error("--zero-points times the w4a16 kernel only: add --schemes w4a16")
    offered = {g for s in args.schemes for g in SCHEMES[s].group_sizes}
    if unknown := [g for g in args.groups if g not in offered]:
        parser.error(f"--groups {' '.join(map(str, unknown))}: no scheme of {' '.join(args.schemes)} takes that group "
                     f"size; they take {' '.join(map(str, sorted(offered)))} (-1: per-channel)")
    t0, dtype = time.monotonic(), getattr(torch, args.dtype)
    found = kernel_table.gpu_key()
    if found != args.gpu:
        parser.error(f"--gpu {args.gpu} but this process sees {torch.cuda.get_device_name() if found else 'no'} GPU")
    out = args.out or kernel_table.TABLES / f"{args.gpu}.json"
    keys = list(dict.fromkeys((n, k) for model in args.models for label, k, n in model_shapes(model)[0]
                              if args.shapes is None or label in args.shapes))
    work = [(s, n, k, g, m) for s in args.schemes for m in args.buckets for g in args.groups
            if g in SCHEMES[s].group_sizes for n, k in keys]
    table = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
             "triton": __import__("triton").__version__, "ptxas": ptxas_version(),
             "command": "python -m specbench.quantization.tune "
             + " ".join(sys.argv[1:] if argv is None else argv), "date": time.strftime("%Y-%m-%d"), "entries": {},
             "errors": []}
    base = out if out.exists() else kernel_table.TABLES / f"{args.gpu}.json"
    old = json.loads(base.read_text()) if base.exists() else {}
    signature = run_signature(args)
    if args.resume:
        todo = pending(work, old.get("entries", {}), signature, args.zero_points)
        print(f"--resume: {len(work) - len(todo)} of {len(work)} (weight, bucket) pairs already timed by this code and "
              f"these options in {base}", flush=True)
        work = todo
    if old:
        carry_over(table, old, work, args.zero_points)

    def timed_candidates(scheme: str, n: int, k: int, group: int, m: int) -> list:
        """The scheme kernel's candidates with the current table entry among them (it competes again, so no run
        regresses; an entry the kernel can no longer run is dropped); besides the heuristic's config and the entry,
        only candidates of ``--paths`` and, for w4a16 with ``--deq``, dot candidates of those modes."""
        kernel = kernel_for(scheme, args.zero_points, dtype)
        # what such a weight runs today: this table's entry, else the committed one the GPU runs (its sibling's where
        # its own table lacks it; with zero points: the symmetric weight's entry where it has none)
        entry = (kernel_table.weight_entries(table["entries"], n, k, group, scheme, args.zero_points).get(str(m))
                 or kernel_table.tuned_entries(args.gpu, n, k, group, scheme, args.zero_points).get(str(m)))
        cands = kernel.candidates(n, k, group, m)
        if entry and not kernel.fits(kernel.config(**entry["config"]), n, k, group):
            table["entries"].get(kernel_table.shape_key(n, k, group, scheme, args.zero_points), {}).pop(str(m), None)
            entry = None
        if entry:
            current = kernel.config(**entry["config"])
            near = ([c for c in neighbours(current) if kernel.fits(c, n, k, group)] if args.around_entry
                    else cands[1:])
            cands = [cands[0], current, *(c for c in near if c != current)]
        return narrowed(cands, 2 if entry else 1, args.paths, args.deq if scheme == "w4a16" else None, args.warps)

    tasks = list(dict.fromkeys((s, args.zero_points, replace(c, split=min(c.split, 2)), g, 1 if m == 1 else 16,
                                args.dtype)
                               for s, n, k, g, m in work
                               for c in timed_candidates(s, n, k, k if g == -1 else g, m)))
    if args.workers > 0:
        print(f"compiling {len(tasks)} candidates in {args.workers} processes", flush=True)
        prewarm(tasks, args.workers, t0 + 0.35 * args.budget_s)
    print(f"compiled in {time.monotonic() - t0:.0f} s", flush=True)
    weights_of: dict = {}
    for scheme, n, k, g, m in work:
        if time.monotonic() - t0 > args.budget_s:
            table["errors"].append(f"budget spent before {work_label(scheme, n, k, g, m, args.zero_points)}")
            break
        kernel, group = kernel_for(scheme, args.zero_points, dtype), k if g == -1 else g
        if (scheme, n, k, group) not in weights_of:
            weights_of.clear()
            torch.cuda.empty_cache()
            copies = max(1, min(64, L2_DEFEAT_BYTES // (n * k * kernel.bits // 8)))
            weights_of[scheme, n, k, group] = [kernel.weight(n, k, group, i) for i in range(copies)]
        weights = weights_of[scheme, n, k, group]
        x = kernel.inputs(m, k)
        cands = timed_candidates(scheme, n, k, group, m)
        counters = torch.zeros(max(splitk.tile_counters(n, m, c) for c in cands) + 1, dtype=torch.int32, device="cuda")
        timed, too_big, label, whole = [], 0, work_label(scheme, n, k, g, m, args.zero_points), True
        for i, cfg in enumerate(cands):
            if i > 1 and time.monotonic() - t0 > args.budget_s:  # the heuristic and the current entry always run
                table["errors"].append(f"budget spent while timing {label}: {i} of {len(cands)} candidates")
                whole = False
                break
            try:
                run_one = lambda w, cfg=cfg: kernel.launch(cfg, x, w, group, counters)  # noqa: E731
                timed.append((time_config(run_one, weights, args.replays), cfg))
            except Exception as err:  # noqa: BLE001 - a candidate that fails to compile/run is skipped
                if type(err).__name__ == "OutOfResources":
                    too_big += 1
                else:
                    table["errors"].append(f"{label} {cfg}: {type(err).__name__}: {str(err)[:120]}")
        if too_big:
            table["errors"].append(f"{label}: {too_big} candidates skipped, more shared memory or registers than the "
                                   "GPU has")
        if not timed:
            continue
        heur_ms = timed[0][0] if timed[0][1] == cands[0] else None
        best_ms, best = final_round(timed, lambda cfg: (lambda w: kernel.launch(cfg, x, w, group, counters)),
                                    weights, args.replays)
        key = kernel_table.shape_key(n, k, group, scheme, args.zero_points)
        errors = kernel.errors(best, n, k, group, m)
        if max(errors) > kernel.tolerance:
            table["errors"].append(f"{key} M={m} {best}: rel. error {max(errors):.2e} vs reference; not tabled")
            continue
        table["entries"].setdefault(key, {})[str(m)] = {
            "config": best.as_dict(), "ms": best_ms, "heuristic_ms": heur_ms, "candidates": len(timed),
            "GBps": (n * k * kernel.bits / 8) / (best_ms * 1e-3) / 1e9, "rel_error": max(errors), "dtype": args.dtype,
            **({"run": signature} if whole else {})}  # a pair cut short by the budget is timed again on --resume
        per_path = {path: min(t for t, c in timed if c.path == path)
                    for path in dict.fromkeys(c.path for _, c in timed)}
        print(f"[{time.monotonic() - t0:6.0f} s] {key} M={m}: {best_ms * 1e3:.1f} us "
              f"({len(timed)} candidates; heuristic {heur_ms and heur_ms * 1e3:.1f} us; first round, best per path: "
              f"{', '.join(f'{path} {t * 1e3:.1f} us' for path, t in per_path.items())}) {best}", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(table, indent=1) + "\n")
    table["elapsed_s"] = time.monotonic() - t0
    out.write_text(json.dumps(table, indent=1) + "\n")
    return table


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
