"""The decoding loop shared by autoregressive and speculative generation.

Each step: the drafter proposes a tree (empty for AR), the target verifies root + tree in one forward, the
acceptance rule picks a path and a bonus token, and target and drafter commit it. The first token comes
from the target's prefill. Accept lengths count the bonus token, so an AR step has length 1 and
``tau = (new_tokens - 1) / steps``.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from specbench.decoding.acceptance import Acceptance, accept
from specbench.decoding.device_loop import DeviceLoop, device_loop
from specbench.decoding.draft import Draft
from specbench.decoding.drafter import Drafter
from specbench.decoding.phases import PhaseTimer, synchronize
from specbench.decoding.replay import ReplayAcceptance
from specbench.decoding.sampling import SamplingParams
from specbench.decoding.session import ModelSession


@dataclass
class Generation:
    prompt_len: int
    tokens: list[int]  # new tokens, the prefill's first token included
    accept_lengths: list[int] = field(default_factory=list)  # committed tokens per step (bonus included)
    drafted: list[int] = field(default_factory=list)  # draft nodes per step
    draft_depths: list[int] = field(default_factory=list)
    stop_reason: str = "length"
    phase_ms: dict[int, dict[str, float]] = field(default_factory=dict)
    prefill_s: float = 0.0  # target and drafter prefill, wall clock
    decode_s: float = 0.0  # the decoding loop after the prefills, wall clock
    dropped_steps: int = 0  # steps the GPU ran past the end (``DeviceLoop``): their forwards are in no step
    decode_loop: str = "host"  # which loop ran the steps: "device" (``DeviceLoop``) or "host"
    reverified_steps: int = 0  # steps whose target verify ran twice: the drafter guessed its tree wrong
    # (``Drafter.confirm_on_device``); both verifies are in the step's phase times

    @property
    def gpu_steps(self) -> int:
        """Decoding steps the GPU ran: ``steps`` and the dropped ones (per-step counts of forwards divide by it)."""
        return self.steps + self.dropped_steps

    @property
    def steps(self) -> int:
        return len(self.accept_lengths)

    @property
    def tau(self) -> float:
        return sum(self.accept_lengths) / self.steps if self.steps else 1.0

    def add_step(self, committed: list[int], drafted: int, depth: int, max_new_tokens: int,
                 stop_ids: frozenset[int]) -> bool:
        """Record a step that committed ``committed`` (its path and bonus token), cut at ``max_new_tokens`` and after a
        stop id; True when the generation ends with it."""
        new = committed[: max_new_tokens - len(self.tokens)]
        stop_at = next((i for i, t in enumerate(new) if t in stop_ids), None)
        if stop_at is not None:
            new, self.stop_reason = new[: stop_at + 1], "eos"
        self.tokens += new
        self.accept_lengths.append(len(new))
        self.drafted.append(drafted)
        self.draft_depths.append(depth)
        return self.stop_reason == "eos" or len(self.tokens) >= max_new_tokens


def speculative_step(
    target: ModelSession,
    drafter: Drafter,
    tokens: list[int],
    sampling: SamplingParams,
    generator: torch.Generator | None,
    timer: PhaseTimer,
    acceptor: Callable[..., Acceptance] = accept,
) -> tuple[Draft, Acceptance]:
    """Draft after ``tokens``, verify, accept, and commit to target and drafter; appends to ``tokens``."""
    room = target.runner.max_seq_len - target.length - 1
    with timer.phase("draft"):
        draft = drafter.propose(tokens, room)
    with timer.phase("verify"):
        logits, hidden = target.verify(tokens[-1], draft)
    with timer.phase("accept"):
        result = acceptor(draft, logits, sampling, generator)
        start = target.length
        kept = target.commit(result.nodes, hidden if drafter.reads_hidden else None)
        tokens += result.tokens
        drafter.observe(tokens, kept, start)
    return draft, result


@torch.inference_mode()
def generate(
    target: ModelSession,
    drafter: Drafter,
    prompt: list[int],
    *,
    max_new_tokens: int,
    sampling: SamplingParams = SamplingParams(),
    stop_ids: frozenset[int] = frozenset(),
    generator: torch.Generator | None = None,
    timer: PhaseTimer | None = None,
    acceptor: Callable[..., Acceptance] = accept,
    on_device: bool | None = None,
) -> Generation:
    """Generate up to ``max_new_tokens`` after ``prompt``; ``acceptor`` replaces the acceptance rule (replay).
    ``on_device``: run the steps from the device (``DeviceLoop``) where the drafter and the acceptance allow; None:
    on a GPU only (on a CPU every kernel runs as it is enqueued, so the step run past the end would be timed)."""
    timer = timer or PhaseTimer(target.device, enabled=False)
    target.model.feature_layers = drafter.target_features  # another drafter built on this target may have reset it
    target.reset()
    drafter.reset()
    synchronize(target.device)
    t0 = time.perf_counter()
    with timer.phase("target_prefill"):
        logits, hidden = target.extend(prompt)
    with timer.phase("sample"):
        first = int(sampling.pick(logits, generator))
    tokens = list(prompt) + [first]
    out = Generation(len(prompt), [first])
    with timer.phase("drafter_prefill"):
        drafter.observe(tokens, hidden, 0)
    if first in stop_ids:
        out.stop_reason = "eos"
    synchronize(target.device)
    collecting = gc.isenabled()
    gc.disable()  # a collection inside the loop stalls the host while the GPU waits; garbage waits for the end
    try:
        t1 = time.perf_counter()
        replay, end = isinstance(acceptor, ReplayAcceptance), None
        if on_device is None:
            on_device = target.device.type == "cuda"
        if (on_device and out.stop_reason != "eos" and len(out.tokens) < max_new_tokens
                and DeviceLoop.usable(target, drafter, acceptor, sampling, len(prompt), max_new_tokens)):
            loop, out.decode_loop = device_loop(target, drafter, replay), "device"
            end = loop.run(tokens, out, max_new_tokens, stop_ids, timer, acceptor if replay else None)
        while out.stop_reason != "eos" and len(out.tokens) < max_new_tokens:
            timer.next_step()
            draft, result = speculative_step(target, drafter, tokens, sampling, generator, timer, acceptor)
            out.add_step(result.tokens, len(draft), max(draft.depths, default=0), max_new_tokens, stop_ids)
        synchronize(target.device)  # a dropped step ends here, after ``end``: the tokens were all on the host then
        out.prefill_s, out.decode_s = t1 - t0, (end or time.perf_counter()) - t1
    finally:
        if collecting:
            gc.enable()
    out.phase_ms = {step: phases for step, phases in timer.collect().items() if step < out.steps}
    return out
