"""Where the W4A16 kernel's time goes on one GPU: its time per shape and M beside a streaming floor, for ncu.

For each [N, K] weight (g128) and M it times the committed table's config (CUDA-graph replays over enough weight
copies to defeat L2, as ``tune`` does) and a Triton kernel that only reads the same packed bytes (16-byte loads,
the best of a few tilings): the floor one kernel of that size can reach. ``--ncu`` instead runs each kernel twice
untimed, for ``ncu --kernel-name w4a16_kernel``. ``--waves T0 T1 STEP`` times the table's config for each shape
on narrower copies of its weight, T0 … T1 column tiles in steps of STEP (N = tiles × BN), beside the streaming read
of the same columns: a staircase in the kernel's time against tiles, where the stream's is a line, is wave quantization.

    python -m benchmarks.profile_int4 --shapes 28672x4096 6144x4096 57344x8192 --ms 1 16 64 [--ncu] [--out DIR]
    python -m benchmarks.profile_int4 --shapes 57344x8192 --ms 1 --waves 64 448 8 --out DIR
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

from specbench.quantization import kernel_table
from specbench.quantization.int4_kernel import launch
from specbench.quantization.splitk import tile_counters
from specbench.quantization.tune import L2_DEFEAT_BYTES, random_weight, time_config


@triton.jit
def _xor(a, b):
    return a ^ b


@triton.jit
def _stream_kernel(w_ptr, out_ptr, rows_per, N, BR: tl.constexpr, BN: tl.constexpr):
    """XOR of a [rows_per, BN] slab of int32 words into ``out`` (so the loads are not dead)."""
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    r0 = tl.program_id(1) * rows_per
    acc = tl.zeros((BR, BN), dtype=tl.int32)
    for r in range(r0, r0 + rows_per, BR):
        acc ^= tl.load(w_ptr + (r + tl.arange(0, BR))[:, None].to(tl.int64) * N + cols[None, :],
                       eviction_policy="evict_first")
    tl.atomic_xor(out_ptr + cols, tl.reduce(acc, 0, _xor))


def stream_floor(n: int, k: int, copies: list[torch.Tensor], replays: int) -> tuple[float, dict]:
    """(ms, config) of the fastest streaming read of one [K/8, N] int32 weight."""
    out = torch.zeros(n, dtype=torch.int32, device="cuda")
    best = (float("inf"), {})
    for bn, br, split, warps in itertools.product((128, 256, 512), (8, 16, 32), (1, 2, 4, 8, 16), (4, 8)):
        rows = k // 8
        if n % bn or rows % (split * br):
            continue
        if not 66 <= (n // bn) * split <= 16 * 132:
            continue
        grid = (n // bn, split)
        run = lambda w: _stream_kernel[grid](w, out, rows // split, n, BR=br, BN=bn, num_warps=warps)  # noqa: E731
        ms = time_config(run, copies, replays)
        if ms < best[0]:
            best = (ms, {"BN": bn, "BR": br, "split": split, "warps": warps})
    return best


def wave_sweep(n: int, k: int, group: int, m: int, tiles: range, replays: int) -> list[dict]:
    """The table config of [n, k] at M = ``m``, timed on [tiles × BN, k] weights, beside a streaming read of them."""
    cfg, source = kernel_table.choose(kernel_table.gpu_key(), n, k, group, m)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    out = torch.zeros(n, dtype=torch.int32, device="cuda")
    rows = []
    for t in tiles:
        nt = t * cfg.BN
        if nt > n:
            break
        nbytes = nt * k // 2 + nt * k // group * 2
        copies = [random_weight(nt, k, group, "cuda", s) for s in range(max(2, -(-L2_DEFEAT_BYTES // nbytes)))]
        counters = torch.zeros(tile_counters(nt, m, cfg) + 1, dtype=torch.int32, device="cuda")
        run = lambda w: launch(x, *w, None, counters, group, cfg)  # noqa: E731
        ms = time_config(run, copies, replays)
        grid = (nt // 128, 4)  # the stream read at one fixed tiling: BN 128, four K slabs, 16 rows per load
        read = lambda w: _stream_kernel[grid](w, out, k // 32, nt, BR=16, BN=128, num_warps=4)  # noqa: E731
        stream_ms = time_config(read, [w for w, _ in copies], replays)
        rows.append({"shape": f"{n}x{k}", "kernel": "w4a16", "M": m, "tiles": t, "programs": t * cfg.split, "N": nt,
                     "ms": ms, "stream_ms": stream_ms, "GBps": nbytes / ms / 1e6, "config": cfg.as_dict(),
                     "source": source})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", default=["28672x4096", "6144x4096", "57344x8192"])
    p.add_argument("--ms", nargs="+", type=int, default=[1])
    p.add_argument("--group", type=int, default=128)
    p.add_argument("--replays", type=int, default=30)
    p.add_argument("--ncu", action="store_true", help="run each kernel twice untimed (profile with ncu)")
    p.add_argument("--no-floor", action="store_true")
    p.add_argument("--waves", nargs=3, type=int, metavar=("T0", "T1", "STEP"),
                   help="time the table config on T0 … T1 column tiles (step STEP) of each shape, per M")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    rows = []
    for shape in args.shapes:
        n, k = map(int, shape.split("x"))
        if args.waves:
            t0, t1, step = args.waves
            for m in args.ms:
                rows += wave_sweep(n, k, args.group, m, range(t0, t1 + 1, step), args.replays)
            continue
        nbytes = n * k // 2 + n * k // args.group * 2
        copies = [random_weight(n, k, args.group, "cuda", s) for s in range(max(2, -(-L2_DEFEAT_BYTES // nbytes)))]
        if not args.ncu and not args.no_floor:
            ms, cfg = stream_floor(n, k, [w for w, _ in copies], args.replays)
            rows.append({"shape": shape, "kernel": "stream", "ms": ms, "GBps": n * k / 2 / ms / 1e6, "config": cfg})
            print(json.dumps(rows[-1]), flush=True)
        for m in args.ms:
            cfg, source = kernel_table.choose(kernel_table.gpu_key(), n, k, args.group, m)
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            counters = torch.zeros(tile_counters(n, m, cfg) + 1, dtype=torch.int32, device="cuda")
            run = lambda w: launch(x, *w, None, counters, args.group, cfg)  # noqa: E731
            if args.ncu:  # a compiling launch, then the one to profile
                for w in copies[:2]:
                    run(w)
                torch.cuda.synchronize()
                continue
            ms = time_config(run, copies, args.replays)
            rows.append({"shape": shape, "kernel": "w4a16", "M": m, "ms": ms, "GBps": nbytes / ms / 1e6,
                         "config": cfg.as_dict(), "source": source})
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "profile_int4.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
