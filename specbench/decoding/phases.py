"""Per-phase timing of a generation: CUDA events on a GPU, perf_counter after a synchronisation on a CPU.

Phases are recorded without synchronising the GPU inside the loop; ``collect`` synchronises once and turns
the events into milliseconds. Every recorded phase belongs to the current step.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager

import torch

PHASES = ("target_prefill", "drafter_prefill", "draft", "verify", "accept", "sample")


class PhaseTimer:
    def __init__(self, device: torch.device | str, enabled: bool = True, annotate: bool = False):
        """``annotate``: also mark each phase as a profiler range ``phase:<name>`` (for torch.profiler traces)."""
        self.cuda = torch.device(device).type == "cuda"
        self.enabled = enabled
        self.annotate = annotate
        self._pending: list[tuple[int, str, object, object]] = []
        self.step = -1  # -1: before the first decode step (prefill)

    def next_step(self) -> None:
        self.step += 1

    @contextmanager
    def phase(self, name: str):
        if self.annotate:
            with torch.profiler.record_function(f"phase:{name}"), self._timed(name):
                yield
        else:
            with self._timed(name):
                yield

    @contextmanager
    def _timed(self, name: str):
        if not self.enabled:
            yield
            return
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
        else:
            start = time.perf_counter()
            yield
            end = time.perf_counter()
        self._pending.append((self.step, name, start, end))

    def collect(self) -> dict[int, dict[str, float]]:
        """Milliseconds per step and phase (summed when a phase runs several times in a step)."""
        if self.cuda:
            torch.cuda.synchronize()
        out: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for step, name, start, end in self._pending:
            ms = start.elapsed_time(end) if self.cuda else (end - start) * 1e3
            out[step][name] += ms
        self._pending.clear()
        return {s: dict(p) for s, p in out.items()}


def synchronize(device: torch.device | str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
