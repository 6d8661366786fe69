"""A preallocated KV cache with static shapes, plus the attention masks that read it."""

from __future__ import annotations

import torch


class StaticKVCache:
    """Keys and values of every layer in one tensor ``kv`` [2, layers, 1, kv_heads, max_seq_len, head_dim],
    and, with ``track_positions`` (sliding-window models only), the rope position of each slot's token in
    ``positions`` [max_seq_len].

    The model writes K/V at explicit slots; ``keep`` moves an accepted subset of freshly written slots down
    to contiguous slots after the committed prefix (KV compaction after a tree or sequence verify). One tensor
    for both makes a layer's write one indexed store and a compaction two kernels.
    """

    def __init__(self, layers: int, kv_heads: int, head_dim: int, max_seq_len: int, dtype, device,
                 track_positions: bool = False):
        self.kv = torch.zeros((2, layers, 1, kv_heads, max_seq_len, head_dim), dtype=dtype, device=device)
        self.positions = torch.zeros(max_seq_len, dtype=torch.long, device=device) if track_positions else None
        self.max_seq_len = max_seq_len
        self.layer_index = torch.arange(layers, device=device)
        self.kv_index = torch.arange(2, device=device)[:, None]

    @property
    def k(self) -> torch.Tensor:
        return self.kv[0]

    @property
    def v(self) -> torch.Tensor:
        return self.kv[1]

    def write(self, layer: int, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """Store ``k``/``v`` [1, kv_heads, n, head_dim] at ``slots`` [n]; return this layer's full K and V."""
        # Index the whole tensor with tensors (K/V, layer, slots): writing through a view such as kv[0, layer]
        # makes torch.compile rebuild the whole cache around each write (a select_scatter per layer).
        where = (self.kv_index, self.layer_index[layer : layer + 1], slice(None), slice(None), slots)
        self.kv[where] = torch.stack([k, v]).permute(0, 3, 1, 2, 4).to(self.kv.dtype)  # [2, n, 1, kv_heads, D]
        return self.kv[0, layer], self.kv[1, layer]

    def keep(self, src_slots: torch.Tensor, dst_slots: torch.Tensor) -> None:
        """Copy slots ``src_slots`` (ascending) of every layer to ``dst_slots`` (consecutive, none after its source)."""
        self.kv.index_copy_(4, dst_slots, self.kv.index_select(4, src_slots))
        if self.positions is not None:
            self.positions.index_copy_(0, dst_slots, self.positions.index_select(0, src_slots))


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
