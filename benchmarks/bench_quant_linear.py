"""Quantized-linear microbenchmark: agreement with ``reference`` and the M-sweep T(M)/T(1) per scheme x backend.

For Llama-3-8B and -70B, each distinct linear shape (q, k, v, o, gate, up, down) is timed with CUDA events over
CUDA-graph replays (median of >= 20) on enough weight copies to defeat L2 (cycled to ``tune.GRAPH_LAUNCHES`` launches
a graph at least), and the layer stack is approximated
as the per-shape sum times the layer count. Bandwidth at M=1 is compared with a device-to-device copy measured
in the same run. ``--smoke`` runs tiny shapes on CPU (reference and dense only) to check the script itself.

Time is bounded: each combination gets an equal share of what is left of ``--budget-s`` (unused time rolls
over), checked before every shape and M; a combination that runs out keeps the rows (M values) it finished, and
the JSON/Markdown are rewritten after every combination (and on SIGTERM). Compilation and autotuning happen in an
untimed warm-up call before each timing. gemlite runs in the autotune mode of ``SPECBENCH_GEMLITE_AUTOTUNE``
(``specbench.quantization.backends.gemlite``); in its default ``fast`` mode the config choice is the same in every
process, so ``--prewarm-workers`` processes first compile every (scheme, shape, M) kernel in parallel into
Triton's on-disk cache and the timing loop only loads them.

    python -m benchmarks.bench_quant_linear --out results/quant_linear   # from the repository root
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.common import copy_bandwidth, smoke_parser, tensor_bytes
from specbench.decoding.forward import DEFAULT_BUCKETS
from specbench.model import ModelConfig, load_hf_config
from specbench.quantization import (
    BACKENDS, QuantLinear, UnsupportedBackendError, get_scheme, quantize_rtn, save_gemlite_cache,
)
from specbench.quantization.backends import gemlite as gemlite_backend
from specbench.quantization.tune import MODELS, launch_cycle, model_shapes
from specbench.runner.environment import package_version, ptxas_version

MS = DEFAULT_BUCKETS  # the M of every decode / verify forward: the CUDA-graph buckets
TOLERANCE = 2e-2  # relative Frobenius error vs reference (bf16 compute, activation rounding ties)
OWN_TOLERANCE = {8: 5e-3, 4: 1e-2}  # specbench's own kernels (backend triton), by weight bits: the bounds
L2_DEFEAT_BYTES = 256 * 2**20
# (scheme, group size): defaults plus per-channel w4a8, the one gemlite runs with int8 activations
VARIANTS = [("w8a8_int8", -1), ("w8a8_fp8", -1), ("w8a16", -1), ("w4a16", 128), ("w4a8", 128), ("w4a8", -1),
            ("w4a8_fp8", 128)]
SMOKE_SHAPES = {"smoke": ([("q", 128, 128), ("down", 256, 128)], 2)}
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:7.1f} s] {msg}", flush=True)


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


def make_layer(scheme: str, group: int, backend: str, k: int, n: int, device: str, seed: int,
               sym: bool = True, dtype: torch.dtype = torch.bfloat16) -> torch.nn.Module:
    """One layer of random weights in activation dtype ``dtype``; ``sym=False``: 4-bit codes with zero points (AWQ,
    asymmetric GPTQ)."""
    if backend == "dense":
        return torch.nn.Linear(k, n, bias=False, device=device, dtype=dtype).requires_grad_(False)
    gen = torch.Generator(device=device).manual_seed(seed)
    w = torch.randn(n, k, device=device, generator=gen, dtype=dtype) * 0.02
    return QuantLinear(quantize_rtn(w, get_scheme(scheme), group, sym), None, backend, dtype)


def agreement(scheme: str, group: int, backend: str, device: str, sym: bool = True,
              dtype: torch.dtype = torch.bfloat16) -> dict:
    """Relative error of ``backend`` against ``reference`` on the same quantized weight, for a few M."""
    k, n = (256, 128) if device == "cpu" else (4096, 1024)
    gen = torch.Generator(device=device).manual_seed(0)
    qw = quantize_rtn(torch.randn(n, k, device=device, generator=gen) * 0.02, get_scheme(scheme), group, sym)
    fast, ref = QuantLinear(qw, None, backend, dtype), QuantLinear(qw, None, "reference", dtype)
    worst = 0.0
    for m in (1, 16, 128):
        x = torch.randn(m, k, device=device, generator=gen, dtype=dtype)
        with torch.no_grad():
            y, y_ref = fast(x).float(), ref(x).float()
        worst = max(worst, ((y - y_ref).norm() / y_ref.norm()).item())
    bound = OWN_TOLERANCE[qw.scheme.bits] if backend == "triton" else TOLERANCE
    return {"scheme": scheme, "group_size": group, "zero_points": not sym, "backend": backend,
            "dtype": str(dtype).removeprefix("torch."),
            "kernel": fast.info["kernel"], "autotune": fast.info.get("autotune"), "rel_error": worst, "tolerance": bound,
            "ok": worst <= bound}


def distinct_shapes(shapes) -> list[tuple[int, int]]:
    """(in_features, out_features) of ``shapes`` without repeats (q/o, k/v and gate/up share one), in order."""
    return list(dict.fromkeys((k, n) for _, k, n in shapes))


def sweep(scheme: str, group: int, backend: str, model: str, shapes, layers: int, ms, device: str, replays: int,
          copy_bw: float, deadline: float, rows: list[dict], sym: bool = True,
          dtype: torch.dtype = torch.bfloat16) -> str | None:
    """Append one row per M to ``rows`` as each M is done (stack time from per-shape times on L2-defeating
    copies); return why it stopped before the last M (``deadline`` passed), if it did. Each distinct shape is
    timed once and counted for every label it has."""
    keys = distinct_shapes(shapes)
    copies, size = {}, {}
    info = {"kernel": "F.linear (cuBLAS)", "packing": f"{str(dtype).removeprefix('torch.')} [N, K]", "autotune": None}
    for i, (k, n) in enumerate(keys):
        if time.monotonic() > deadline:
            return f"time share spent while building {model} layers"
        first = make_layer(scheme, group, backend, k, n, device, seed=i, sym=sym, dtype=dtype)
        size[k, n] = tensor_bytes(first)
        extra = min(63, L2_DEFEAT_BYTES // size[k, n]) if device == "cuda" else 0
        copies[k, n] = [first] + [make_layer(scheme, group, backend, k, n, device, seed=i, sym=sym, dtype=dtype)
                                    for _ in range(extra)]
        if isinstance(first, QuantLinear):
            info = {key: first.info.get(key) for key in info}
    total_bytes = sum(size[k, n] for _, k, n in shapes) * layers
    base = None
    for m in ms:
        per_key, launches, graphed, warm_s = {}, {}, True, 0.0
        for k, n in keys:
            if time.monotonic() > deadline:
                return f"time share spent at {model} M={m}"
            x = torch.randn(m, k, device=device, dtype=dtype)
            launched = launch_cycle(copies[k, n]) if device == "cuda" else copies[k, n]
            fn = lambda: [layer(x) for layer in launched]  # noqa: E731
            t_warm = time.monotonic()
            with torch.no_grad():
                fn()  # untimed: compiles / autotunes this shape at this M
                if device == "cuda":
                    torch.cuda.synchronize()
                warm_s += time.monotonic() - t_warm
                t, g = timed(fn, device, replays)
            per_key[k, n] = t / len(launched)
            launches[f"{k}x{n}"] = {"copies": len(copies[k, n]), "launches": len(launched)}
            graphed &= g
        per_shape = {label: per_key[k, n] for label, k, n in shapes}
        stack = sum(per_shape.values()) * layers
        base = base or stack
        row = {"model": model, "scheme": scheme, "group_size": group, "backend": backend, **info, "M": m,
               "dtype": str(dtype).removeprefix("torch."),
               "stack_ms": stack, "ratio_to_M1": stack / base, "per_shape_ms": per_shape, "graph": graphed,
               "timed_launches": launches,  # per shape: weight copies, and launches in each timed graph
               "weight_bytes": total_bytes, "zero_points": backend != "dense" and not sym}
        if backend == "gemlite":
            row["gemlite"] = {f"{k}x{n}": gemlite_backend.kernel_choice(copies[k, n][0].kernel, m) for k, n in keys}
        if backend == "triton":  # the launch config per shape and where it came from ("table h200" / "heuristic")
            row["triton"] = {f"{k}x{n}": dict(zip(("config", "source"), copies[k, n][0].kernel.config(m)))
                             for k, n in keys}
        row["roofline_ms"] = total_bytes / copy_bw * 1e3  # the layers' own bytes once, at copy bandwidth
        row["roofline_fraction"] = row["roofline_ms"] / stack
        if m == ms[0]:
            row["bandwidth_Bps"] = total_bytes / (stack / 1e3)
            row["bandwidth_vs_copy"] = row["bandwidth_Bps"] / copy_bw
        rows.append(row)
        log(f"  {model} M={m}: stack {stack:.3f} ms (x{stack / base:.2f}), warm-up {warm_s:.1f} s")
    return None


def _prewarm_one(task: tuple) -> tuple[tuple, float, str | None]:
    """(worker process) Build one layer and run it once at every M: compiles its kernels into Triton's disk cache."""
    scheme, group, backend, k, n, ms, device = task
    t0 = time.monotonic()
    try:
        layer = make_layer(scheme, group, backend, k, n, device, seed=0)
        with torch.no_grad():
            for m in ms:
                layer(torch.randn(m, k, device=device, dtype=torch.bfloat16))
        if device == "cuda":
            torch.cuda.synchronize()
        return task[:5], time.monotonic() - t0, None
    except UnsupportedBackendError:
        return task[:5], time.monotonic() - t0, "unsupported"
    except Exception as err:  # noqa: BLE001 - reported; the timing loop then compiles it itself
        return task[:5], time.monotonic() - t0, f"{type(err).__name__}: {err}"[:300]


