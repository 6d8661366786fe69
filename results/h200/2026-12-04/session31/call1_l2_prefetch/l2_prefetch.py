"""Asking L2 for the next linear's weight while this kernel runs.

A decode or verify forward reads each layer's weights once, in order, and its W4A16 kernels are latency-bound at the
8B shapes: DRAM sits partly idle during each kernel, between kernels and during attention and norms. A kernel given a
``PrefetchPlan`` first hands the TMA unit bulk L2 prefetches (``cp.async.bulk.prefetch.L2``, fire and forget: nothing
waits for them) of the next linear's weight, so that kernel finds part of its weight in L2. Weight loads are
``evict_first``, so the current kernel's stream does not push the prefetched lines out first.

The plan covers the first ``fraction`` of each of the next kernel's K ranges (its ``split`` programs per column
start there at once), as ``segments`` runs of ``segment_bytes`` every ``segment_stride`` bytes, cut into ``chunk``
bytes per lane; each program's ``lanes`` lanes take consecutive chunks. Under Triton's interpreter nothing is
prefetched (no inline PTX there).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU install runs the reference backend only
    triton = None

MIN_CHUNK = 4096  # bytes a lane asks for at least: fewer, larger requests


@dataclass(frozen=True)
class PrefetchPlan:
    """Where the next weight's prefetched runs are (see the module docstring); ``address`` is a device pointer."""

    address: int
    segment_stride: int
    segment_bytes: int
    segments: int
    chunk: int
    per_segment: int  # lanes per segment

    def args(self) -> tuple[int, int, int, int, int, int]:
        return (self.address, self.segment_stride, self.segment_bytes, self.segments, self.chunk, self.per_segment)


def plan(packed: torch.Tensor, split: int, fraction: float, lanes_total: int) -> PrefetchPlan | None:
    """A plan for the first ``fraction`` of each of ``split`` K ranges of ``packed`` (int32 [K/8/WB, N, WB]), spread
    over ``lanes_total`` lanes; None when there is nothing to prefetch or fewer lanes than ranges."""
    blocks, n, wb = packed.shape
    block_bytes = n * wb * packed.element_size()
    per_split = blocks // split
    rows = min(per_split, max(1, round(per_split * fraction))) if fraction > 0 else 0
    if rows == 0 or lanes_total < split:
        return None
    segment_bytes = rows * block_bytes
    chunk = max(MIN_CHUNK, -(-segment_bytes // (lanes_total // split)))
    chunk = -(-chunk // 16) * 16
    per_segment = -(-segment_bytes // chunk)
    return PrefetchPlan(packed.data_ptr(), per_split * block_bytes, segment_bytes, split, chunk, per_segment)


if triton is not None:

    @triton.jit
    def prefetch_l2(address, segment_stride, segment_bytes, segments, chunk, per_segment, LANES: tl.constexpr):
        """This program's lanes' bulk L2 prefetches of a ``PrefetchPlan``'s runs."""
        pid = (tl.program_id(2) * tl.num_programs(1) + tl.program_id(1)) * tl.num_programs(0) + tl.program_id(0)
        lane = pid * LANES + tl.arange(0, LANES)
        segment = lane // per_segment
        offset = (lane % per_segment).to(tl.int64) * chunk
        size = tl.minimum(segment_bytes - offset, chunk)
        ok = (segment < segments) & (size > 0)
        where = address + segment.to(tl.int64) * segment_stride + offset
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.b32 p, $2, 0; @p cp.async.bulk.prefetch.L2.global [$1], $3; mov.b32 $0, 0; }",
            "=r,l,r,r", [where, ok.to(tl.int32), tl.where(ok, size, 0).to(tl.int32)],
            dtype=tl.int32, is_pure=False, pack=1)
