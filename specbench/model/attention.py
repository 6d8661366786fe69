"""Attention of a few query tokens over the static KV cache that reads only the cache blocks the mask opens.

A decode step, a tree verify or an EAGLE draft pass runs n <= 128 queries against a cache of ``S`` slots of
which only the committed prefix, the current tree and the padding rows' scratch slots are visible. SDPA with a
boolean mask reads all ``S`` slots, so its cost grows with the cache size, not with the context. Here the
forward first lists the ``BLOCK_N``-slot cache blocks that any query may attend (``prepare``, once per forward,
on the device), and the split-KV kernel (flash-decoding) reads only those, so its cost follows the visible
prefix while every input keeps the static shape a CUDA graph needs. Grouped-query heads share one K/V read: the
``group`` query heads of a KV head are rows of the same tile. Each of ``splits`` programs per (KV head, row
block) reduces its share of the listed blocks to a running max, normaliser and weighted sum; the last of them to
finish (a counter per (KV head, row block), reset by that program) merges the shares and writes the output, so a
layer's attention is one kernel. Semantics are SDPA's with a boolean ``attn_mask`` (True = may attend); a row with
nothing visible gives zeros.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra; the CPU tests run the kernels through Triton's interpreter
    triton = None

MAX_QUERIES = 128  # larger forwards (prefill chunks) use SDPA
BLOCK_N = 64
MAX_TILES = 1024  # (KV head, row block) counters a forward's ``CacheMask`` holds
DTYPES = (torch.bfloat16, torch.float16)
SMS = 132  # H100/H200 multiprocessors: the split count aims to give every one a program


def available() -> bool:
    return triton is not None and torch.cuda.is_available()


class CacheMask(NamedTuple):
    """A forward's boolean mask [1, 1, n, S] and, for the kernel, its visible cache blocks: their indices first
    (``order`` [S / BLOCK_N] int32), how many there are (``count`` [1] int32) and the zeroed arrival counters
    every layer's kernel uses and leaves zero (``arrivals`` [MAX_TILES] int32). Computed once per forward."""

    mask: torch.Tensor
    order: torch.Tensor | None = None
    count: torch.Tensor | None = None
    arrivals: torch.Tensor | None = None


def visible_blocks(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(indices of the ``BLOCK_N``-slot blocks of ``mask`` [1, 1, n, S] that any query may attend, listed first,
    then the others; how many there are [1]), int32, on the mask's device."""
    n, slots = mask.shape[-2:]
    blocks = -(-slots // BLOCK_N)
    pad = blocks * BLOCK_N - slots
    padded = F.pad(mask[0, 0], (0, pad)) if pad else mask[0, 0]
    live = padded.reshape(n, blocks, BLOCK_N).any(-1).any(0)
    return torch.argsort((~live).to(torch.int8), stable=True).to(torch.int32), live.sum(dtype=torch.int32).view(1)


def prepare(mask: torch.Tensor) -> CacheMask:
    """``mask`` with its visible-block list when the kernel will read it (a CUDA forward of few queries)."""
    if not (mask.is_cuda and mask.shape[-2] <= MAX_QUERIES and triton is not None):
        return CacheMask(mask)
    return CacheMask(mask, *visible_blocks(mask), torch.zeros(MAX_TILES, dtype=torch.int32, device=mask.device))


def fits(q: torch.Tensor, keys: torch.Tensor, mask: CacheMask) -> bool:
    """Whether this kernel runs ``q`` [1, H, n, D] against ``keys`` [1, KVH, S, D] (else SDPA does)."""
    b, h, n, d = q.shape
    return (mask.order is not None and q.is_cuda and b == 1 and n <= MAX_QUERIES and q.dtype in DTYPES
            and d in (64, 128, 256) and h % keys.shape[1] == 0)


def attend(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
           mask: CacheMask | torch.Tensor) -> torch.Tensor:
    """SDPA over the cache with ``mask`` (True = may attend; a plain tensor is prepared here, for one-layer
    heads); GQA when ``q`` has more heads than ``keys``."""
    if not isinstance(mask, CacheMask):
        mask = prepare(mask)
    if fits(q, keys, mask):
        return masked_attention(q, keys, values, *mask)
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask.mask,
                                          enable_gqa=q.shape[1] != keys.shape[1])


if triton is not None:

    @triton.jit
    def _split_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, order_ptr, count_ptr, arrivals_ptr, m_ptr, l_ptr, acc_ptr,
                      o_ptr, n, S, scale, sq_h, sq_n, sk_h, sk_s, sm_n, sm_s, so_h, so_n,
                      GROUP: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      SPLITS: tl.constexpr):
        """Running max / normaliser / weighted V sum of rows (query, head of the group) over one split's share of
        the visible blocks; the split that finishes last merges every split's share into the output."""
        kvh, mb, sp = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        rows = mb * BLOCK_M + tl.arange(0, BLOCK_M)
        row_ok = rows < n * GROUP
        query, head = rows // GROUP, kvh * GROUP + rows % GROUP
        dims = tl.arange(0, D)
        q = tl.load(q_ptr + head[:, None] * sq_h + query[:, None] * sq_n + dims[None, :], mask=row_ok[:, None],
                    other=0.0)
        count = tl.load(count_ptr)
        per = tl.cdiv(count, SPLITS)
        m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
        l = tl.zeros((BLOCK_M,), tl.float32)
        acc = tl.zeros((BLOCK_M, D), tl.float32)
        for j in range(sp * per, tl.minimum(sp * per + per, count)):
            cols = tl.load(order_ptr + j) * BLOCK_N + tl.arange(0, BLOCK_N)
            col_ok = cols < S
            seen = tl.load(mask_ptr + query[:, None] * sm_n + cols[None, :] * sm_s,
                           mask=row_ok[:, None] & col_ok[None, :], other=0) != 0
            k = tl.load(k_ptr + kvh * sk_h + cols[:, None] * sk_s + dims[None, :], mask=col_ok[:, None], other=0.0)
            v = tl.load(v_ptr + kvh * sk_h + cols[:, None] * sk_s + dims[None, :], mask=col_ok[:, None], other=0.0)
            s = tl.where(seen, tl.dot(q, tl.trans(k)) * scale, float("-inf"))
            m, l, acc = _merged(m, l, acc, tl.max(s, 1), s, v)
        last = True
        if SPLITS > 1:
            share = (head * SPLITS + sp) * n + query  # partials are [head, split, query]
            tl.store(m_ptr + share, m, mask=row_ok)
            tl.store(l_ptr + share, l, mask=row_ok)
            tl.store(acc_ptr + share[:, None] * D + dims[None, :], acc, mask=row_ok[:, None])
            tile = kvh * tl.num_programs(1) + mb
            last = tl.atomic_add(arrivals_ptr + tile, 1, sem="acq_rel") == SPLITS - 1
        if last:
            for other in range(SPLITS):  # this split's own share is already in m, l, acc
                at = (head * SPLITS + other) * n + query
                ok = row_ok & (tl.zeros_like(rows) + other != sp)
                m_o = tl.load(m_ptr + at, mask=ok, other=float("-inf"), cache_modifier=".cg")
                l_o = tl.load(l_ptr + at, mask=ok, other=0.0, cache_modifier=".cg")
                acc_o = tl.load(acc_ptr + at[:, None] * D + dims[None, :], mask=ok[:, None], other=0.0,
                                cache_modifier=".cg")
                top = tl.maximum(m, m_o)
                safe = tl.where(top == float("-inf"), 0.0, top)
                mine, theirs = tl.exp(m - safe), tl.exp(m_o - safe)
                l = l * mine + l_o * theirs
                acc = acc * mine[:, None] + acc_o * theirs[:, None]
                m = top
            o = acc / tl.where(l > 0, l, 1.0)[:, None]
            tl.store(o_ptr + head[:, None] * so_h + query[:, None] * so_n + dims[None, :],
                     o.to(o_ptr.dtype.element_ty), mask=row_ok[:, None])
            if SPLITS > 1:
                tl.atomic_xchg(arrivals_ptr + tile, 0)

    @triton.jit
    def _merged(m, l, acc, block_max, s, v):
        """The running (max, normaliser, weighted V sum) after one more block of scores ``s`` and values ``v``."""
        m_new = tl.maximum(m, block_max)
        safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(s - safe[:, None])
        alpha = tl.exp(m - safe)
        return m_new, l * alpha + tl.sum(p, 1), acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)


