"""Split-K for specbench's Triton kernels: each program's K range, and output tiles with no zeroing kernel.

K is U units long (BK tiles, or whole groups where a kernel keeps groups apart). With ``uneven`` program p of
``split`` takes units [pU/split, (p+1)U/split), so any split up to U runs and a grid can fill whole waves; without
it the split divides U and every range is K/split. The two compile differently, and neither is faster for every
config, so the choice is part of the config (``tune`` times both).

Each of the ``split`` programs of an output tile writes its float32 partial sum to a workspace [split, M, N] and
bumps the tile's int32 counter; the last one to arrive sums the partials, writes ``y`` and resets the counter to
zero, so the counters stay zero between launches (and CUDA-graph replays). A launch that leaves the sum to its
consumer (``deferred``: inside a compiled forward, where Inductor folds the sum into the next kernel) skips the
counters and returns the workspace.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra; the CPU tests run it through Triton's interpreter
    triton = None


@dataclass(frozen=True)
class TileConfig:
    """The launch shape of a split-K Triton kernel (each kernel's config class adds its own fields)."""

    path: str  # "gemv" (M = 1 only) or "dot"
    BN: int
    BK: int
    split: int = 1
    BM: int = 16  # dot path only
    warps: int = 4
    stages: int = 2
    uneven: bool = False  # each program computes its own K range (any split up to K's units); else equal ranges

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def one_row(self) -> bool:
        """Whether this config serves M = 1 alone."""
        return self.path == "gemv"


def check_split(k: int, unit: int, cfg: TileConfig) -> str | None:
    """Why ``cfg`` cannot split K = ``k`` in units of ``unit`` inputs, or None."""
    if k % unit:
        return f"in_features {k} must be a multiple of {unit}, the unit its split takes whole (BK={cfg.BK} or a group)"
    if cfg.split > k // unit:
        return f"in_features {k} has {k // unit} K units of {unit}, fewer than split={cfg.split}"
    if not cfg.uneven and (k // unit) % cfg.split:
        return (f"in_features {k} ({k // unit} K units of {unit}) does not split into {cfg.split} equal ranges; "
                "uneven=True gives each program its own range")
    return None


def counters_needed(n: int, m: int, bn: int, bm: int) -> int:
    """Counter slots a split-K launch uses: one per [bm, bn] output tile."""
    return -(-n // bn) * -(-m // bm)


def tile_rows(cfg: TileConfig) -> int:
    """Output rows of one of ``cfg``'s tiles: one for a one-row config, else BM."""
    return 1 if cfg.one_row else cfg.BM


def tile_counters(n: int, m: int, cfg: TileConfig) -> int:
    """``counters_needed`` by a launch of ``cfg`` at M rows."""
    return counters_needed(n, m, cfg.BN, tile_rows(cfg))


def grid(n: int, m: int, cfg: TileConfig) -> tuple[int, int, int]:
    """The grid of a launch of ``cfg`` over [M, N] outputs: (column tiles, row tiles, split)."""
    return -(-n // cfg.BN), -(-m // tile_rows(cfg)), cfg.split


def store_mode(split: int, deferred: bool) -> int:
    """``store_tile``'s ``SPLIT_K`` for a launch of ``split`` K ranges: 0 whole K, 1 the last program sums, 2 each
    program's partial left to the caller (``deferred``)."""
    return 0 if split == 1 else 2 if deferred else 1


def outputs(m: int, n: int, dtype: torch.dtype, device, split: int, bn: int, bm: int,
            counters: torch.Tensor, deferred: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(``y`` [M, N], the partial-sum workspace, which is ``y`` itself without a split); checks the counters.
    ``deferred``: the workspace [split, M, N] is the output (``y`` is the workspace too)."""
    if deferred and split > 1:
        part = torch.empty(split, m, n, dtype=torch.float32, device=device)
        return part, part
    y = torch.empty(m, n, dtype=dtype, device=device)
    if split == 1:
        return y, y
    if counters.numel() < counters_needed(n, m, bn, bm):
        raise ValueError(f"{counters.numel()} split-K counters, {counters_needed(n, m, bn, bm)} needed")
    return y, torch.empty(split, m, n, dtype=torch.float32, device=device)


if triton is not None:

    @triton.jit
    def k_range(K, UNIT: tl.constexpr, BK: tl.constexpr, UNEVEN: tl.constexpr):
        """(first input, inputs) of this program's K range (``check_split``)."""
        pid_k, split = tl.program_id(2), tl.num_programs(2)
        if UNEVEN:
            units = K // UNIT
            k_begin = tl.multiple_of(pid_k * units // split * UNIT, BK)
            return k_begin, (pid_k + 1) * units // split * UNIT - k_begin
        else:
            k_len = K // split
            return tl.multiple_of(pid_k * k_len, BK), k_len

    @triton.jit
    def store_tile(acc, y_ptr, part_ptr, count_ptr, rows, cols, M, N, stride_ym, SPLIT_K: tl.constexpr):
        """Write the [BM, BN] float32 tile ``acc`` of output rows ``rows`` and columns ``cols`` to ``y``, or with
        split K (``SPLIT_K`` 1), as this program's partial (the last program of the tile sums them), or (2) as this
        program's partial alone (``outputs(deferred=True)``)."""
        out_mask = (rows < M)[:, None] & (cols < N)[None, :]
        if SPLIT_K == 0:
            tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], acc.to(y_ptr.dtype.element_ty), mask=out_mask)
        else:
            pid_k, split = tl.program_id(2), tl.num_programs(2)
            tile = tl.program_id(1) * tl.num_programs(0) + tl.program_id(0)
            part = part_ptr + rows[:, None] * N + cols[None, :]
            tl.store(part + pid_k * M * N, acc, mask=out_mask)
            if SPLIT_K == 1:
                done = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel")
                if done == split - 1:  # the last program of this tile sums the partials
                    total = tl.zeros_like(acc)
                    for i in range(split):
                        total += tl.load(part + i * M * N, mask=out_mask, other=0.0, cache_modifier=".cg")
                    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], total.to(y_ptr.dtype.element_ty),
                             mask=out_mask)
                    tl.atomic_xchg(count_ptr + tile, 0)