def prewarm(tasks: list[tuple], workers: int, deadline: float) -> dict:
    """Run ``tasks`` in ``workers`` spawned processes until done or ``deadline``; the processes are ended before
    this returns, so nothing else runs on the GPU while the timing loop measures."""
    out = {"tasks": len(tasks), "workers": workers, "done": 0, "errors": [], "seconds": 0.0}
    t0 = time.monotonic()
    log(f"prewarm: {len(tasks)} (scheme, shape) compile tasks in {workers} processes")
    pool = multiprocessing.get_context("spawn").Pool(workers)
    try:
        results = pool.imap_unordered(_prewarm_one, tasks)
        for _ in tasks:
            left = deadline - time.monotonic()
            if left <= 0:
                out["errors"].append("prewarm deadline reached; the rest compiles in the timing loop")
                break
            try:
                what, seconds, err = results.next(timeout=left)
            except multiprocessing.TimeoutError:
                out["errors"].append("prewarm deadline reached; the rest compiles in the timing loop")
                break
            out["done"] += 1
            if err and err != "unsupported":
                out["errors"].append(f"{what}: {err}")
            log(f"  prewarm {out['done']}/{len(tasks)} {what[0]} g{what[1]} {what[3]}x{what[4]}: {seconds:.1f} s"
                + (f" ({err})" if err else ""))
    finally:
        pool.terminate()
        pool.join()
    out["seconds"] = time.monotonic() - t0
    return out


