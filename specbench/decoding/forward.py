"""Runs a model forward over the static cache, eagerly or by replaying a CUDA graph per token-count bucket.

A forward of ``n`` tokens is padded to the smallest bucket >= n. Padding rows write to scratch slots at the
end of the cache (never part of a sequence) and attend only themselves, so they change nothing real.
With ``compile=True`` the forward is compiled by ``torch.compile`` once per shape (Inductor fuses the norms,
RoPE and the other small kernels) and the compiled forward is what each bucket's CUDA graph captures; without
graphs every new token count compiles again, so use it with graphs.
"""

from __future__ import annotations

from typing import Sequence

import torch

from specbench.decoding.graphs import GraphedCall
from specbench.model.transformer import Transformer

DEFAULT_BUCKETS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128)


class ForwardRunner:
    """Owns a model's cache layout: ``max_seq_len`` usable slots plus scratch slots for padding rows."""

    def __init__(self, model: Transformer, max_seq_len: int, *, cuda_graphs: bool = False,
                 buckets: Sequence[int] = DEFAULT_BUCKETS, compile: bool = False):
        self.model = model
        self.buckets = tuple(sorted(buckets))
        self.scratch = self.buckets[-1]
        self.max_seq_len = max_seq_len
        self.cache = model.setup_cache(max_seq_len + self.scratch)
        self.device = next(model.parameters()).device
        self.cuda_graphs = cuda_graphs and self.device.type == "cuda"
        self._graphs: dict[tuple, GraphedCall] = {}
        self.pool = torch.cuda.graph_pool_handle() if self.cuda_graphs else None  # shared by every graph here
        self.compiled = compile
        if compile:  # one specialisation per (bucket, layers, features) key, all on this one function
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 4 * len(self.buckets))
            self._step = torch.compile(self._forward, fullgraph=True, dynamic=False)
        else:
            self._step = self._forward

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
            return self._step(inputs, layers)
        inputs = self._pad(size, *inputs)
        key = (size, None if layers is None else tuple(layers), features is None)
        if key not in self._graphs:
            self._graphs[key] = GraphedCall(lambda *args: self._step(args, layers), self.pool)
        logits, hidden = self._graphs[key](*inputs)
        return logits[:n], hidden[:n]

    def _forward(self, inputs, layers):
        ids, positions, slots, mask, *features = inputs
        extra = {"features": features[0][None]} if features else {}
        hidden = self.model(ids[None], positions, slots, mask, layers, **extra)[0]
        return self.model.logits(hidden), hidden

    def _pad(self, size, ids, positions, slots, mask, *features):
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
