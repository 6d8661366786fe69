"""Where a decode step's GPU time goes: the kernels of one graphed decode forward, grouped, per step.

Builds the Llama-3-8B shape (random bf16 weights, stacked projections, optionally the Triton GEMV and
``torch.compile``), captures the one-token forward as a CUDA graph, replays it under the profiler and prints each
kernel's calls and microseconds per step, the busy time and the idle gaps between kernels. Also times the
attention of one decode step alone (32 layers' worth, CUDA-graph replay) for each SDPA backend that accepts it.

    python -m benchmarks.profile_decode --out results/profile_decode [--gemv] [--compile]
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.common import busy_intervals
from specbench.config import EngineConf, ModelConf
from specbench.decoding.graphs import GraphedCall
from specbench.engine import Engine
from specbench.model import causal_mask
from specbench.timing.timer import time_calls


def kernel_table(prof, steps: int) -> tuple[list[dict], float, float]:
    """Per kernel name: calls and µs per step; plus busy and span µs per step."""
    from torch.autograd import DeviceType

    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    events = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    for e in events:
        rows[e.name][0] += 1
        rows[e.name][1] += e.time_range.end - e.time_range.start
    merged = busy_intervals(events)
    busy = sum(b - a for a, b in merged)
    span = merged[-1][1] - merged[0][0] if merged else 0.0
    table = sorted(({"kernel": k[:120], "calls": c / steps, "us": t / steps} for k, (c, t) in rows.items()),
                   key=lambda r: -r["us"])
    return table, busy / steps, span / steps


def profile_step(model, context: int, max_seq_len: int, steps: int, compile: bool, gemv: bool) -> dict:
    engine = Engine(EngineConf(compile=compile, gemv=gemv), device="cuda", dtype=torch.bfloat16, max_seq_len=max_seq_len)
    runner = engine.session(model).runner
    ids = torch.zeros(1, dtype=torch.long, device="cuda")
    pos = torch.full((1,), context, device="cuda")
    mask = causal_mask(context, 1, runner.total_slots, "cuda")
    runner(ids, pos, pos, mask)  # captures
    result = profiled(lambda: runner(ids, pos, pos, mask), steps)
    del runner
    return result


def by_position(prof, name: str, period: int) -> list[float]:
    """Mean µs of the kernels called ``name``, in launch order, at each position modulo ``period`` (a layer's
    linears: q/k/v, o, gate/up, down)."""
    from torch.autograd import DeviceType

    times = [e.time_range.end - e.time_range.start for e in sorted(
        (e for e in prof.events() if e.device_type == DeviceType.CUDA and e.name == name),
        key=lambda e: e.time_range.start)]
    return [sum(times[i::period]) / max(1, len(times[i::period])) for i in range(period)]


def profiled(fn, steps: int, repeated: tuple[str, int] | None = None) -> dict:
    """``fn``'s median replay time, and its kernels per call under the CUDA profiler; with ``repeated`` (kernel name,
    period), that kernel's mean µs per position (``by_position``)."""
    from torch.profiler import ProfilerActivity, profile

    step_ms = time_calls(fn, "cuda", replays=50, warmup=5).median_ms
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    table, busy, span = kernel_table(prof, steps)
    out = {"step_ms": step_ms, "busy_us": busy, "span_us": span, "kernels": table}
    if repeated:
        out["by_position_us"] = by_position(prof, *repeated)
    return out


def attention_alone(model, context: int, slots: int, n: int = 1) -> dict:
    """32 layers of one forward's SDPA (q [1, H, n, D] against the whole static cache, causal), per backend."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    c = model.config
    q = torch.randn(1, c.num_attention_heads, n, c.head_dim, dtype=torch.bfloat16, device="cuda")
    keys = [torch.randn(1, c.num_key_value_heads, slots, c.head_dim, dtype=torch.bfloat16, device="cuda")
            for _ in range(2 * c.num_hidden_layers)]
    mask = causal_mask(context, n, slots, "cuda")
    out = {}
    gqa = c.num_attention_heads != c.num_key_value_heads
    group = c.num_attention_heads // c.num_key_value_heads
    variants = (  # name, backend, keys limited to the valid prefix, K/V heads repeated before the call
        ("default", None, False, False), ("math", SDPBackend.MATH, False, False),
        ("efficient", SDPBackend.EFFICIENT_ATTENTION, False, False), ("cudnn", SDPBackend.CUDNN_ATTENTION, False, False),
        ("efficient, valid prefix", SDPBackend.EFFICIENT_ATTENTION, True, False),
        ("efficient, valid prefix, heads repeated", SDPBackend.EFFICIENT_ATTENTION, True, True),
        ("cudnn, valid prefix", SDPBackend.CUDNN_ATTENTION, True, False),
        ("flash (no mask, valid prefix)", SDPBackend.FLASH_ATTENTION, True, False))
    for name, backend, prefix, repeat in variants:
        def run():
            for i in range(c.num_hidden_layers):
                k, v, m = keys[2 * i], keys[2 * i + 1], mask
                if prefix:
                    k, v, m = k[:, :, : context + n], v[:, :, : context + n], m[..., : context + n]
                if repeat:
                    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
                if backend is SDPBackend.FLASH_ATTENTION:
                    F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)
                else:
                    F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=gqa and not repeat)
        try:
            with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
                graphed = GraphedCall(run)
                graphed()
                out[name] = time_calls(graphed, "cuda", replays=50, warmup=5).median_ms
        except Exception as err:  # noqa: BLE001 - a backend that refuses these inputs is reported
            out[name] = f"{type(err).__name__}: {str(err)[:200]}"
    return out


def profile_arguments(doc: str, max_seq_len: int) -> argparse.ArgumentParser:
    """The profilers' shared command line: output folder, model shape, cache size and profiled replays."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="llama-3-8b-instruct")
    parser.add_argument("--max-seq-len", type=int, default=max_seq_len)
    parser.add_argument("--steps", type=int, default=20)
    return parser


def main(argv=None) -> dict:
    parser = profile_arguments(__doc__, 448)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--gemv", action="store_true")
    parser.add_argument("--compile", action="store_true", help="also profile the torch.compile'd forward")
    args = parser.parse_args(argv)
    model = Engine(device="cuda", dtype=torch.bfloat16).model(ModelConf(args.model, shape_only=True))
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "settings": vars(args) | {"out": str(args.out)}}
    result["attention_ms"] = attention_alone(model, args.context, args.max_seq_len + 128)
    print("attention alone (32 layers, ms):", result["attention_ms"], flush=True)
    for compiled in (False, True) if args.compile else (False,):
        name = "compiled" if compiled else "eager kernels"
        result[name] = r = profile_step(model, args.context, args.max_seq_len, args.steps, compiled, args.gemv)
        print(f"\n{name}: step {r['step_ms']:.3f} ms, GPU busy {r['busy_us']:.0f} us, span {r['span_us']:.0f} us")
        for row in r["kernels"][:25]:
            print(f"  {row['us']:8.1f} us  {row['calls']:5.1f}x  {row['kernel']}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "profile_decode.json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
