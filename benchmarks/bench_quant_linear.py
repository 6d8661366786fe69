"""Quantized-linear microbenchmark: agreement with ``reference`` and the M-sweep T(M)/T(1) per scheme x backend.

For Llama-3-8B and -70B, each distinct linear shape (q, k, v, o, gate, up, down) is timed with CUDA events over
CUDA-graph replays (median of >= 20) on enough weight copies to defeat L2, and the layer stack is approximated
as the per-shape sum times the layer count. Bandwidth at M=1 is compared with a device-to-device copy measured
in the same run. ``--smoke`` runs tiny shapes on CPU (reference and dense only) to check the script itself.

    python -m benchmarks.bench_quant_linear --out results/quant_linear   # from the repository root
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.common import copy_bandwidth
from specbench.model import ModelConfig, load_hf_config
from specbench.quantization import (
    BACKENDS, QuantLinear, UnsupportedBackendError, get_scheme, quantize_rtn, save_gemlite_cache,
)

MS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128)
MODELS = {"llama-3-8b": "llama-3-8b-instruct", "llama-3-70b": "llama-3-70b-instruct"}
TOLERANCE = 2e-2  # relative Frobenius error vs reference (bf16 compute, activation rounding ties)
L2_DEFEAT_BYTES = 256 * 2**20
# (scheme, group size): defaults plus per-channel w4a8, the one gemlite runs with int8 activations
VARIANTS = [("w8a8_int8", -1), ("w8a8_fp8", -1), ("w8a16", -1), ("w4a16", 128), ("w4a8", 128), ("w4a8", -1)]
SMOKE_SHAPES = {"smoke": ([("q", 128, 128), ("down", 256, 128)], 2)}


def model_shapes(name: str) -> tuple[list[tuple[str, int, int]], int]:
    """(label, in_features, out_features) of one decoder layer's linears, and the layer count."""
    c = ModelConfig.from_hf(load_hf_config(MODELS[name]))
    h, i = c.hidden_size, c.intermediate_size
    q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    shapes = [("q", h, q), ("k", h, kv), ("v", h, kv), ("o", q, h), ("gate", h, i), ("up", h, i), ("down", i, h)]
    return shapes, c.num_hidden_layers


def timed(fn, device: str, replays: int) -> tuple[float, bool]:
    """Median milliseconds of ``fn``: CUDA-graph replays timed with events when possible, else eager."""
    for _ in range(3):
        fn()  # warm-up; also where Triton autotunes
    if device == "cpu":
        times = []
        for _ in range(replays):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times), False
    torch.cuda.synchronize()
    run, graphed = fn, True
    try:
        graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            fn()
        run = graph.replay
    except Exception as err:  # a kernel that cannot be captured is timed eagerly
        print(f"    graph capture failed ({type(err).__name__}: {err}); timing eagerly", flush=True)
        torch.cuda.synchronize()
        graphed = False
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), graphed


def module_bytes(module: torch.nn.Module) -> int:
    tensors = {id(t): t for t in [*module.parameters(), *module.buffers()]}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def make_layer(scheme: str, group: int, backend: str, k: int, n: int, device: str, seed: int) -> torch.nn.Module:
    if backend == "dense":
        return torch.nn.Linear(k, n, bias=False, device=device, dtype=torch.bfloat16).requires_grad_(False)
    gen = torch.Generator(device=device).manual_seed(seed)
    w = torch.randn(n, k, device=device, generator=gen, dtype=torch.bfloat16) * 0.02
    return QuantLinear(quantize_rtn(w, get_scheme(scheme), group), None, backend, torch.bfloat16)


def agreement(scheme: str, group: int, backend: str, device: str) -> dict:
    """Relative error of ``backend`` against ``reference`` on the same quantized weight, for a few M."""
    k, n = (256, 128) if device == "cpu" else (4096, 1024)
    gen = torch.Generator(device=device).manual_seed(0)
    qw = quantize_rtn(torch.randn(n, k, device=device, generator=gen) * 0.02, get_scheme(scheme), group)
    fast, ref = QuantLinear(qw, None, backend, torch.bfloat16), QuantLinear(qw, None, "reference", torch.bfloat16)
    worst = 0.0
    for m in (1, 16, 128):
        x = torch.randn(m, k, device=device, generator=gen, dtype=torch.bfloat16)
        y, y_ref = fast(x).float(), ref(x).float()
        worst = max(worst, ((y - y_ref).norm() / y_ref.norm()).item())
    return {"scheme": scheme, "group_size": group, "backend": backend, "rel_error": worst, "ok": worst <= TOLERANCE}


