"""EAGLE-3 drafting: EAGLE-2's dynamic tree (``EagleDrafter``) over an EAGLE-3 head (``eagle3_head``).

The head makes the target return its three feature layers' states with every forward and reads those instead
of the final-norm states; the tree expansion, selection and cache handling are EAGLE-2's. EAGLE-3's paper
settings: top-k 10, depth 8, 60 verified tokens (Llama-3.1-8B) / 48 (Llama-3.3-70B).
"""

from __future__ import annotations

from dataclasses import dataclass

from specbench.decoding.drafter import DraftContext
from specbench.drafters.eagle import EagleConf, EagleDrafter
from specbench.drafters.eagle3_head import Eagle3Head
from specbench.drafters.registry import Parts, register


@dataclass
class Eagle3Conf(EagleConf):
    """EAGLE-3 head + EAGLE-2's dynamic tree; EAGLE-3 paper: k=10, d=8, n=60 (8B) / 48 (70B)."""

    name: str = "eagle3"
    head: str = "random"  # hub id (e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B), folder, or "random"
    depth: int = 8


class Eagle3Drafter(EagleDrafter):
    name = "eagle3"

    def __init__(self, ctx: DraftContext, head: Eagle3Head, topk: int, depth: int, tree_size: int):
        if not isinstance(head, Eagle3Head):
            raise TypeError(f"drafter eagle3 needs an EAGLE-3 head, not {type(head).__name__}: use drafter=eagle")
        super().__init__(ctx, head, topk, depth, tree_size)


def build(conf: Eagle3Conf, ctx: DraftContext, parts: Parts) -> Eagle3Drafter:
    head = parts.head(conf.head, ctx.target.model, "eagle3")
    return Eagle3Drafter(ctx, head, conf.topk, conf.depth, conf.tree_size)


register(Eagle3Conf, build)
