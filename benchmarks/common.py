"""Helpers shared by the GPU benchmarks."""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

import torch

from specbench.decoding.graphs import GraphedCall
from specbench.timing.timer import time_calls


def tensor_bytes(module: torch.nn.Module) -> int:
    """Bytes of ``module``'s parameters and buffers, each shared tensor counted once."""
    tensors = {id(t): t for t in [*module.parameters(), *module.buffers()]}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def free(device: str) -> None:
    """Drop unreferenced tensors and return cached GPU memory between measurements."""
    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def copy_bandwidth(device: str, nbytes: int, replays: int = 20) -> dict:
    """Device-to-device copy of ``nbytes``: bytes read + written per second (median of ``replays``)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_(0, 255)
    dst = torch.empty_like(src)
    t = time_calls(lambda: dst.copy_(src), device, replays=replays, warmup=3)
    del src, dst
    free(device)
    return {"bytes": nbytes, "median_ms": t.median_ms, "bandwidth_Bps": 2 * nbytes / (t.median_ms / 1e3)}


def graphed_us(fn, launches: int = 20, replays: int = 20) -> float:
    """Median µs of one ``fn()`` on the GPU, from replays of a CUDA graph of ``launches`` back-to-back calls."""
    graphed = GraphedCall(lambda: [fn() for _ in range(launches)])
    graphed()
    return 1e3 * time_calls(graphed, "cuda", replays=replays, warmup=3).median_ms / launches


def smoke_parser(doc: str, smoke: str) -> argparse.ArgumentParser:
    """A benchmark's command line: ``--out`` (where results go) and ``--smoke`` (``smoke``: its CPU check)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--smoke", action="store_true", help=smoke)
    return parser


def busy_intervals(events) -> list[list[float]]:
    """The union of a profiler trace's device-activity intervals (µs), sorted; annotations are not activity."""
    from torch.autograd import DeviceType

    merged: list[list[float]] = []
    for start, end in sorted((e.time_range.start, e.time_range.end) for e in events
                             if e.device_type == DeviceType.CUDA and not e.name.startswith("phase:")):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
