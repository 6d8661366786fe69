"""Runs a model forward over the static cache, eagerly or by replaying a CUDA graph per token-count bucket.

A forward of ``n`` tokens is padded to the smallest bucket >= n: 1, 2, 4, 8, then every 8 up to 128, plus any
exact size added with ``add_bucket`` (a drafter's verify size), so T_v(n) is timed at n or at most 7 rows above
it. A bucket's graph is captured the first time a forward of its size runs. Padding rows write to scratch slots
at the end of the cache (never part of a sequence) and attend only themselves, so they change nothing real.
With ``compile=True`` the forward is compiled by ``torch.compile`` once per shape (Inductor fuses the norms,
RoPE and the other small kernels) and the compiled forward is what each bucket's CUDA graph captures; without
graphs every new token count compiles again, so use it with graphs. ``compile_scope="layer"`` compiles instead the
two halves of a decoder layer around its KV write and attention, once per shape for every layer of that width: a
70B model compiles one layer's code, not eighty (the whole forward took about 300 s at 70B on the H200); the
cache write and attention (which apply RoPE on a GPU), embeddings, RoPE tables and LM head run uncompiled inside the
same CUDA graph. A module without decoder layers (the EAGLE-3 head's own layer) is compiled whole.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np
import torch

from specbench.config.checks import COMPILE_SCOPES
from specbench.decoding.graphs import GraphedCall
from specbench.model.footprint import forward_bytes
from specbench.model.transformer import DecoderLayer, Transformer

DEFAULT_BUCKETS = (1, 2, 4, *range(8, 129, 8))


@lru_cache(maxsize=None)
def compiled_regions(mode: str | None = None) -> tuple:
    """``DecoderLayer.regions`` compiled, one pair per mode for the process: every layer of every model shares it."""
    return tuple(torch.compile(region, fullgraph=True, dynamic=False, mode=mode) for region in DecoderLayer.regions)


def last_dim_argmax(logits: torch.Tensor) -> torch.Tensor:
    return logits.argmax(-1)


@lru_cache(maxsize=None)
def compiled_argmax(mode: str | None = None):
    """``last_dim_argmax`` compiled (a split reduction over the vocabulary), one per mode for the process."""
    return torch.compile(last_dim_argmax, fullgraph=True, dynamic=False, mode=mode)


class ForwardRunner:
    """Owns a model's cache layout: ``max_seq_len`` usable slots plus scratch slots for padding rows."""

    def __init__(self, model: Transformer, max_seq_len: int, *, cuda_graphs: bool = False,
                 buckets: Sequence[int] = DEFAULT_BUCKETS, compile: bool = False, compile_mode: str | None = None,
                 compile_scope: str | None = None):
        self.model = model
        self.buckets = tuple(sorted(buckets))
        self.scratch = self.buckets[-1]
        self.max_seq_len = max_seq_len
        self.cache = model.setup_cache(max_seq_len + self.scratch)
        self.device = next(model.parameters()).device
        self.cuda_graphs = cuda_graphs and self.device.type == "cuda"
        self._graphs: dict[tuple, GraphedCall] = {}
        self.pool = torch.cuda.graph_pool_handle() if self.cuda_graphs else None  # shared by every graph here
        self._staging: dict[int, tuple[torch.Tensor, ...]] = {}
        self._staged_copy = torch.cuda.Event() if self.cuda_graphs else None  # recorded after each staged replay
        self._scalars = torch.zeros(2, dtype=torch.long, pin_memory=self.cuda_graphs)  # tree_on_device's root, start
        if compile_scope not in COMPILE_SCOPES:
            raise ValueError(f"compile_scope={compile_scope!r}: use null (the whole forward) or 'layer'")
        self.compiled, self.compile_mode, self.compile_scope = compile, compile_mode, compile_scope
        self._step, self._regions, self._argmax = self._forward, None, last_dim_argmax
        if compile:
            self._raise_recompile_limit()
            if compile_scope == "layer" and any(isinstance(m, DecoderLayer) for m in model.modules()):
                self._regions = compiled_regions(compile_mode)
                self._argmax = compiled_argmax(compile_mode)  # eager, one block per row: ~27 µs at 30 x 128k
            else:  # the whole forward; also a module without decoder layers (the EAGLE-3 head) under "layer"
                self._step = torch.compile(self._forward, fullgraph=True, dynamic=False, mode=compile_mode)

    def _raise_recompile_limit(self) -> None:
        """One specialisation per (bucket, layers, features) key, all on the one compiled function."""
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 4 * len(self.buckets))

    def add_bucket(self, n: int) -> None:
        """Run forwards of exactly ``n`` tokens at ``n`` (no padding): a drafter's fixed verify size."""
        if not 1 <= n <= self.scratch:
            raise ValueError(f"a bucket of {n} tokens is outside 1…{self.scratch}")
        if n not in self.buckets:
            self.buckets = tuple(sorted((*self.buckets, n)))
            if self.compiled:
                self._raise_recompile_limit()

    @property
    def total_slots(self) -> int:
        return self.max_seq_len + self.scratch

    def bucket(self, n: int) -> int | None:
        return next((b for b in self.buckets if b >= n), None)

    def __call__(self, ids: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, mask: torch.Tensor,
                 layers: Sequence[int] | None = None, features: torch.Tensor | None = None, *,
                 graph: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits [n, V] (float32) and hidden states [n, hidden] for ``ids`` [n].

        ``features`` [n, hidden] is an extra per-token input (the EAGLE head's target features).
        """
        n = ids.numel()
        size = self.bucket(n) if graph and self.cuda_graphs else None
        inputs = (ids, positions, slots, mask) + (() if features is None else (features,))
        if size is None:
            return self._step(packed(inputs), layers)
        logits, hidden = self._replay(size, layers, packed(self.pad(size, *inputs)))
        return logits[:n], hidden[:n]

    def tree(self, ids: Sequence[int], depths: Sequence[int], start: int, ancestors: np.ndarray,
             layers: Sequence[int] | None = None, features: torch.Tensor | None = None):
        """``__call__`` for ``n`` tokens after a committed prefix of ``start`` slots, inputs given on the host.

        Token i goes to slot ``start + i`` at position ``start + depths[i]`` and sees the prefix and the tokens
        marked in row i of ``ancestors`` [n, n]. With graphs the inputs are written into one pinned host buffer
        per bucket and copied to the graph's inputs asynchronously: no small kernels and no host syncs.
        """
        n = len(ids)
        size = self.bucket(n) if self.cuda_graphs else None
        index_t, mask_t = self._host_inputs(n) if size is None else self._staging_for(size)
        (ids_np, pos_np, slots_np), mask_np = index_t.numpy(), mask_t.numpy()
        ids_np[:n], pos_np[:n], slots_np[:n] = ids, np.asarray(depths) + start, np.arange(start, start + n)
        mask_np[:n, :start] = True
        mask_np[:n, start : start + n] = ancestors
        pad = (size or n) - n
        if pad:  # padding rows: scratch slots, each attending only itself
            ids_np[n:], pos_np[n:], slots_np[n:] = 0, 0, np.arange(self.max_seq_len, self.max_seq_len + pad)
            mask_np[np.arange(n, n + pad), slots_np[n:]] = True
            if features is not None:
                features = torch.cat([features, features.new_zeros(pad, features.shape[1])])
        inputs = (index_t, mask_t[None, None]) + (() if features is None else (features,))
        if size is None:
            return self._step(tuple(t.to(self.device) for t in inputs), layers)
        logits, hidden = self._replay(size, layers, inputs)
        self._staged_copy.record()
        return logits[:n], hidden[:n]

    def tree_on_device(self, root: int | None, tree: torch.Tensor, start: int | torch.Tensor,
                       layers: Sequence[int] | None = None, *, best_only: bool = False):
        """``tree`` for root + a draft still on the device: ``tree`` [2, m] holds its tokens and parents
        (``Draft.on_device``). The positions and the mask are built from it on the device, inside the bucket's
        graph, so the verify is enqueued without waiting for the draft. ``root`` and ``start`` come from the host,
        staged in pinned memory; or ``root=None`` and ``start`` the device tensor (root, start) (``DeviceLoop``).
        ``best_only``: each row's argmax token [n] instead of its logits, computed inside the graph (greedy and
        replayed acceptance read nothing else)."""
        n = tree.shape[1] + 1
        size = self.bucket(n) if self.cuda_graphs else None
        on_device = root is None
        if size is None:
            scalars = start if on_device else torch.tensor([root, start], device=self.device)
            return self._step(self.device_tree_inputs(scalars, tree, n), layers, best_only=best_only)
        if not on_device:
            self._staged_copy.synchronize()  # the last copy out of the staging buffer has finished
            self._scalars.numpy()[:] = (root, start)
        graph = self._graph((size, "tree on device", n, best_only), layers,
                            lambda scalars, rows: self._step(self.device_tree_inputs(scalars, rows, size), layers,
                                                             best_only=best_only))
        scores, hidden = graph(start if on_device else self._scalars, tree)  # logits, or the argmax tokens
        if not on_device:
            self._staged_copy.record()
        return scores[:n], hidden[:n]

    def chain_on_device(self, ids: torch.Tensor, count: torch.Tensor, start: torch.Tensor,
                        layers: Sequence[int] | None = None, features: torch.Tensor | None = None, *,
                        best_only: bool = False):
        """The logits [V] and hidden state [h] of the last of the first ``count`` tokens of ``ids`` [r], appended
        causally at slot ``start``; ``count`` and ``start`` are device scalars, so nothing waits for the host.
        Rows from ``count`` on are padding (scratch slots, each attending only itself); one graph serves every
        ``count`` up to ``r``. Only the last real row goes through the LM head. ``best_only``: its argmax token []
        instead of its logits, computed inside the graph."""
        r = ids.numel()

        def run(ids, count, start, *features):
            return self._step(self.device_chain_inputs(ids, count, start) + features, layers, last_of=count,
                              best_only=best_only)

        args = (ids, count, start) + (() if features is None else (features,))
        if not self.cuda_graphs:
            return run(*args)
        return self._graph((r, "chain on device", best_only), layers, run)(*args)

    def device_chain_inputs(self, ids: torch.Tensor, count: torch.Tensor, start: torch.Tensor):
        """(index [3, r], mask [1, 1, r, total_slots]) of ``chain_on_device``, built on the device."""
        rows = torch.arange(ids.numel(), device=ids.device)
        live = rows < count
        slots = torch.where(live, start + rows, self.max_seq_len + rows)
        every_slot = torch.arange(self.total_slots, device=ids.device)
        mask = torch.where(live[:, None], every_slot <= (start + rows)[:, None], every_slot == slots[:, None])
        return torch.stack([ids, torch.where(live, start + rows, 0), slots]), mask[None, None]

    def device_tree_inputs(self, scalars: torch.Tensor, tree: torch.Tensor, size: int):
        """The graph inputs ``tree`` would stage on the host (index [3, size], mask [1, 1, size, total_slots]) for
        ``scalars`` = (root token, start) and ``tree`` [2, m] on the device, padded to ``size`` rows."""
        device, n = tree.device, tree.shape[1] + 1
        ids = torch.cat([scalars[:1], tree[0]])
        parent_row = torch.cat([torch.zeros(1, dtype=torch.long, device=device), tree[1] + 1])  # the root: itself
        rows = torch.arange(n, device=device)
        anc = (rows[:, None] == rows) | (rows == parent_row[:, None])  # itself and its parent
        for _ in range(max(1, (n - 1).bit_length())):  # pointer doubling: each pass reaches twice as high
            anc, parent_row = anc | anc[parent_row], parent_row[parent_row]
        slots = scalars[1] + rows
        positions = scalars[1] + anc.sum(1) - 1
        every_slot = torch.arange(self.total_slots, device=device)
        mask = (every_slot < scalars[1]).expand(n, -1).clone()
        mask.scatter_(1, slots.expand(n, n), anc)
        if size > n:  # padding rows: scratch slots, each attending only itself
            scratch = torch.arange(self.max_seq_len, self.max_seq_len + size - n, device=device)
            own = every_slot == scratch[:, None]
            zeros = ids.new_zeros(size - n)
            ids, positions, slots = torch.cat([ids, zeros]), torch.cat([positions, zeros]), torch.cat([slots, scratch])
            mask = torch.cat([mask, own])
        return torch.stack([ids, positions, slots]), mask[None, None]

    def _host_inputs(self, rows: int, pin: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Zeroed ids/positions/slots [3, rows] and mask [rows, total_slots] on the host."""
        return (torch.zeros(3, rows, dtype=torch.long, pin_memory=pin),
                torch.zeros(rows, self.total_slots, dtype=torch.bool, pin_memory=pin))

    def _staging_for(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The pinned host inputs of bucket ``size``, mask cleared once the last copy out of them has finished."""
        if size not in self._staging:
            self._staging[size] = self._host_inputs(size, pin=True)
        self._staged_copy.synchronize()
        staged = self._staging[size]
        staged[1].numpy().fill(False)  # numpy: torch's zero_ on a pinned tensor costs ~0.1 ms here
        return staged

    def _replay(self, size: int, layers, inputs: tuple[torch.Tensor, ...]):
        graph = self._graph((size, len(inputs) == 2), layers, lambda *args: self._step(args, layers))
        return graph(*inputs)

    def _graph(self, key: tuple, layers, fn) -> GraphedCall:
        """The graph of ``fn`` for ``key`` (its first entry the bucket), ``layers`` and the target's feature layers."""
        key = (*key, None if layers is None else tuple(layers),
               getattr(self.model, "feature_layers", ()))  # an EAGLE-3 drafter widens the target's output
        if key not in self._graphs:
            name = getattr(self.model, "source", None) or type(self.model).__name__
            skip = () if layers is None else [m for i, m in enumerate(self.model.model.layers) if i not in layers]
            self._graphs[key] = GraphedCall(fn, self.pool, f"{name}[{key[0]}]", forward_bytes(self.model, skip))
        return self._graphs[key]

    def _forward(self, inputs, layers, last_of: torch.Tensor | None = None, best_only: bool = False):
        """Logits and hidden states of every row; with ``last_of`` (a row count), of row ``last_of - 1`` only; with
        ``best_only``, each row's argmax token instead of its logits."""
        (ids, positions, slots), mask, *features = inputs
        extra = {"features": features[0][None]} if features else {}
        if self._regions is not None:
            extra["regions"] = self._regions
        hidden = self.model(ids[None], positions, slots, mask, layers, **extra)[0]
        if last_of is not None:
            hidden = hidden.index_select(0, (last_of - 1).view(1))
        scores = self.model.logits(hidden)
        if best_only:
            scores = self._argmax(scores)
        return (scores[0], hidden[0]) if last_of is not None else (scores, hidden)

    def pad(self, size, ids, positions, slots, mask, *features):
        """The inputs padded to bucket ``size``: padding rows write to scratch slots and attend only themselves."""
        pad = size - ids.numel()
        if pad == 0:
            return (ids, positions, slots, mask, *features)
        scratch = torch.arange(self.max_seq_len, self.max_seq_len + pad, device=self.device)
        pad_mask = torch.zeros(pad, self.total_slots, dtype=torch.bool, device=self.device)
        pad_mask[torch.arange(pad), scratch] = True
        return (
            torch.cat([ids, ids.new_zeros(pad)]),
            torch.cat([positions, positions.new_zeros(pad)]),
            torch.cat([slots, scratch]),
            torch.cat([mask[0, 0], pad_mask])[None, None],
            *(torch.cat([f, f.new_zeros(pad, f.shape[1])]) for f in features),
        )


def packed(inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """(ids, positions, slots, mask, *features) as the runner's graph inputs: (index [3, n], mask, *features)."""
    return (torch.stack(inputs[:3]), *inputs[3:])
