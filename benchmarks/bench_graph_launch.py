"""What a CUDA-graph launch costs the host, and how much of it the GPU waits for, when the GPU starts idle.

The speculative loop synchronises with the GPU at least once per step, so every step's first graph launches onto
an idle GPU. For each graph this reports: its nodes by kind (``CUDAGraph.debug_dump``), the host time of
``replay()`` from idle (median of ``--repeats``), the wall time of one replay from idle to its end, and its GPU time
back to back (CUDA events): ``exposed = from-idle wall - GPU time`` is what a step pays for launching it.

Graphs: the Llama-3-8B one-token decode forward (random bf16 weights) uncompiled, compiled per layer and compiled
whole; and synthetic straight-line graphs of N one-element kernels, alone and with one memset node.

    python -m benchmarks.bench_graph_launch --out DIR
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

import torch

from specbench.config import EngineConf, ModelConf
from specbench.engine import Engine
from specbench.model import causal_mask
from specbench.timing.timer import time_calls


def node_kinds(graph: torch.cuda.CUDAGraph) -> dict[str, int] | str:
    """Nodes of a captured graph by kind, from its DOT dump (captured in debug mode), or why there is none."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "graph.dot"
        try:
            graph.debug_dump(str(path))
            text = path.read_text()
        except (RuntimeError, OSError) as err:
            return f"no dump: {type(err).__name__}: {err}"
    kinds: dict[str, int] = {}
    for kind in re.findall(r"\b(KERNEL|MEMSET|MEMCPY|EVENT_RECORD|EVENT_WAIT|HOST|EMPTY|CONDITIONAL)\b", text):
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def launch_cost(replay, repeats: int) -> dict:
    """Host time of ``replay()`` and wall time to its end, each from an idle GPU; GPU time back to back."""
    host, wall = [], []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        replay()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append(1e3 * (t1 - t0))
        wall.append(1e3 * (t2 - t0))
    gpu = time_calls(replay, "cuda", replays=repeats, warmup=3).median_ms
    out = {"host_launch_ms": statistics.median(host), "wall_from_idle_ms": statistics.median(wall), "gpu_ms": gpu}
    out["exposed_ms"] = out["wall_from_idle_ms"] - gpu
    return out


def captured(fn) -> torch.cuda.CUDAGraph:
    """``fn`` captured in debug mode (so its nodes can be dumped) after two warm-up calls."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn(), fn()
    torch.cuda.current_stream().wait_stream(stream)
    try:
        graph = torch.cuda.CUDAGraph(keep_graph=True)  # the captured graph outlives instantiation: it can be dumped
    except TypeError:
        graph = torch.cuda.CUDAGraph()
    graph.enable_debug_mode()
    with torch.cuda.graph(graph):
        fn()
    return graph


def decode_graph(model, compile: bool, scope: str | None, context: int, max_seq_len: int):
    engine = Engine(EngineConf(cuda_graphs=False, compile=compile, compile_scope=scope), device="cuda",
                    dtype=torch.bfloat16, max_seq_len=max_seq_len)
    runner = engine.session(model).runner
    ids = torch.zeros(1, dtype=torch.long, device="cuda")
    pos = torch.full((1,), context, device="cuda")
    mask = causal_mask(context, 1, runner.total_slots, "cuda")
    return captured(lambda: runner(ids, pos, pos, mask)), runner


def synthetic_graph(kernels: int, memset: bool) -> torch.cuda.CUDAGraph:
    x = torch.zeros(1, device="cuda")
    buf = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")

    def fn():
        for i in range(kernels):
            x.add_(1)
            if memset and i == kernels // 2:
                buf.zero_()

    return captured(fn)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="llama-3-8b-instruct")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--context", type=int, default=384)
    args = parser.parse_args(argv)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "graphs": []}

    def record(name, graph, **extra):
        row = {"graph": name, **extra, "nodes": node_kinds(graph), **launch_cost(graph.replay, args.repeats)}
        result["graphs"].append(row)
        print(json.dumps(row), flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_graph_launch.json").write_text(json.dumps(result, indent=1))

    for kernels in (100, 400, 1600):
        for memset in (False, True):
            record(f"{kernels} one-element kernels" + (" + a memset" if memset else ""),
                   synthetic_graph(kernels, memset))
    model = Engine(device="cuda", dtype=torch.bfloat16).model(ModelConf(args.model, shape_only=True))
    for compile, scope, name in ((False, None, "uncompiled"), (True, "layer", "compiled per layer"),
                                 (True, None, "compiled whole")):
        graph, runner = decode_graph(model, compile, scope, args.context, args.context + 64)
        record(f"{args.model} decode forward, {name}", graph)
        del graph, runner
        torch.cuda.empty_cache()
    return result


if __name__ == "__main__":
    main()
