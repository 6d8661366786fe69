"""A model together with the token prefix held in its KV cache.

``tokens`` are exactly the tokens whose K/V sit in slots ``0 … length-1``. ``extend`` appends tokens causally,
``verify`` runs a root token plus a draft tree after the prefix without keeping it, and ``commit`` keeps the
root and an accepted path, compacting their K/V behind the prefix. The compaction is enqueued by the next
forward on the session (``settle``), so what a step must launch first after its acceptance (a drafter's forward)
is not queued behind it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from specbench.decoding.draft import Draft
from specbench.decoding.forward import ForwardRunner
from specbench.model.kv_cache import causal_mask

PREFILL_CHUNK = 4096


class ModelSession:
    def __init__(self, runner: ForwardRunner, layers: Sequence[int] | None = None):
        self.runner = runner
        self.model = runner.model
        self.device = runner.device
        self.layers = layers
        self.tokens: list[int] = []
        self._verified: tuple[int, Draft] | None = None  # the root and the draft of the last verify
        self._moves: tuple[int, torch.Tensor, torch.Tensor] | None = None  # commit's K/V moves: first slot, src, dst
        self._staged: torch.Tensor | None = None  # pinned host buffer of ``commit``'s indices (on a GPU)
        self._staged_copy: torch.cuda.Event | None = None

    @property
    def length(self) -> int:
        return len(self.tokens)

    def reset(self) -> None:
        self.truncate(0)

    def truncate(self, length: int) -> None:
        """Forget everything after the first ``length`` tokens."""
        if self._moves is not None and length <= self._moves[0]:
            self._moves = None  # the moved slots are forgotten
        del self.tokens[length:]

    def settle(self) -> None:
        """Enqueue the K/V moves of the last commit (the next forward on this session does it otherwise)."""
        if self._moves is not None:
            _, src, dst = self._moves
            self.runner.cache.keep(src, dst)
            self._moves = None

    def common_prefix(self, tokens: Sequence[int]) -> int:
        n = 0
        for a, b in zip(self.tokens, tokens):
            if a != b:
                break
            n += 1
        return n

    def _check_room(self, n: int) -> None:
        if self.length + n > self.runner.max_seq_len:
            raise ValueError(
                f"the KV cache holds {self.runner.max_seq_len} tokens but {self.length + n} are needed; "
                "raise runtime.max_seq_len or lower the prompt length / max_new_tokens"
            )

    def extend(self, ids: Sequence[int], layers: Sequence[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Append ``ids`` causally; return the last row's logits [V] and the hidden states [n, h]."""
        ids = list(ids)
        self.settle()
        if len(ids) <= self.runner.buckets[-1]:
            logits, hidden = self.verify(ids[0], Draft.chain(ids[1:]), layers)
            self.commit(range(len(ids) - 1))
            return logits[-1], hidden
        self._check_room(len(ids))
        ids_t = torch.as_tensor(ids, device=self.device)
        hiddens = []
        for start in range(0, len(ids), PREFILL_CHUNK):
            chunk = ids_t[start : start + PREFILL_CHUNK]
            first, n = self.length, chunk.numel()
            pos = torch.arange(first, first + n, device=self.device)
            mask = causal_mask(first, n, self.runner.total_slots, self.device)
            hiddens.append(self.model(chunk[None], pos, pos, mask, layers or self.layers)[0])
            self.tokens += ids[start : start + n]
        hidden = torch.cat(hiddens)
        return self.model.logits(hidden[-1]), hidden

    def verify(self, root: int, draft: Draft, layers: Sequence[int] | None = None):
        """Run root + draft under the tree mask after the prefix; return logits [n, V] and hidden [n, h]."""
        self._check_room(len(draft) + 1)
        self.settle()
        self._verified = (root, draft)
        if draft.on_device is not None:  # a draft still being computed: its inputs are built on the device
            return self.runner.tree_on_device(root, draft.on_device, self.length, layers or self.layers)
        return self.runner.tree([root] + draft.tokens, [0] + draft.depths, self.length, draft.ancestor_array(),
                                layers or self.layers)

    def commit(self, nodes: Sequence[int], hidden: torch.Tensor | None = None, *,
               copy: bool = False) -> torch.Tensor | None:
        """Keep the root and the accepted draft ``nodes`` (root to leaf) of the last verify. With that verify's
        ``hidden`` output, return its rows of the kept tokens (root first): a view when they are its first rows
        (a graph's output buffer, overwritten by the next forward, unless ``copy``), a copy otherwise."""
        nodes = list(nodes)
        root, draft = self._verified
        kept = None
        if nodes != list(range(len(nodes))):
            index = self._commit_index([0] + [i + 1 for i in nodes])  # output rows, their slots, where they move
            self._moves = (self.length, index[1], index[2])
            if hidden is not None:
                kept = hidden.index_select(0, index[0])
        elif hidden is not None:
            kept = hidden[: len(nodes) + 1]
            kept = kept.clone() if copy else kept
        self.tokens += [root] + [draft.tokens[i] for i in nodes]
        return kept

    def _commit_index(self, rows: list[int]) -> torch.Tensor:
        """``rows``, ``length + rows`` and ``length + 0…k-1`` on the device in one copy. On a GPU they go through a
        pinned buffer, copied asynchronously: a tensor made from a list would be a pageable copy, which waits for
        the GPU."""
        k, length = len(rows), self.length
        index = np.empty((3, k), dtype=np.int64)
        index[0] = rows
        index[1] = index[0] + length
        index[2] = np.arange(length, length + k)
        if self.device.type != "cuda":
            return torch.from_numpy(index)
        if self._staged is None or self._staged.numel() < 3 * k:
            self._staged = torch.zeros(3 * max(k, self.runner.scratch + 1), dtype=torch.long, pin_memory=True)
            self._staged_copy = torch.cuda.Event()
        self._staged_copy.synchronize()  # the previous copy out of the buffer has finished
        self._staged.numpy()[: 3 * k] = index.ravel()
        staged = self._staged[: 3 * k].to(self.device, non_blocking=True).view(3, k)
        self._staged_copy.record()
        return staged
