"""Eq. (1) from probes of exactly a run's forwards: the CUDA graphs its decoding steps replayed, replayed alone.

With CUDA graphs on, every forward of a decoding step is a ``GraphedCall`` replay: the target's verify of n tokens,
an EAGLE head's first pass and its expansion graph, a draft model's or a HierSpec intermediate's forwards.
``decode_replays`` counts each graph's replays over a generation, less those of a one-token generation of the same
prompt (its prefill); ``step_time`` replays each counted graph alone (CUDA events, after warm-up, on the inputs it
last received) and sums count x time per step. That sum is ``d * T_d + T_v(n)`` of Eq. (1) (``analysis/eq1.py``)
measured in isolation, so ``tau / step_time`` is the speed Eq. (1) predicts for the run. Eager work between the
graphs (acceptance, the n-gram lookup, cache compaction, input staging) and host time the GPU waits for are not in
it: the measured speed falls short of the prediction by exactly what they cost. Each term also carries the bytes its
graph must read (``model.footprint``), for its bound at a measured bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from specbench.decoding.generate import Generation
from specbench.decoding.graphs import GraphedCall, counting_replays
from specbench.timing.timer import time_calls


@dataclass(frozen=True)
class GraphTerm:
    label: str  # what the graph runs (GraphedCall.label)
    replays_per_step: float
    median_ms: float  # one isolated replay
    bytes_read: int = 0  # what one replay must read (GraphedCall.reads); 0 = not counted

    @property
    def ms_per_step(self) -> float:
        return self.replays_per_step * self.median_ms

    def bound_ms(self, bandwidth_Bps: float) -> float | None:
        """One replay's time if it only read its ``bytes_read`` at ``bandwidth_Bps`` (None where not counted)."""
        return 1e3 * self.bytes_read / bandwidth_Bps if self.bytes_read else None


def decode_replays(generate: Callable[[int], Generation], new_tokens: int) -> tuple[dict[GraphedCall, int],
                                                                                     Generation]:
    """Replays of each graph in the decoding steps of ``generate(new_tokens)`` (a generation of that many new
    tokens), and that generation; ``generate(1)`` is the prefill whose replays are subtracted."""
    with counting_replays() as prefill:
        generate(1)
    with counting_replays() as full:
        gen = generate(new_tokens)
    return {g: n - prefill.get(g, 0) for g, n in full.items() if n > prefill.get(g, 0)}, gen


def step_time(replays: dict[GraphedCall, int], steps: int, device: torch.device | str, *, repeats: int = 50,
              warmup: int = 5) -> list[GraphTerm]:
    """Each graph's isolated replay time and replays per step, the most expensive per step first."""
    if steps < 1:
        raise ValueError("a generation with no decoding step has no step time")
    terms = []
    for call, count in replays.items():
        timing = time_calls(call.graph.replay, device, replays=repeats, warmup=warmup)
        terms.append(GraphTerm(call.label or "unnamed graph", count / steps, timing.median_ms, call.reads))
    return sorted(terms, key=lambda t: -t.ms_per_step)