FAMILY_ABBR = {"GEMV": "GV", "GEMV_REVSPLITK": "GV-RS", "GEMV_SPLITK": "GV-SK", "GEMM_SPLITK": "GM-SK", "GEMM": "GM"}
SOURCE_CODE = {"cache": "C", "default": "D"}  # else "c": a cached config of the nearest M, "T": tuned here


def _source_code(source: str | None) -> str:
    if source is None:
        return "?"
    return SOURCE_CODE.get(source) or ("c" if source.startswith("cache") else "T")


def config_sources(rows: list[dict]) -> str:
    """Where a row group's configs came from: for the triton backend every source its shapes took at any M
    ("table h200", "heuristic", ...), else the first row's ``autotune``; notes in parentheses are dropped except a
    sibling GPU's ("(for h100)")."""
    found = dict.fromkeys(c["source"] for r in rows for c in r.get("triton", {}).values())
    labels = list(found) or [rows[0].get("autotune") or "-"]
    return " + ".join(dict.fromkeys(re.sub(r" \((?!for )[^)]*\)", "", label) for label in labels))


def markdown(result: dict) -> str:
    ms = result["Ms"]
    lines = [f"# Quantized linear M-sweep ({result['device']})", "",
             f"copy bandwidth {result['copy_bandwidth_Bps'] / 1e12:.2f} TB/s; stack = per-shape sum x layers; "
             "(x) = T(M)/T(1); - = not measured (time share spent)", "",
             "| model | scheme | backend | kernel | autotune | M=1 ms | " + " | ".join(f"M={m}" for m in ms[1:])
             + " | bw@M=1 vs copy |",
             "|" + "---|" * (len(ms) + 6)]
    by_key: dict[tuple, list[dict]] = {}
    for row in result["rows"]:
        label = f"{row['scheme']} g{row['group_size']}" + (" zero points" if row.get("zero_points") else "")
        by_key.setdefault((row["model"], label, row["backend"]), []).append(row)
    for (model, scheme, backend), rows in by_key.items():
        at, first = {r["M"]: r for r in rows}, rows[0]
        ratios = " | ".join(f"x{at[m]['ratio_to_M1']:.2f}" if m in at else "-" for m in ms[1:])
        bw = f"{first['bandwidth_vs_copy']:.0%}" if "bandwidth_vs_copy" in first else "-"
        lines.append(f"| {model} | {scheme} | {backend} | {first['kernel']} | {config_sources(rows)} | "
                     f"{first['stack_ms']:.3f} | {ratios} | {bw} |")
    gem = {key: rows for key, rows in by_key.items() if key[2] == "gemlite"}
    if gem:
        lines += ["", "gemlite kernel family per M (GV-RS GEMV_REVSPLITK, GV-SK GEMV_SPLITK, GM-SK GEMM_SPLITK, GM "
                  "GEMM) and config source per distinct shape (C cached, c cached at the nearest M, D gemlite "
                  "default preset, T tuned here)", "",
                  "| model | scheme | " + " | ".join(f"M={m}" for m in ms) + " |", "|" + "---|" * (len(ms) + 2)]
        for (model, scheme, _), rows in gem.items():
            at = {r["M"]: r["gemlite"] for r in rows}
            cells = []
            for m in ms:
                if m not in at:
                    cells.append("-")
                    continue
                families = sorted({FAMILY_ABBR.get(c["family"], c["family"]) for c in at[m].values()})
                cells.append("/".join(families) + " " + "".join(_source_code(c["config"]) for c in at[m].values()))
            lines.append(f"| {model} | {scheme} | " + " | ".join(cells) + " |")
    lines += ["", "| scheme | backend | rel. error vs reference | ok |", "|---|---|---|---|"]
    lines += [f"| {a['scheme']} g{a['group_size']}{' zero points' if a.get('zero_points') else ''} | {a['backend']} | "
              f"{a['rel_error']:.2e} | {a['ok']} |"
              for a in result["agreement"]]
    lines += [""] + [f"- skipped {s['scheme']} g{s['group_size']} x {s['backend']}: {s['reason']}"
                     for s in result["skipped"]]
    pre = result.get("gemlite", {}).get("prewarm")
    if pre:
        lines.append(f"- gemlite prewarm: {pre['done']}/{pre['tasks']} tasks in {pre['workers']} processes, "
                     f"{pre['seconds']:.0f} s" + "".join(f"; {e}" for e in pre["errors"][:5]))
    if "elapsed_s" in result:
        lines.append(f"- elapsed {result['elapsed_s']:.0f} s")
    return "\n".join(lines) + "\n"


