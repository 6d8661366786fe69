"""The autoregressive baseline as a drafter: an empty draft, so each step is one target decode."""

from __future__ import annotations

from dataclasses import dataclass

from specbench.decoding.draft import Draft
from specbench.decoding.drafter import Drafter
from specbench.drafters.registry import DrafterConf, register


class NoDrafter(Drafter):
    name = "none"
    reads_hidden = False

    def propose(self, tokens, room):
        return Draft.empty()


@dataclass
class NoneConf(DrafterConf):
    name: str = "none"

    def step_shape(self):
        return 1, ("causal",), 0, 1


register(NoneConf, lambda conf, ctx, parts: NoDrafter(ctx))