def split_count(kv_heads: int, row_blocks: int, slots: int) -> int:
    """Programs per (KV head, row block): about one per multiprocessor in all, at most one per cache block."""
    want = max(1, SMS // (kv_heads * row_blocks))
    return min(triton.next_power_of_2(want), triton.next_power_of_2(triton.cdiv(slots, BLOCK_N)), 16)


@torch.library.custom_op("specbench::masked_attention", mutates_args=("arrivals",))
def masked_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
                     order: torch.Tensor, count: torch.Tensor, arrivals: torch.Tensor) -> torch.Tensor:
    """``q`` [1, H, n, D] over ``keys``/``values`` [1, KVH, S, D] where ``mask`` [1, 1, n, S] is True, visiting the
    ``count`` blocks listed first in ``order``, with ``arrivals`` int32 zeros (left zero) (``prepare``) ->
    [1, H, n, D]."""
    _, h, n, d = q.shape
    kv_heads, slots = keys.shape[1], keys.shape[2]
    if keys.stride(-1) != 1 or values.stride() != keys.stride() or q.stride(-1) != 1:
        raise ValueError("masked_attention needs K/V of one layout and contiguous head dims")
    group = h // kv_heads
    block_m = max(16, min(64, triton.next_power_of_2(n * group)))
    row_blocks = triton.cdiv(n * group, block_m)
    if kv_heads * row_blocks > arrivals.numel():
        raise ValueError(f"masked_attention needs {kv_heads * row_blocks} arrival counters ({kv_heads} KV heads x "
                         f"{row_blocks} row blocks), the CacheMask holds {arrivals.numel()} (MAX_TILES)")
    splits = split_count(kv_heads, row_blocks, slots)
    m = torch.empty(h, splits, n, dtype=torch.float32, device=q.device)
    l = torch.empty_like(m)
    acc = torch.empty(h, splits, n, d, dtype=torch.float32, device=q.device)
    out = torch.empty_like(q)
    mask2 = mask[0, 0]
    _split_kernel[(kv_heads, row_blocks, splits)](
        q, keys, values, mask2, order, count, arrivals, m, l, acc, out, n, slots, 1.0 / math.sqrt(d), q.stride(1),
        q.stride(2), keys.stride(1), keys.stride(2), mask2.stride(0), mask2.stride(1), out.stride(1), out.stride(2),
        GROUP=group, D=d, BLOCK_M=block_m, BLOCK_N=BLOCK_N, SPLITS=splits, num_warps=4, num_stages=2)
    return out


@masked_attention.register_fake
def _(q, keys, values, mask, order, count, arrivals):
    return torch.empty_like(q)
