"""A draft: a tree of candidate tokens hanging off the last committed token (the root).

A sequence draft is the chain ``parents = [-1, 0, 1, …]``. Nodes are listed parents-first.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch


@dataclass
class Draft:
    """``tokens[i]`` is a candidate whose parent is node ``parents[i]`` (-1: the root).

    ``probs[i]`` is the distribution node i was *sampled* from; ``None`` means the proposals are
    deterministic functions of the context (n-gram, greedy or top-k drafting), which the verifier treats
    as point masses drawn without replacement among siblings.
    """

    tokens: list[int]
    parents: list[int]
    probs: torch.Tensor | None = None

    def __post_init__(self):
        if len(self.tokens) != len(self.parents):
            raise ValueError("a draft needs one parent per token")
        if any(not -1 <= p < i for i, p in enumerate(self.parents)):
            raise ValueError("draft nodes must be listed parents-first")

    @classmethod
    def chain(cls, tokens: list[int], probs: torch.Tensor | None = None) -> "Draft":
        return cls(list(tokens), list(range(-1, len(tokens) - 1)), probs)

    @classmethod
    def empty(cls) -> "Draft":
        return cls([], [])

    def __len__(self) -> int:
        return len(self.tokens)

    @cached_property
    def depths(self) -> list[int]:
        """Depth of each node below the root (children of the root have depth 1)."""
        depth: list[int] = []
        for p in self.parents:
            depth.append(1 if p < 0 else depth[p] + 1)
        return depth

    @cached_property
    def children(self) -> list[list[int]]:
        """Children of the root (entry 0) and of each node (entry i + 1), in draft order."""
        kids: list[list[int]] = [[] for _ in range(len(self) + 1)]
        for i, p in enumerate(self.parents):
            kids[p + 1].append(i)
        return kids

    def ancestors(self, device=None) -> torch.Tensor:
        """[n, n] mask over root + nodes: True where column j is row i itself or an ancestor of it."""
        return torch.from_numpy(self.ancestor_array()).to(device)

    def ancestor_array(self) -> np.ndarray:
        """``ancestors`` as a numpy array (built on the host: row copies cost ~1 us, torch's ~5 us)."""
        n = len(self) + 1
        anc = np.zeros((n, n), dtype=bool)
        anc[:, 0] = True
        for i, p in enumerate(self.parents):
            anc[i + 1] = anc[p + 1]
            anc[i + 1, i + 1] = True
        return anc
