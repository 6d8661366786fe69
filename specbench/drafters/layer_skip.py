"""Self-drafting by the target with only some of its layers (Quasar Table 5's structural pruning).

The draft runs the kept layers over the target's own KV cache: committed slots hold full-model K/V, and the
slots the draft writes past the prefix are overwritten by the verify step. ``selection`` says which layers
are kept: ``uniform`` (evenly spread, first and last always kept), ``first`` (early exit) or ``last``.
"""

from __future__ import annotations

from dataclasses import dataclass

from specbench.config import require
from specbench.decoding.draft import Draft
from specbench.decoding.drafter import DraftContext, Drafter
from specbench.drafters.autoregressive import draft_chain
from specbench.drafters.draft_model import chain_shape
from specbench.drafters.registry import DrafterConf, register

SELECTIONS = ("uniform", "first", "last")


def kept_layers(num_layers: int, fraction: float, selection: str = "uniform") -> list[int]:
    keep = round(num_layers * fraction)
    if not 0 < fraction <= 1 or keep < 1:
        raise ValueError(f"layer_skip.keep_fraction={fraction} keeps no layer of {num_layers}; use a fraction in "
                         f"[{1 / num_layers:.3f}, 1]")
    if selection == "first":
        return list(range(keep))
    if selection == "last":
        return list(range(num_layers - keep, num_layers))
    if selection == "uniform":
        if keep == 1:
            return [0]
        return sorted({round(i * (num_layers - 1) / (keep - 1)) for i in range(keep)})
    raise ValueError(f"layer_skip.selection must be uniform, first or last (got {selection!r})")


@dataclass
class LayerSkipConf(DrafterConf):
    """The target with ``keep_fraction`` of its layers drafts ``num_tokens`` tokens for itself (Quasar Table 5)."""

    name: str = "layer_skip"
    keep_fraction: float = 0.5
    selection: str = "uniform"
    num_tokens: int = 5

    def check(self, prefix="drafter"):
        require(0 < self.keep_fraction <= 1, f"{prefix}.keep_fraction", self.keep_fraction, "a fraction in (0, 1]")
        require(self.selection in SELECTIONS, f"{prefix}.selection", self.selection, f"one of {SELECTIONS}")
        require(self.num_tokens >= 1, f"{prefix}.num_tokens", self.num_tokens, "an integer >= 1")

    def step_shape(self):
        return chain_shape(self.num_tokens)


class LayerSkipDrafter(Drafter):
    name = "layer_skip"
    reads_hidden = False

    def __init__(self, ctx: DraftContext, keep_fraction: float, selection: str, num_tokens: int):
        super().__init__(ctx)
        self.layers = kept_layers(ctx.target.model.config.num_hidden_layers, keep_fraction, selection)
        self.keep_fraction, self.selection, self.num_tokens = keep_fraction, selection, num_tokens

    def propose(self, tokens, room):
        target = self.ctx.target
        n = min(self.num_tokens, room)
        if n < 1:
            return Draft.empty()
        committed = target.length
        draft = draft_chain(target, tokens[-1:], n, self.ctx.sampling, self.ctx.generator, self.layers)
        target.truncate(committed)
        return draft

    def describe(self):
        return {"drafter": self.name, "layers_kept": len(self.layers)}


register(LayerSkipConf, lambda conf, ctx, parts: LayerSkipDrafter(ctx, conf.keep_fraction, conf.selection,
                                                                  conf.num_tokens))
