"""Time the Triton w4a16 kernel's candidate configs for every linear shape of the shipped models; write the table.

    python -m specbench.quantization.tune --gpu h200 [--budget-s 300] [--out PATH] [--models llama-3-70b]
        [--buckets 1 16 64] [--groups 128]

For each (N, K, group kind) of Llama-3-8B/70B's linears and each M bucket, every candidate is timed on random
weights as CUDA-graph replays over enough weight copies to defeat L2 (median of ``--replays``); the fastest goes
into ``specbench/quantization/tables/<gpu>.json`` with its time and the heuristic's, so the table records what
it gained. Candidates are compiled first in parallel processes (Triton's disk cache). The table is rewritten
after every shape, so a run cut off by ``--budget-s`` keeps what it measured; shapes left out use the heuristic.
Entries of an existing table that this run does not time (other buckets, groups, models) are kept.
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
from pathlib import Path

import torch

from specbench.quantization import kernel_table
from specbench.quantization.formats import unpack_int32
from specbench.quantization.int4_kernel import KernelConfig, check_shape, counters_needed, launch

MODELS = {"llama-3-70b": "llama-3-70b-instruct", "llama-3-8b": "llama-3-8b-instruct"}
BUCKETS = (1, 16, 64, 4, 32, 128)  # tuned in this order, so a cut-off run has the main ones
GROUPS = (128, -1)  # g128 and per-channel
L2_DEFEAT_BYTES = 192 * 2**20
SPLITS = (1, 2, 4, 8, 16)


def model_shapes(name: str) -> tuple[list[tuple[str, int, int]], int]:
    """(label, in_features, out_features) of one decoder layer's linears, and the layer count."""
    from specbench.model import ModelConfig, load_hf_config

    c = ModelConfig.from_hf(load_hf_config(MODELS[name]))
    h, i = c.hidden_size, c.intermediate_size
    q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    shapes = [("q", h, q), ("k", h, kv), ("v", h, kv), ("o", q, h), ("gate", h, i), ("up", h, i), ("down", i, h)]
    return shapes, c.num_hidden_layers


