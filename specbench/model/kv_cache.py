"""A preallocated KV cache with static shapes, plus the attention masks that read it."""

from __future__ import annotations

import torch


class StaticKVCache:
    """Keys and values of every layer in two tensors [layers, 1, kv_heads, max_seq_len, head_dim].

    The model writes K/V at explicit slots; ``keep`` moves an accepted subset of freshly written slots down
    to contiguous slots after the committed prefix (KV compaction after a tree or sequence verify).
    """

    def __init__(self, layers: int, kv_heads: int, head_dim: int, max_seq_len: int, dtype, device):
        shape = (layers, 1, kv_heads, max_seq_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.max_seq_len = max_seq_len
        self.layer_index = torch.arange(layers, device=device)

    def write(self, layer: int, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """Store ``k``/``v`` [1, kv_heads, n, head_dim] at ``slots`` [n]; return this layer's full K and V."""
        # Index the stacked tensors themselves (the layer as a tensor index): writing through a view self.k[layer]
        # makes torch.compile rebuild the whole cache around each write (a select_scatter per layer).
        where = (self.layer_index[layer : layer + 1], slice(None), slice(None), slots)
        self.k[where] = k.permute(2, 0, 1, 3).to(self.k.dtype)  # [n, 1, kv_heads, head_dim] (advanced dims first)
        self.v[where] = v.permute(2, 0, 1, 3).to(self.v.dtype)
        return self.k[layer], self.v[layer]

    def keep(self, src_slots: torch.Tensor, dst_start: int) -> None:
        """Copy slots ``src_slots`` (ascending) of every layer to ``dst_start, dst_start+1, …``."""
        dst = torch.arange(dst_start, dst_start + src_slots.numel(), device=src_slots.device)
        self.k.index_copy_(3, dst, self.k.index_select(3, src_slots))
        self.v.index_copy_(3, dst, self.v.index_select(3, src_slots))


def causal_mask(start: int, n: int, max_seq_len: int, device) -> torch.Tensor:
    """Mask [1, 1, n, S] for ``n`` tokens written at slots start…start+n-1 after a committed prefix."""
    slots = torch.arange(max_seq_len, device=device)
    rows = torch.arange(start, start + n, device=device)
    return (slots[None, :] <= rows[:, None])[None, None]


def tree_mask(start: int, ancestors: torch.Tensor, max_seq_len: int) -> torch.Tensor:
    """Mask [1, 1, n, S] for a tree of ``n`` tokens at slots start…start+n-1.

    ``ancestors`` [n, n] is True where node j is node i or one of its ancestors; every node sees the prefix.
    """
    n = ancestors.shape[0]
    mask = torch.zeros(n, max_seq_len, dtype=torch.bool, device=ancestors.device)
    mask[:, :start] = True
    mask[:, start : start + n] = ancestors
    return mask[None, None]