def write(result: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "quant_linear.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "quant_linear.md").write_text(markdown(result))
    figure(result, out / "quant_linear.png")


def figure(result: dict, path: Path) -> None:
    """Stack ms against M on log axes per model, one line per scheme x backend, dashed roofline per bit width."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    models = list(dict.fromkeys(r["model"] for r in result["rows"]))
    if not models:
        return
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.5), squeeze=False)
    for ax, model in zip(axes[0], models):
        rows = [r for r in result["rows"] if r["model"] == model]
        lines: dict[tuple, list[dict]] = {}
        for r in rows:
            lines.setdefault((r["scheme"], r["group_size"], r["backend"]), []).append(r)
        roofs = {}
        for (scheme, group, backend), rs in lines.items():
            ax.plot([r["M"] for r in rs], [r["stack_ms"] for r in rs], marker="o", ms=3,
                    label=f"{scheme}{'' if group == -1 else f' g{group}'} {backend}")
            roofs.setdefault(scheme, rs[0]["roofline_ms"])
        for scheme, roof in roofs.items():
            ax.axhline(roof, ls="--", lw=0.8, color="gray")
            ax.text(result["Ms"][0], roof, f" roofline {scheme}", fontsize=7, va="bottom", color="gray")
        ax.set(xscale="log", yscale="log", xlabel="M (rows)", ylabel="linear stack ms", title=model)
        ax.legend(fontsize=7)
    fig.suptitle(f"{result['device']}, copy bandwidth {result['copy_bandwidth_Bps'] / 1e12:.2f} TB/s")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _stop(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through main's ``finally``, which writes what was measured


def main(argv: list[str] | None = None) -> dict:
    global T0
    parser = smoke_parser(__doc__, "tiny shapes on CPU, reference and dense only")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--backends", nargs="+", default=["triton", "torch", "fbgemm", "gemlite", "marlin"])
    parser.add_argument("--ms", nargs="+", type=int, default=None, help="M values (default: MS)")
    parser.add_argument("--schemes", nargs="+", default=None, help="only these schemes (default: all of VARIANTS)")
    parser.add_argument("--no-dense", action="store_true", help="leave out the 16-bit F.linear baseline")
    parser.add_argument("--zero-points", action="store_true", help="w4a16 weights with zero points (AWQ, "
                        "asymmetric GPTQ) instead of symmetric codes")
    parser.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16", help="activation dtype "
                        "(the SD loops run the W4A16 targets in float16, as the papers do)")
    parser.add_argument("--replays", type=int, default=20)
    parser.add_argument("--budget-s", type=float, default=420.0, help="skip what is left after this many seconds")
    parser.add_argument("--prewarm-workers", type=int, default=-1, help="processes that first compile gemlite's "
                        "kernels for every scheme, shape and M (fast autotune mode only; -1: one per spare CPU "
                        "core, at most 12; 0: off; with --smoke, >0 runs the reference layers that way as a check)")
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    T0 = t0 = time.monotonic()
    device = "cpu" if args.smoke else "cuda"
    if args.smoke:
        torch.set_num_threads(1)  # tiny matmuls: threads only contend
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA device; use --smoke for the CPU check")
    ms, replays = ((1, 2, 4, 8), 3) if args.smoke else (tuple(args.ms or MS), args.replays)
    models = SMOKE_SHAPES if args.smoke else {m: model_shapes(m) for m in args.models}
    backends = ["reference"] if args.smoke else [b for b in args.backends if b in BACKENDS]
    variants = [(s, g) for s, g in VARIANTS if args.schemes is None or s in args.schemes]
    sym = lambda scheme: not (args.zero_points and scheme == "w4a16")  # noqa: E731
    combos = [] if args.no_dense else [({"bfloat16": "bf16", "float16": "fp16"}[args.dtype], -1, "dense")]
    combos += [(s, g, b) for b in backends for s, g in variants if s in BACKENDS[b].schemes]
    copy_bw = copy_bandwidth(device, 4 * 2**30 if device == "cuda" else 2**24)["bandwidth_Bps"]
    result = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
              "triton": package_version("triton"), "ptxas": ptxas_version(),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "Ms": list(ms), "dtype": args.dtype, "copy_bandwidth_Bps": copy_bw, "budget_s": args.budget_s,
              "rows": [], "agreement": [],
              "skipped": []}
    gemlite_combos = [c for c in combos if c[2] == "gemlite"]
    if gemlite_combos:
        mode = gemlite_backend.autotune_mode()
        result["gemlite"] = {"autotune": mode, "autotune_doc": gemlite_backend.MODE_DOC[mode],
                             "tuning": gemlite_backend.TUNING}
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        # compile first, in parallel: fast-mode gemlite on the GPU (or, as a check, the smoke run's reference layers)
        fast_gemlite = device == "cuda" and result.get("gemlite", {}).get("autotune") == "fast"
        warm = [c for c in combos if (c[2] == "gemlite" and fast_gemlite)
                or (args.smoke and args.prewarm_workers > 0 and c[2] != "dense")]
        tasks = [(s, g, b, k, n, ms, device) for s, g, b in warm for shapes, _ in models.values()
                 for k, n in distinct_shapes(shapes)]
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        workers = min(12, max(1, cpus - 2)) if args.prewarm_workers < 0 else args.prewarm_workers
        if tasks and workers > 0:
            report = prewarm(tasks, min(workers, len(tasks)), t0 + 0.3 * args.budget_s)
            result.setdefault("gemlite", {})["prewarm"] = report
        for index, (scheme, group, backend) in enumerate(combos):
            what = {"scheme": scheme, "group_size": group, "backend": backend}
            now = time.monotonic()
            left = t0 + args.budget_s - now
            if left <= 0:
                result["skipped"].append({**what, "reason": f"time budget {args.budget_s:.0f} s spent"})
                log(f"skip {scheme} g{group} x {backend}: time budget spent")
                continue
            deadline = now + left / (len(combos) - index)  # an equal share of what is left
            log(f"{scheme} g{group} x {backend} (share {deadline - now:.1f} s)")
            try:
                if backend != "dense":
                    result["agreement"].append(agreement(scheme, group, backend, device, sym(scheme), dtype))
                    a = result["agreement"][-1]
                    log(f"  agreement with reference: rel. error {a['rel_error']:.2e} ({'ok' if a['ok'] else 'FAIL'})")
                for model, (shapes, layers) in models.items():
                    stop = sweep(scheme, group, backend, model, shapes, layers, ms, device, replays, copy_bw,
                                 deadline, result["rows"], sym(scheme), dtype)
                    if stop:
                        log(f"  {stop}")
                        result["skipped"].append({**what, "reason": f"partial: {stop}"})
                        break
            except UnsupportedBackendError as err:
                reason = str(err).split(". Combinations")[0]
                log(f"  skipped: {reason}")
                result["skipped"].append({**what, "reason": reason})
            except Exception as err:  # noqa: BLE001 - a kernel that fails is a result; keep the other rows
                reason = f"{type(err).__name__}: {str(err)[:300]}"
                log(f"  failed: {reason}")
                result["skipped"].append({**what, "reason": f"failed: {reason}"})
            if backend == "gemlite" and "gemlite" in sys.modules:
                try:
                    log(f"  gemlite config cache saved to {save_gemlite_cache()}")
                except Exception as err:  # noqa: BLE001
                    log(f"  gemlite config cache not saved: {err}")
            if device == "cuda":
                torch.cuda.empty_cache()
            result["elapsed_s"] = time.monotonic() - t0
            write(result, args.out)
    finally:
        signal.signal(signal.SIGTERM, previous)
        result["elapsed_s"] = time.monotonic() - t0
        write(result, args.out)
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