def candidates(n: int, k: int, group: int, m: int, also: tuple[KernelConfig, ...] = ()) -> list[KernelConfig]:
    """Configs worth timing for this shape and M (the heuristic's first, then ``also``), each one that fits."""
    out = [kernel_table.heuristic(n, k, group, m), *also]
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
    grid = itertools.product(bms, (64, 128, 256), (128, 256), (4, 8), (3, 4))
    out += [KernelConfig("dot", bn, bk, s, BM=bm, warps=w, stages=st, DEQ=3)
            for bm, bn, bk, w, st in grid for s in splits if bm * bn <= 64 * 128 or w == 8]
    g = k if group == -1 else group
    fitting = [c for c in dict.fromkeys(out) if check_shape(n, k, g, c) is None]
    tiles = lambda c: -(-n // c.BN) * (1 if c.path == "gemv" else -(-m // c.BM))  # noqa: E731
    # keep grids between half a wave and eight waves of 132 SMs
    return [c for i, c in enumerate(fitting) if i == 0 or 66 <= tiles(c) * c.split <= 8 * 132]


def random_weight(n: int, k: int, group: int, device: str, seed: int) -> tuple:
    gen = torch.Generator(device=device).manual_seed(seed)
    packed = torch.randint(-2**31, 2**31 - 1, (k // 8, n), device=device, dtype=torch.int32, generator=gen)
    scales = (torch.rand(k // group, n, device=device, generator=gen) * 1e-2 + 1e-3).to(torch.bfloat16)
    return packed, scales


def time_config(cfg: KernelConfig, weights: list[tuple], x: torch.Tensor, group: int, counters: torch.Tensor,
                replays: int) -> float:
    """Median ms of one launch, from CUDA-graph replays over all ``weights``."""
    run = lambda: [launch(x, p, s, None, counters, group, cfg) for p, s in weights]  # noqa: E731
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


def rel_error(cfg: KernelConfig, n: int, k: int, group: int, m: int, asym: bool, seed: int = 1) -> float:
    """||kernel - fp32 dequantized matmul|| / ||reference|| on fresh random codes, scales and (asym) zero points."""
    packed, scales = random_weight(n, k, group, "cuda", seed)
    gen = torch.Generator(device="cuda").manual_seed(seed + 1)
    zeros = torch.randint(0, 16, scales.shape, device="cuda", generator=gen).to(scales.dtype) if asym else None
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    counters = torch.zeros(counters_needed(n, m, cfg) + 1, dtype=torch.int32, device="cuda")
    y = launch(x, packed, scales, zeros, counters, group, cfg).float()
    q = unpack_int32(packed, 4, 0).float()  # [K, N]
    z = 8.0 if zeros is None else zeros.float().repeat_interleave(group, 0)
    w = (q - z) * scales.float().repeat_interleave(group, 0)
    ref = x.float() @ w
    return ((y - ref).norm() / ref.norm()).item()


def _compile(cfgs: list[tuple[KernelConfig, int, int]]) -> int:
    """(worker) Run each config once on a small weight of the same group kind: fills Triton's disk cache."""
    done = 0
    for cfg, group_kind_k, m in cfgs:
        k = max(4096, 16 * cfg.BK)
        group = k if group_kind_k == -1 else group_kind_k
        n = 4 * cfg.BN
        p, s = random_weight(n, k, group, "cuda", 0)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        counters = torch.zeros(counters_needed(n, m, cfg) + 1, dtype=torch.int32, device="cuda")
        try:
            launch(x, p, s, None, counters, group, KernelConfig(**{**cfg.as_dict(), "split": min(cfg.split, 2)}))
            done += 1
        except Exception:  # noqa: BLE001 - the timing loop reports it
            pass
    torch.cuda.synchronize()
    return done


def prewarm(tasks: list[tuple], workers: int, deadline: float) -> None:
    """Compile ``tasks`` (config, group, M) in ``workers`` processes until ``deadline``."""
    chunks = [tasks[i::workers] for i in range(workers)]
    pool = multiprocessing.get_context("spawn").Pool(workers)
    try:
        result = pool.map_async(_compile, chunks)
        result.wait(max(0.0, deadline - time.monotonic()))
    finally:
        pool.terminate()
        pool.join()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", required=True, choices=kernel_table.GPUS)
    parser.add_argument("--out", type=Path, default=None, help="default: the committed table of --gpu; a new path "
                        "starts from the committed table's entries")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--buckets", nargs="+", type=int, default=list(BUCKETS))
    parser.add_argument("--groups", nargs="+", type=int, default=list(GROUPS), help="-1: per-channel")
    parser.add_argument("--deq", nargs="+", type=int, default=None, help="time only dot candidates with these DEQ "
                        "modes (besides the heuristic's config and the current entry), e.g. 3; default: all")
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=300.0)
    parser.add_argument("--workers", type=int, default=12, help="processes that compile candidates first")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    found = kernel_table.gpu_key()
    if found != args.gpu:
        parser.error(f"--gpu {args.gpu} but this process sees {torch.cuda.get_device_name() if found else 'no'} GPU")
    out = args.out or kernel_table.TABLES / f"{args.gpu}.json"
    keys = list(dict.fromkeys((n, k) for model in args.models for _, k, n in model_shapes(model)[0]))
    work = [(n, k, g, m) for g in args.groups for n, k in keys for m in args.buckets]
    table = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
             "triton": __import__("triton").__version__, "command": "python -m specbench.quantization.tune "
             + " ".join(sys.argv[1:] if argv is None else argv), "date": time.strftime("%Y-%m-%d"), "entries": {},
             "errors": []}
    base = out if out.exists() else kernel_table.TABLES / f"{args.gpu}.json"
    if base.exists():  # entries this run does not re-tune are kept, and auto's backend order and its source
        old = json.loads(base.read_text())
        table["entries"], table["backends"] = old.get("entries", {}), old.get("backends", {})
        if "backends_source" in old:
            table["backends_source"] = old["backends_source"]

    def timed_candidates(n: int, k: int, group: int, m: int) -> list[KernelConfig]:
        """The candidates, the current table entry among them (it competes again, so no run regresses); with
        ``--deq`` only those dot modes besides the heuristic's config and the entry."""
        entry = table["entries"].get(kernel_table.shape_key(n, k, group), {}).get(str(m))
        keep = (KernelConfig(**entry["config"]),) if entry else ()
        cands = candidates(n, k, group, m, keep)
        keep = (cands[0], *keep)
        return [c for c in cands if args.deq is None or c in keep or (c.path == "dot" and c.DEQ in args.deq)]

    tasks = list(dict.fromkeys((c, g, 1 if m == 1 else 16) for n, k, g, m in work
                               for c in timed_candidates(n, k, k if g == -1 else g, m)))
    tasks = list(dict.fromkeys((KernelConfig(**{**c.as_dict(), "split": min(c.split, 2)}), g, m) for c, g, m in tasks))
    if args.workers > 0:
        print(f"compiling {len(tasks)} candidates in {args.workers} processes", flush=True)
        prewarm(tasks, args.workers, t0 + 0.35 * args.budget_s)
    print(f"compiled in {time.monotonic() - t0:.0f} s", flush=True)
    weights_of: dict = {}
    for n, k, g, m in work:
        if time.monotonic() - t0 > args.budget_s:
            table["errors"].append(f"budget spent before {n}x{k} g{g} M={m}")
            break
        group = k if g == -1 else g
        if (n, k, group) not in weights_of:
            weights_of.clear()
            torch.cuda.empty_cache()
            copies = max(1, min(64, L2_DEFEAT_BYTES // (n * k // 2)))
            weights_of[n, k, group] = [random_weight(n, k, group, "cuda", i) for i in range(copies)]
        weights = weights_of[n, k, group]
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        key = kernel_table.shape_key(n, k, group)
        cands = timed_candidates(n, k, group, m)
        counters = torch.zeros(max(counters_needed(n, m, c) for c in cands) + 1, dtype=torch.int32, device="cuda")
        timed = []
        for cfg in cands:
            try:
                timed.append((time_config(cfg, weights, x, group, counters, args.replays), cfg))
            except Exception as err:  # noqa: BLE001 - a candidate that fails to compile/run is skipped
                table["errors"].append(f"{n}x{k} g{g} M={m} {cfg}: {type(err).__name__}: {str(err)[:120]}")
        if not timed:
            continue
        best_ms, best = min(timed, key=lambda t: t[0])
        heur_ms = timed[0][0] if timed[0][1] == cands[0] else None
        errors = [rel_error(best, n, k, group, mm, asym) for mm in {m, max(1, m - 1)} if best.path == "dot" or mm == 1
                  for asym in (False, True)]
        if max(errors) > 1e-2:
            table["errors"].append(f"{key} M={m} {best}: rel. error {max(errors):.2e} vs reference; not tabled")
            continue
        table["entries"].setdefault(key, {})[str(m)] = {
            "config": best.as_dict(), "ms": best_ms, "heuristic_ms": heur_ms, "candidates": len(timed),
            "GBps": (n * k / 2) / (best_ms * 1e-3) / 1e9, "rel_error": max(errors)}
        print(f"[{time.monotonic() - t0:6.0f} s] {key} M={m}: {best_ms * 1e3:.1f} us "
              f"({len(timed)} candidates; heuristic {heur_ms and heur_ms * 1e3:.1f} us) {best}", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(table, indent=1))
    table["elapsed_s"] = time.monotonic() - t0
    out.write_text(json.dumps(table, indent=1))
    return table


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
