"""Decode GEMV microbenchmark: specbench's Triton GEMV against cuBLAS (``F.linear``) at one token row.

For each distinct linear of a Llama-3 decode step (stacked q/k/v, o, stacked gate/up, down, LM head), a CUDA
graph runs the layer count's worth of distinct weights back to back (so nothing is served from L2) and is timed
with CUDA events (median of ``--replays``). Bandwidth = weight bytes read / time, beside a device-to-device copy
measured in the same run (bytes read + written). Also checks the outputs agree (relative error) and records the
configuration the autotuner chose for each shape.

    python -m benchmarks.bench_gemv --out results/bench_gemv      # on the GPU machine, about a minute
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.common import copy_bandwidth, free
from specbench.decoding.graphs import GraphedCall
from specbench.model import ModelConfig, gemv, load_hf_config
from specbench.timing.timer import time_calls

MODELS = {"llama-3-8b": "llama-3-8b-instruct", "llama-3-70b": "llama-3-70b-instruct"}


def decode_shapes(source: str) -> tuple[list[tuple[str, int, int]], int]:
    """(label, in_features, out_features) of the GEMVs of one decode step, and how many of each run per step."""
    c = ModelConfig.from_hf(load_hf_config(source))
    h, i = c.hidden_size, c.intermediate_size
    q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    layers = c.num_hidden_layers
    return [("qkv", h, q + 2 * kv), ("o", q, h), ("gate_up", h, 2 * i), ("down", i, h), ("lm_head", h, c.vocab_size)], layers


def time_stack(fn, x: torch.Tensor, weights: list[torch.Tensor], replays: int) -> float:
    """Median ms of one CUDA-graph replay of ``fn(x, w)`` for every ``w`` in ``weights``."""
    graphed = GraphedCall(lambda v: [fn(v, w) for w in weights])
    graphed(x)
    return time_calls(lambda: graphed(x), "cuda", replays=replays, warmup=5).median_ms


def bench_shape(label: str, k: int, n: int, copies: int, dtype: torch.dtype, replays: int) -> dict:
    weights = [torch.randn(n, k, dtype=dtype, device="cuda") / k**0.5 for _ in range(copies)]
    x = torch.randn(1, k, dtype=dtype, device="cuda")
    ref, ours = F.linear(x, weights[0]).float(), gemv.linear(x, weights[0]).float()  # autotunes this (N, K)
    rel_err = ((ours - ref).norm() / ref.norm()).item()
    nbytes = copies * n * k * x.element_size()
    row = {"shape": label, "in": k, "out": n, "copies": copies, "bytes": nbytes, "rel_err": rel_err,
           "config": str(gemv.tuned_kernel.cache.get((n, k), gemv.tuned_kernel.best_config))}
    for name, fn in (("cublas", F.linear), ("gemv", gemv.linear)):
        ms = time_stack(fn, x, weights, replays)
        row[f"{name}_ms"], row[f"{name}_Bps"] = ms, nbytes / (ms / 1e3)
    del weights
    free("cuda")
    return row


def markdown(result: dict) -> str:
    bw = result["bandwidth"]["bandwidth_Bps"]
    lines = [f"Copy bandwidth (read + write): {bw / 1e12:.2f} TB/s. {result['device']}, torch {result['torch']}, "
             f"triton {result['triton']}.", "",
             "| model | GEMV | N×K | per step | cuBLAS ms | GEMV ms | speedup | cuBLAS % of copy bw | GEMV % | rel err "
             "| config |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for model, rows in result["models"].items():
        total = {"cublas": 0.0, "gemv": 0.0}
        for r in rows:
            lines.append(f"| {model} | {r['shape']} | {r['out']}×{r['in']} | {r['copies']} | {r['cublas_ms']:.3f} | "
                         f"{r['gemv_ms']:.3f} | {r['cublas_ms'] / r['gemv_ms']:.2f}× | {r['cublas_Bps'] / bw:.0%} | "
                         f"{r['gemv_Bps'] / bw:.0%} | {r['rel_err']:.1e} | `{r['config']}` |")
            total["cublas"] += r["cublas_ms"]
            total["gemv"] += r["gemv_ms"]
        nbytes = sum(r["bytes"] for r in rows)
        lines.append(f"| {model} | **all** | | | {total['cublas']:.3f} | {total['gemv']:.3f} | "
                     f"{total['cublas'] / total['gemv']:.2f}× | {nbytes / (total['cublas'] / 1e3) / bw:.0%} | "
                     f"{nbytes / (total['gemv'] / 1e3) / bw:.0%} | | |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", nargs="+", default=["llama-3-8b"], choices=sorted(MODELS))
    parser.add_argument("--replays", type=int, default=50)
    parser.add_argument("--max-copies", type=int, default=32, help="cap on weight copies per shape (70B memory)")
    args = parser.parse_args(argv)
    if not gemv.available():
        raise SystemExit("bench_gemv needs a CUDA GPU and triton (pip install -e '.[gpu]')")
    import triton

    t0 = time.monotonic()
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "bandwidth": copy_bandwidth("cuda", 4 * 2**30), "models": {}}
    for model in args.models:
        shapes, layers = decode_shapes(MODELS[model])
        result["models"][model] = rows = []
        for label, k, n in shapes:
            copies = min(1 if label == "lm_head" else layers, args.max_copies)
            if label == "lm_head":
                copies = max(copies, 4)  # one LM head fits in L2 only partly; time several to read from HBM
            rows.append(bench_shape(label, k, n, copies, torch.bfloat16, args.replays))
            r = rows[-1]
            print(f"{model} {label}: cuBLAS {r['cublas_ms']:.3f} ms, GEMV {r['gemv_ms']:.3f} ms, err {r['rel_err']:.1e},"
                  f" {r['config']}", flush=True)
    result["elapsed_s"] = time.monotonic() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_gemv.json").write_text(json.dumps(result, indent=1))
    (args.out / "bench_gemv.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
