"""The drafter interface and the registry that builds drafters by name."""

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

    def __init__(self, ctx: DraftContext):
        self.ctx = ctx

    def reset(self) -> None:
        """Forget the previous sequence (a new prompt follows)."""

    def observe(self, tokens: list[int], hidden: torch.Tensor, start: int) -> None:
        """The target committed ``tokens``; ``hidden`` are its final-norm states at positions ``start…``.

        Called after the target's prefill (``start = 0``) and after every verify step.
        """

    @abstractmethod
    def propose(self, tokens: list[int], room: int) -> Draft:
        """A draft of at most ``room`` nodes that continues the committed ``tokens``."""

    def describe(self) -> dict:
        """Settings recorded in every result row."""
        return {"drafter": self.name}


class NoDrafter(Drafter):
    """The autoregressive baseline: an empty draft, so each step is one target decode."""

    name = "none"

    def propose(self, tokens, room):
        return Draft.empty()


DRAFTERS: dict[str, Callable[..., Drafter]] = {"none": NoDrafter}


def register(name: str):
    def wrap(cls):
        DRAFTERS[name] = cls
        cls.name = name
        return cls

    return wrap


def build_drafter(name: str, ctx: DraftContext, **settings) -> Drafter:
    if name not in DRAFTERS:
        raise ValueError(f"unknown drafter {name!r}; available: {sorted(DRAFTERS)}")
    return DRAFTERS[name](ctx, **settings)