def sweep(scheme: str, group: int, backend: str, model: str, shapes, layers: int, ms, device: str, replays: int,
          copy_bw: float) -> list[dict]:
    """Per-M stack time from per-shape times on L2-defeating copies; one row per M."""
    per_shape: dict[int, dict[str, float]] = {m: {} for m in ms}
    total_bytes, graphed, info = 0, True, {"kernel": "F.linear (cuBLAS)", "packing": "bf16 [N, K]"}
    for i, (label, k, n) in enumerate(shapes):
        first = make_layer(scheme, group, backend, k, n, device, seed=i)
        size = module_bytes(first)
        total_bytes += size * layers
        extra = min(63, L2_DEFEAT_BYTES // size) if device == "cuda" else 0
        copies = [first] + [make_layer(scheme, group, backend, k, n, device, seed=i) for _ in range(extra)]
        if isinstance(first, QuantLinear):
            info = {key: first.info[key] for key in ("kernel", "packing")}
        for m in ms:
            x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
            with torch.no_grad():
                ms_, g = timed(lambda: [layer(x) for layer in copies], device, replays)
            per_shape[m][label] = ms_ / len(copies)
            graphed &= g
        del copies, first
    rows, base = [], None
    for m in ms:
        stack = sum(per_shape[m].values()) * layers
        base = base or stack
        row = {"model": model, "scheme": scheme, "group_size": group, "backend": backend, **info, "M": m,
               "stack_ms": stack, "ratio_to_M1": stack / base, "per_shape_ms": per_shape[m], "graph": graphed, "weight_bytes": total_bytes}
        if m == 1:
            row["bandwidth_Bps"] = total_bytes / (stack / 1e3)
            row["bandwidth_vs_copy"] = row["bandwidth_Bps"] / copy_bw
        rows.append(row)
    return rows


def markdown(result: dict) -> str:
    ms = result["Ms"]
    lines = [f"# Quantized linear M-sweep ({result['device']})", "",
             f"copy bandwidth {result['copy_bandwidth_Bps'] / 1e12:.2f} TB/s; stack = per-shape sum x layers; "
             "(x) = T(M)/T(1)", "",
             "| model | scheme | backend | kernel | M=1 ms | " + " | ".join(f"M={m}" for m in ms[1:])
             + " | bw@M=1 vs copy |",
             "|" + "---|" * (len(ms) + 5)]
    by_key: dict[tuple, list[dict]] = {}
    for row in result["rows"]:
        by_key.setdefault((row["model"], f"{row['scheme']} g{row['group_size']}", row["backend"]), []).append(row)
    for (model, scheme, backend), rows in by_key.items():
        ratios = " | ".join(f"x{r['ratio_to_M1']:.2f}" for r in rows[1:])
        lines.append(f"| {model} | {scheme} | {backend} | {rows[0]['kernel']} | {rows[0]['stack_ms']:.3f} | {ratios} | "
                     f"{rows[0]['bandwidth_vs_copy']:.0%} |")
    lines += ["", "| scheme | backend | rel. error vs reference | ok |", "|---|---|---|---|"]
    lines += [f"| {a['scheme']} g{a['group_size']} | {a['backend']} | {a['rel_error']:.2e} | {a['ok']} |"
              for a in result["agreement"]]
    lines += [""] + [f"- skipped {s['scheme']} g{s['group_size']} x {s['backend']}: {s['reason']}"
                     for s in result["skipped"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on CPU, reference and dense only")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--backends", nargs="+", default=["torch", "gemlite", "marlin"])
    parser.add_argument("--replays", type=int, default=20)
    parser.add_argument("--budget-s", type=float, default=420.0, help="skip what is left after this many seconds")
    args = parser.parse_args(argv)
    device = "cpu" if args.smoke else "cuda"
    if args.smoke:
        torch.set_num_threads(1)  # tiny matmuls: threads only contend
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA device; use --smoke for the CPU check")
    ms, replays = ((1, 2, 4, 8), 3) if args.smoke else (MS, args.replays)
    models = SMOKE_SHAPES if args.smoke else {m: model_shapes(m) for m in args.models}
    backends = ["reference"] if args.smoke else [b for b in args.backends if b in BACKENDS]
    combos = [("bf16", -1, "dense")] + [(s, g, b) for b in backends for s, g in VARIANTS if s in BACKENDS[b].schemes]
    t0 = time.monotonic()
    copy_bw = copy_bandwidth(device, 4 * 2**30 if device == "cuda" else 2**24)["bandwidth_Bps"]
    result = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
              "Ms": list(ms), "copy_bandwidth_Bps": copy_bw, "rows": [], "agreement": [], "skipped": []}
    for scheme, group, backend in combos:
        what = {"scheme": scheme, "group_size": group, "backend": backend}
        if time.monotonic() - t0 > args.budget_s:
            result["skipped"].append({**what, "reason": f"time budget {args.budget_s:.0f} s spent"})
            continue
        print(f"{scheme} g{group} x {backend}", flush=True)
        try:
            if backend != "dense":
                result["agreement"].append(agreement(scheme, group, backend, device))
            for model, (shapes, layers) in models.items():
                result["rows"] += sweep(scheme, group, backend, model, shapes, layers, ms, device, replays, copy_bw)
        except UnsupportedBackendError as err:
            reason = str(err).split(". Combinations")[0]
            print(f"  skipped: {reason}", flush=True)
            result["skipped"].append({**what, "reason": reason})
        if backend == "gemlite" and "gemlite" in sys.modules:
            save_gemlite_cache()
        if device == "cuda":
            torch.cuda.empty_cache()
    result["elapsed_s"] = time.monotonic() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "quant_linear.json").write_text(json.dumps(result, indent=1))
    (args.out / "quant_linear.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
