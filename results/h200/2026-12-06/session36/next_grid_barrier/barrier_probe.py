"""Session 36 (prepared): what kernel boundaries cost a stream of layer weights, and what one launch with grid-wide
barriers between the linears would save.

The 8B W4A16 kernels are not data-bound at M = 1 (session 31's prefetch ceiling, session 36's repeat): per kernel,
launch, pipeline fill and the split-K tail cost about as much as the bytes. A kernel that only reads the same
bytes, one launch per linear, took 1.26 ms for the 8B stack on the H200 against about 0.82 ms of DRAM time
(session 14). This probe reads every linear's packed-W4A16-sized weight of each layer in order, each phase's
result depending on another program's result of the phase before (so the order is real), and times:
- ``launches``: one launch per linear (as the model runs them), a persistent grid of ``--occupancy`` programs per SM;
- ``layer``: one launch per layer, grid barriers (an arrival counter spun on) between its four linears;
- ``stack``: one launch for the whole stack;
- ``+first``: each program loads its first tile of the next linear before it waits at the barrier.
Each checksum is compared with the ``launches`` run's and, for the first layer, with torch's.

    python barrier_probe.py OUT.json [--models llama-3-8b llama-3-70b] [--occupancy 1 2 4] [--budget-s 150]
    TRITON_INTERPRET=1 python barrier_probe.py --check   # the CPU check of the indexing (no barriers)
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

BLOCK = 4096  # int32 words per tile (16 KB)
LINEARS = {"llama-3-8b": ([(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)], 32),
           "llama-3-70b": ([(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)], 20)}  # (N, K), layers


@triton.jit
def _grid_barrier(counter_ptr, target):
    """Every program of the grid waits here until ``target`` arrivals have been counted at ``counter_ptr``."""
    tl.debug_barrier()
    tl.atomic_add(counter_ptr, 1, sem="release")
    while tl.atomic_add(counter_ptr, 0, sem="acquire") < target:  # an acquiring read (Triton drops an unused one)
        pass
    tl.debug_barrier()


@triton.jit
def _stream(w_ptr, starts_ptr, out_ptr, counter_ptr, first, count, BLOCK: tl.constexpr, BARRIER: tl.constexpr,
            FIRST_AHEAD: tl.constexpr):
    """Phases ``first`` .. ``first + count - 1``: phase ph's tiles are ``starts[ph]`` .. ``starts[ph + 1] - 1``
    of ``w`` (BLOCK words each); program p sums tiles p, p + P, ... and stores that sum plus the previous phase's
    sum of program p + 1 at out[ph, p]. With ``BARRIER`` the phases are separated by grid barriers."""
    pid = tl.program_id(0)
    progs = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    t0 = tl.load(starts_ptr + first)
    nxt = tl.load(w_ptr + tl.cast(t0 + pid, tl.int64) * BLOCK + offs, mask=offs * 0 + t0 + pid < tl.load(starts_ptr + first + 1),
                  other=0)
    for i in range(count):
        ph = first + i
        t1 = tl.load(starts_ptr + ph + 1)
        acc = nxt
        for t in range(tl.load(starts_ptr + ph) + pid + progs, t1, progs):
            acc += tl.load(w_ptr + tl.cast(t, tl.int64) * BLOCK + offs)
        dep = tl.load(out_ptr + tl.maximum(ph - 1, 0) * progs + (pid + 1) % progs, mask=ph > 0, other=0,
                      cache_modifier=".cg")
        tl.store(out_ptr + ph * progs + pid, tl.sum(acc, axis=0) + dep)
        if i + 1 < count:
            ok = offs * 0 + t1 + pid < tl.load(starts_ptr + ph + 2)
            if FIRST_AHEAD:
                nxt = tl.load(w_ptr + tl.cast(t1 + pid, tl.int64) * BLOCK + offs, mask=ok, other=0)
            if BARRIER:
                _grid_barrier(counter_ptr, (i + 1) * progs)
            if not FIRST_AHEAD:
                nxt = tl.load(w_ptr + tl.cast(t1 + pid, tl.int64) * BLOCK + offs, mask=ok, other=0)


def phase_starts(linears, layers: int, device, block: int = BLOCK) -> torch.Tensor:
    """Tile index where each phase (layer-major, then linear) starts, and the end: [len(linears) * layers + 1]."""
    tiles = [n * k // 8 // block for n, k in linears] * layers
    return torch.tensor([0] + tiles, device=device).cumsum(0).to(torch.int32)


def reference(w: torch.Tensor, starts: torch.Tensor, phases: int, progs: int, block: int = BLOCK) -> torch.Tensor:
    """What ``_stream`` stores for the first ``phases`` phases, [phases, progs] (int32 arithmetic wraps)."""
    out = torch.zeros(phases, progs, dtype=torch.int64)
    tiles = w.view(-1, block).to(torch.int64).sum(1)
    for ph in range(phases):
        own = tiles[int(starts[ph]):int(starts[ph + 1])].cpu()
        sums = torch.zeros(progs, dtype=torch.int64)
        sums.index_add_(0, torch.arange(len(own)) % progs, own)
        out[ph] = sums + (out[ph - 1].roll(-1) if ph else 0)
        out[ph] = (out[ph] + 2**31) % 2**32 - 2**31
    return out.to(torch.int32)


def run(w, starts, out, counter, progs, plan: str, layers: int):
    """Launch one stack pass: ``launches``, ``layer`` or ``stack``, with ``+first`` for the tile loaded ahead."""
    first_ahead = plan.endswith("+first")
    kind = plan.split("+")[0]
    if kind == "launches":
        for ph in range(4 * layers):
            _stream[(progs,)](w, starts, out, counter, ph, 1, BLOCK=BLOCK, BARRIER=False, FIRST_AHEAD=False,
                              num_warps=8)
        return
    counter.zero_()
    if kind == "layer":
        for layer in range(layers):
            _stream[(progs,)](w, starts, out, counter[layer:], 4 * layer, 4, BLOCK=BLOCK, BARRIER=True,
                              FIRST_AHEAD=first_ahead, num_warps=8)
    else:
        _stream[(progs,)](w, starts, out, counter, 0, 4 * layers, BLOCK=BLOCK, BARRIER=True,
                          FIRST_AHEAD=first_ahead, num_warps=8)


def check_on_cpu() -> None:
    """Triton's interpreter runs programs one after another, so only barrier-free launches run here: one launch per
    phase with three programs, and all phases in one launch with one program, both against ``reference``."""
    linears, layers, block = [(64, 1024), (32, 1024), (96, 2048)], 2, 64
    starts = phase_starts(linears, layers, "cpu", block)
    phases = len(starts) - 1
    w = torch.randint(-2**31, 2**31 - 1, (int(starts[-1]) * block,), dtype=torch.int32)
    counter = torch.zeros(layers, dtype=torch.int32)
    for progs, count in ((3, 1), (1, phases)):
        out = torch.zeros(phases * progs, dtype=torch.int32)
        for first in range(0, phases, count):
            _stream[(progs,)](w, starts, out, counter, first, count, BLOCK=block, BARRIER=False,
                              FIRST_AHEAD=count > 1)
        assert torch.equal(out.view(-1, progs), reference(w, starts, phases, progs, block)), (progs, count)
    print("ok")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?")
    parser.add_argument("--models", nargs="+", default=list(LINEARS))
    parser.add_argument("--occupancy", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--budget-s", type=float, default=150)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check or os.environ.get("TRITON_INTERPRET") == "1":
        check_on_cpu()
        return
    from benchmarks.common import copy_bandwidth, graphed_us

    deadline = time.monotonic() + args.budget_s
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bw = copy_bandwidth("cuda", 1 << 30)["bandwidth_Bps"]
    rows = []
    for model in args.models:
        linears, layers = LINEARS[model]
        starts = phase_starts(linears, layers, "cuda")
        w = torch.randint(-2**31, 2**31 - 1, (int(starts[-1]) * BLOCK,), dtype=torch.int32, device="cuda")
        counter = torch.zeros(layers, dtype=torch.int32, device="cuda")
        nbytes = w.numel() * 4
        for occ in args.occupancy:
            progs = sms * occ
            out = torch.zeros(4 * layers * progs, dtype=torch.int32, device="cuda")
            run(w, starts, out, counter, progs, "launches", layers)
            expected = out.clone()
            first = reference(w[:int(starts[4]) * BLOCK], starts[:5], 4, progs).cuda()
            row = {"model": model, "layers": layers, "GB": round(nbytes / 1e9, 3), "programs": progs,
                   "copy_TBps": round(bw / 1e12, 3), "torch_agrees": torch.equal(expected.view(-1, progs)[:4], first)}
            for plan in ("launches", "layer", "layer+first", "stack", "stack+first"):
                if time.monotonic() > deadline:
                    break
                out.zero_()
                run(w, starts, out, counter, progs, plan, layers)
                same = torch.equal(out, expected)
                us = graphed_us(lambda: run(w, starts, out, counter, progs, plan, layers), launches=1, replays=10)
                row[plan] = {"ms": round(us / 1e3, 3), "TBps": round(nbytes / us / 1e6, 3), "same": same}
            print(json.dumps(row), flush=True)
            rows.append(row)
            del out
        del w
        torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                              "triton": triton.__version__, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
