"""The autoregressive baseline as a drafter: an empty draft, so each step is one target decode (from the device too:
``DeviceLoop`` then decodes without a host sync per token)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench.decoding.draft import Draft
from specbench.decoding.drafter import Drafter
from specbench.drafters.registry import DrafterConf, register


class NoDrafter(Drafter):
    name = "none"
    reads_hidden = False
    drafts_on_device = True  # every step verifies the root alone: the device loop decodes without waiting for the host
    device_tree_size = 1

    def __init__(self, ctx):
        super().__init__(ctx)
        self._empty = torch.zeros(3, 0, dtype=torch.long, device=ctx.target.device)

    def propose(self, tokens, room):
        return Draft.empty()

    def propose_on_device(self, commit, tokens):
        return self._empty


@dataclass
class NoneConf(DrafterConf):
    name: str = "none"

    def step_shape(self):
        return 1, ("causal",), 0, 1


register(NoneConf, lambda conf, ctx, parts: NoDrafter(ctx))
