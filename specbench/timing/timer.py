"""Timing repeated calls: CUDA events between back-to-back calls on a GPU, perf_counter on a CPU."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch


@dataclass
class Timing:
    median_ms: float
    p10_ms: float
    p90_ms: float
    mean_ms: float
    replays: int
    timer: str

    @classmethod
    def of(cls, samples_ms: Sequence[float], timer: str) -> "Timing":
        a = np.asarray(samples_ms, dtype=np.float64)
        p10, med, p90 = np.percentile(a, [10, 50, 90])
        return cls(float(med), float(p10), float(p90), float(a.mean()), int(a.size), timer)


def time_calls(fn: Callable[[], object], device: torch.device | str, *, replays: int = 100, warmup: int = 10) -> Timing:
    """Time ``replays`` calls of ``fn`` after ``warmup`` untimed ones.

    CUDA: the calls are queued back to back with an event recorded after each, and call i's time is the interval
    between events i and i+1 (GPU time, as long as the host enqueues faster than the GPU runs). CPU: perf_counter
    around each call.
    """
    if replays < 1:
        raise ValueError("replays must be >= 1")
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(replays + 1)]
        events[0].record()
        for i in range(replays):
            fn()
            events[i + 1].record()
        events[-1].synchronize()
        samples = [events[i].elapsed_time(events[i + 1]) for i in range(replays)]
        return Timing.of(samples, "cuda_events")
    samples = []
    for _ in range(replays):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return Timing.of(samples, "perf_counter")
