"""EAGLE-3 drafting: EAGLE-2's dynamic tree (``EagleDrafter``) over an EAGLE-3 head (``eagle3_head``).

The head makes the target return its three feature layers' states with every forward and reads those instead
of the final-norm states; the tree expansion, selection and cache handling are EAGLE-2's. EAGLE-3's paper
settings: top-k 10, depth 8, 60 verified tokens (Llama-3.1-8B) / 48 (Llama-3.3-70B).
"""

from __future__ import annotations

from specbench.drafters.base import DraftContext, register
from specbench.drafters.eagle import EagleDrafter
from specbench.drafters.eagle3_head import Eagle3Head


@register("eagle3")
class Eagle3Drafter(EagleDrafter):
    def __init__(self, ctx: DraftContext, head: Eagle3Head, topk: int = 10, depth: int = 8, tree_size: int = 60):
        if not isinstance(head, Eagle3Head):
            raise TypeError(f"drafter eagle3 needs an EAGLE-3 head, not {type(head).__name__}: use drafter=eagle")
        super().__init__(ctx, head, topk, depth, tree_size)
