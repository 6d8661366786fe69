"""The bytes one forward of a model must read from memory: its weights, for a bandwidth bound on the forward's time.

Every parameter and buffer counts once (a tied lm_head's weight once, as the lm_head), quantized weights as stored
(codes, scales, zero points). An input embedding table does not count: a forward reads only the rows of its tokens.
KV-cache reads are left out (the cache is not a module's tensor), so the bound is a floor for the forward's time.
"""

from __future__ import annotations

from itertools import chain
from typing import Iterable

from torch import nn


def forward_bytes(model: nn.Module, skip: Iterable[nn.Module] = ()) -> int:
    """Bytes of ``model``'s parameters and buffers, each once, less those only an ``nn.Embedding`` or a module of
    ``skip`` (with its submodules: layers a forward does not run) holds."""
    skipped = {id(m) for s in skip for m in s.modules()}
    seen: set[int] = set()
    total = 0
    for module in model.modules():
        if isinstance(module, nn.Embedding) or id(module) in skipped:
            continue
        for tensor in chain(module.parameters(recurse=False), module.buffers(recurse=False)):
            if id(tensor) not in seen:
                seen.add(id(tensor))
                total += tensor.numel() * tensor.element_size()
    return total
