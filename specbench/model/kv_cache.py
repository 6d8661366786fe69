"""A preallocated KV cache with static shapes, plus the attention masks that read it."""

from __future__ import annotations

import torch

from specbench.model.rope import apply_rope

try:
    import triton
    import triton.language as tl

    from specbench.model.rope import roped_rows
except ImportError:  # the optional GPU extra; the CPU tests run the kernel through Triton's interpreter
    triton = None


class StaticKVCache:
    """Keys and values of every layer in one tensor ``kv`` [2, layers, 1, kv_heads, max_seq_len, head_dim],
    and, with ``track_positions`` (sliding-window models only), the rope position of each slot's token in
    ``positions`` [max_seq_len].

    The model writes K/V at explicit slots; ``keep`` moves an accepted subset of freshly written slots down
    to contiguous slots after the committed prefix (KV compaction after a tree or sequence verify). One tensor
    for both makes a layer's write one kernel (``store_rows`` on a GPU, one indexed store elsewhere) and a compaction
    two kernels.
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

    def layer(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``layer``'s keys and values, [1, kv_heads, max_seq_len, head_dim] each (views of ``kv``)."""
        return self.kv[0, layer], self.kv[1, layer]

    def write(self, layer: int, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              rope: tuple[torch.Tensor, torch.Tensor] | None = None):
        """Store ``k``/``v`` [1, kv_heads, n, head_dim] at ``slots`` [n], ``k`` rotated first by ``rope``'s (cos, sin)
        [n, head_dim] when given; return this layer's full K and V."""
        if k.is_cuda and triton is not None and not torch.compiler.is_compiling() and fits(k, v):
            # one kernel where indexing takes a stack and index_put's copies, and RoPE its own
            store_rows(self.kv[:, layer], slots, k, v, rope)
        else:
            if rope is not None:
                k = apply_rope(k, *rope)
            # Index the whole tensor with tensors (K/V, layer, slots): writing through a view such as kv[0, layer]
            # makes torch.compile rebuild the whole cache around each write (a select_scatter per layer).
            where = (self.kv_index, self.layer_index[layer : layer + 1], slice(None), slice(None), slots)
            self.kv[where] = torch.stack([k, v]).permute(0, 3, 1, 2, 4).to(self.kv.dtype)  # [2, n, 1, kv_heads, D]
        return self.layer(layer)

    def keep(self, src_slots: torch.Tensor, dst_slots: torch.Tensor) -> None:
        """Copy slots ``src_slots`` (ascending) of every layer to ``dst_slots`` (consecutive, none after its source)."""
        self.kv.index_copy_(4, dst_slots, self.kv.index_select(4, src_slots))
        if self.positions is not None:
            self.positions.index_copy_(0, dst_slots, self.positions.index_select(0, src_slots))


def fits(k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether ``store_rows`` takes ``k``/``v`` [1, kv_heads, n, head_dim]: contiguous head dims of a power-of-two size."""
    d = k.shape[-1]
    return k.shape[0] == 1 and k.stride(-1) == 1 and v.stride(-1) == 1 and d & (d - 1) == 0


def store_rows(layer_kv: torch.Tensor, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               rope: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
    """Write ``k``/``v`` [1, kv_heads, n, head_dim] at ``slots`` [n] of one layer's ``layer_kv`` [2, 1, kv_heads, S,
    head_dim] (a view of the cache), in one kernel: a program per token rotates its keys by ``rope``'s (cos, sin)
    [n, head_dim] (when given) and stores its keys and values of every head."""
    _, heads, n, d = k.shape
    cos, sin = rope if rope is not None else (k, k)
    _store_kernel[(n,)](layer_kv, k, v, slots, cos, sin, layer_kv.stride(0), layer_kv.stride(2), layer_kv.stride(3),
                        k.stride(1), k.stride(2), v.stride(1), v.stride(2), heads,
                        D=d, H=triton.next_power_of_2(heads), ROPE=rope is not None, num_warps=4)


if triton is not None:

    @triton.jit
    def _store_kernel(kv_ptr, k_ptr, v_ptr, slots_ptr, cos_ptr, sin_ptr, s_half, s_head, s_slot, sk_h, sk_n, sv_h,
                      sv_n, heads, D: tl.constexpr, H: tl.constexpr, ROPE: tl.constexpr):
        """Token ``program_id``'s [heads, D] keys (rotated when ``ROPE``) and values to its slot."""
        t = tl.program_id(0)
        head = tl.arange(0, H)[:, None]
        dims = tl.arange(0, D)[None, :]
        ok = head < heads
        dst = kv_ptr + tl.load(slots_ptr + t) * s_slot + head * s_head + dims
        if ROPE:
            k = roped_rows(k_ptr, t * sk_n + head * sk_h, dims, cos_ptr, sin_ptr, t + 0 * head, ok, D)
        else:
            k = tl.load(k_ptr + t * sk_n + head * sk_h + dims, mask=ok)
        v = tl.load(v_ptr + t * sv_n + head * sv_h + dims, mask=ok)
        tl.store(dst, k.to(kv_ptr.dtype.element_ty), mask=ok)
        tl.store(dst + s_half, v.to(kv_ptr.dtype.element_ty), mask=ok)


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
