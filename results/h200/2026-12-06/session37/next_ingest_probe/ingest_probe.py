"""Session 37 (prepared): are the M = 64 low-bit kernels bound by what their SMs load from L2 rather than by DRAM?

At M = 64 every N tile of the W4A16 and W4A8 dot paths reads the whole [64, K] activation block again (from L2):
with the table's BN of 64-128, fp16 activations are 2-4x the int4 weight bytes (70B gate/up at M = 64: 235 MB of
weights, 470 MB of activation reads in 141 µs, ~5 TB/s into the SMs, against ~1.7 TB/s at M = 1 counting the same
way). This probe streams a weight-sized buffer from DRAM (past L2) and, beside it, re-reads a small
activation-sized buffer that stays in L2 (``.cg``: not L1), in the ratios the kernels have, and reports what the SMs
ingest per second. If DRAM + L2 ingest tops out near the kernels' ~5 TB/s, the M = 64 floors need fewer activation
re-reads (wider N tiles at the same registers, or a K slice of the activations kept in shared memory across several
N tiles), not faster dequantization.

    python ingest_probe.py OUT.json [--ratios 0 1 2 4] [--budget-s 120]
    TRITON_INTERPRET=1 python ingest_probe.py --check   # the CPU check of the sums (small buffers)
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

BLOCK = 2048  # int32 words per tile (8 KB)


@triton.jit
def _ingest(w_ptr, x_ptr, out_ptr, w_tiles, x_tiles, RATIO: tl.constexpr, BLOCK: tl.constexpr):
    """Program p sums W tiles p, p + P, ... (DRAM) and, for each, RATIO tiles of X (L2-resident, re-read cyclically)."""
    pid = tl.program_id(0)
    progs = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    for t in range(pid, w_tiles, progs):
        acc += tl.load(w_ptr + tl.cast(t, tl.int64) * BLOCK + offs, eviction_policy="evict_first")
        for r in tl.static_range(RATIO):
            xt = (t * RATIO + r) % x_tiles
            acc += tl.load(x_ptr + tl.cast(xt, tl.int64) * BLOCK + offs, cache_modifier=".cg")
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def run(w: torch.Tensor, x: torch.Tensor, ratio: int, programs: int, warps: int) -> torch.Tensor:
    out = torch.empty(programs, dtype=torch.int32, device=w.device)
    _ingest[(programs,)](w, x, out, w.numel() // BLOCK, x.numel() // BLOCK, RATIO=ratio, BLOCK=BLOCK, num_warps=warps)
    return out


def expected(w: torch.Tensor, x: torch.Tensor, ratio: int, programs: int) -> int:
    """The wrapped int32 total of every program's sum, from torch."""
    w_tiles, x_tiles = w.numel() // BLOCK, x.numel() // BLOCK
    total = w.view(w_tiles, BLOCK).long().sum()
    if ratio:
        per_tile = x.view(x_tiles, BLOCK).long().sum(1)
        idx = (torch.arange(w_tiles, device=w.device)[:, None] * ratio + torch.arange(ratio, device=w.device)) % x_tiles
        total = total + per_tile[idx].sum()
    return ((int(total) + 2**31) % 2**32) - 2**31


def wrapped_total(out: torch.Tensor) -> int:
    return ((int(out.long().sum()) + 2**31) % 2**32) - 2**31


def check() -> None:
    gen = torch.Generator().manual_seed(0)
    w = torch.randint(-2**31, 2**31 - 1, (37 * BLOCK,), generator=gen, dtype=torch.int32)
    x = torch.randint(-2**31, 2**31 - 1, (5 * BLOCK,), generator=gen, dtype=torch.int32)
    for ratio in (0, 1, 3):
        for programs in (4, 37, 50):
            assert wrapped_total(run(w, x, ratio, programs, 4)) == expected(w, x, ratio, programs), (ratio, programs)
    print("ok")


def main() -> None:
    from benchmarks.common import graphed_us

    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--ratios", nargs="+", type=int, default=[0, 1, 2, 4])
    parser.add_argument("--weight-mb", type=int, default=240)  # the 70B gate/up's int4 weight
    parser.add_argument("--x-mb", type=float, default=1.0)  # [64, 8192] fp16 activations
    parser.add_argument("--budget-s", type=float, default=120)
    args = parser.parse_args()
    t0 = time.monotonic()
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    w = torch.randint(-2**31, 2**31 - 1, (args.weight_mb * 2**20 // 4 // BLOCK * BLOCK,), device=dev, dtype=torch.int32)
    x = torch.randint(-2**31, 2**31 - 1, (int(args.x_mb * 2**20) // 4 // BLOCK * BLOCK,), device=dev, dtype=torch.int32)
    copy = torch.empty_like(w)
    copy_us = graphed_us(lambda: copy.copy_(w), launches=5)
    rows = []
    for ratio in args.ratios:
        best = None
        for per_sm, warps in ((2, 4), (4, 4), (8, 4), (4, 8)):
            if time.monotonic() - t0 > args.budget_s:
                break
            programs = per_sm * props.multi_processor_count
            assert wrapped_total(run(w, x, ratio, programs, warps)) == expected(w, x, ratio, programs)
            us = graphed_us(lambda: run(w, x, ratio, programs, warps), launches=5)
            dram, l2 = w.numel() * 4, w.numel() * 4 * ratio
            row = {"ratio": ratio, "programs": programs, "warps": warps, "us": round(us, 2),
                   "dram_TBps": round(dram / us / 1e6, 3), "l2_TBps": round(l2 / us / 1e6, 3),
                   "ingest_TBps": round((dram + l2) / us / 1e6, 3)}
            print(json.dumps(row), flush=True)
            best = row if best is None or row["us"] < best["us"] else best
        rows.append(best)
    result = {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__,
              "copy_TBps": round(2 * w.numel() * 4 / copy_us / 1e6, 3), "weight_MB": args.weight_mb,
              "x_MB": args.x_mb, "best": rows}
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    if os.environ.get("TRITON_INTERPRET") == "1":
        check()
    else:
        main()
