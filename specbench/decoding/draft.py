"""A draft: a tree of candidate tokens hanging off the last committed token (the root).

A sequence draft is the chain ``parents = [-1, 0, 1, …]``. Nodes are listed parents-first. A draft the GPU is
still computing (``Draft.from_device``) can be verified from its device tensors before the host has read it, so
a step reads its tree back while the verify runs rather than before it.
"""

from __future__ import annotations

from functools import cached_property
from typing import Callable, Sequence

import numpy as np
import torch


class Draft:
    """``tokens[i]`` is a candidate whose parent is node ``parents[i]`` (-1: the root).

    ``probs[i]`` is the distribution node i was *sampled* from; ``None`` means the proposals are
    deterministic functions of the context (n-gram, greedy or top-k drafting), which the verifier treats
    as point masses drawn without replacement among siblings.
    """

    def __init__(self, tokens: Sequence[int], parents: Sequence[int], probs: torch.Tensor | None = None):
        self._lists = (list(tokens), list(parents))
        self.probs = probs
        self.on_device: torch.Tensor | None = None  # [2, n]: tokens and parents, when the tree came from a device
        self._size = len(self._lists[0])
        self._check()

    @classmethod
    def from_device(cls, tree: torch.Tensor, check: Callable[[list[list[int]]], None] | None = None) -> "Draft":
        """The tree in rows 0 (tokens) and 1 (parents) of ``tree`` [r, n], still being computed on its device.

        The rows are copied to pinned host memory without waiting; the first use of ``tokens`` or ``parents``
        waits for that copy and passes all ``r`` host rows to ``check`` (which raises if the tree is unusable)."""
        draft = cls.__new__(cls)
        draft.probs, draft.on_device, draft._size = None, tree[:2], tree.shape[1]
        host = torch.empty(tree.shape, dtype=tree.dtype, pin_memory=tree.is_cuda)
        host.copy_(tree, non_blocking=tree.is_cuda)
        arrived = torch.cuda.Event() if tree.is_cuda else None
        if arrived is not None:
            arrived.record()
        draft._lists, draft._arriving = None, (host, arrived, check)
        return draft

    def _resolve(self) -> tuple[list[int], list[int]]:
        if self._lists is None:
            host, arrived, check = self._arriving
            if arrived is not None:
                arrived.synchronize()
            rows = host.tolist()
            if check is not None:
                check(rows)
            self._lists, self._arriving = (rows[0], rows[1]), None
            self._check()
        return self._lists

    def _check(self) -> None:
        tokens, parents = self._lists
        if len(tokens) != len(parents):
            raise ValueError("a draft needs one parent per token")
        if any(not -1 <= p < i for i, p in enumerate(parents)):
            raise ValueError("draft nodes must be listed parents-first")

    @property
    def tokens(self) -> list[int]:
        return self._resolve()[0]

    @property
    def parents(self) -> list[int]:
        return self._resolve()[1]

    @classmethod
    def chain(cls, tokens: list[int], probs: torch.Tensor | None = None) -> "Draft":
        return cls(list(tokens), list(range(-1, len(tokens) - 1)), probs)

    @classmethod
    def empty(cls) -> "Draft":
        return cls([], [])

    def __len__(self) -> int:
        return self._size

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
