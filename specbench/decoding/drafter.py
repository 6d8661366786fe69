"""The drafter interface the decoding loop drives, and what every drafter may use (``DraftContext``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable

import torch

from specbench.decoding.acceptance import accept
from specbench.decoding.draft import Draft
from specbench.decoding.sampling import SamplingParams
from specbench.decoding.session import ModelSession


@dataclass
class DraftContext:
    """What every drafter may use: the target's session, the sampling settings and the random stream."""

    target: ModelSession
    sampling: SamplingParams
    generator: torch.Generator | None = None
    acceptor: Callable = accept  # how a drafter that verifies internally (HierSpec) accepts its own drafts


class Drafter(ABC):
    """Proposes a draft each step and keeps its own state (KV cache, features) in step with the target."""

    name = "base"
    target_features: tuple[int, ...] = ()  # target layers whose inputs its forwards must also return (EAGLE-3)
    reads_hidden = True  # False: ``observe`` gets no hidden states after a verify (nothing is gathered for it)
    drafts_on_device = False  # True: ``propose_on_device`` drafts from a commit left on the device (``DeviceLoop``)
    device_depth = 0  # with drafts_on_device: the most nodes one path of its tree holds
    device_tree_size = 0  # with drafts_on_device: the cache slots a step needs past its start besides ``depth``
    device_count_on_host = False  # drafting needs the last step's accepted count on the host (``DeviceCommit.host_count``)

    def __init__(self, ctx: DraftContext):
        self.ctx = ctx
        self.device_loops: dict = {}  # its ``DeviceLoop`` per (target, acceptance): graphs kept across generations

    def reset(self) -> None:
        """Forget the previous sequence (a new prompt follows)."""

    def observe(self, tokens: list[int], hidden: torch.Tensor, start: int) -> None:
        """The target committed ``tokens``; ``hidden`` are its final-norm states at positions ``start…`` (after a
        verify, ``None`` for a drafter that does not read them).

        Called after the target's prefill (``start = 0``) and after every verify step.
        """

    @abstractmethod
    def propose(self, tokens: list[int], room: int) -> Draft:
        """A draft of at most ``room`` nodes that continues the committed ``tokens``."""

    def propose_on_device(self, commit, tokens: list[int]) -> torch.Tensor:
        """The draft tree [3, m] (tokens, parents, a NaN count) continuing ``commit`` (a ``DeviceCommit``), built
        without reading anything back to the host; right after ``observe`` of the prompt ``commit`` is None and
        ``tokens`` (the prompt and the first token) is what the step continues."""
        raise NotImplementedError(f"drafter {self.name} drafts on the host")

    def confirm_on_device(self) -> torch.Tensor | None:
        """Called once the target's verify of the tree ``propose_on_device`` returned is enqueued: None when that tree
        stands, else the tree to verify instead. A drafter that guessed its tree's size to enqueue it before reading
        what it drafted (HierSpec under replayed acceptance) reads here, while the GPU runs the verify."""
        return None

    def drop_device_step(self) -> None:
        """The step a ``DeviceLoop`` enqueued past the end of a generation is dropped: undo what drafting it changed on
        the host (a replayed acceptance's step counter)."""

    def describe(self) -> dict:
        """Facts recorded in every result row besides the drafter's settings (``drafter.*`` columns)."""
        return {"drafter": self.name}
