"""``l2_prefetch.plan``: the runs a kernel asks L2 for cover the first share of each of the next kernel's K ranges,
and nothing outside the next weight."""

from __future__ import annotations

import pytest
import torch

from specbench.quantization import l2_prefetch


def covered(p: l2_prefetch.PrefetchPlan, lanes_total: int) -> list[tuple[int, int]]:
    """The [start, end) byte ranges (relative to the weight) the plan's lanes ask for, as the kernel computes them."""
    out = []
    for lane in range(lanes_total):
        segment, offset = divmod(lane, p.per_segment)
        offset *= p.chunk
        size = min(p.segment_bytes - offset, p.chunk)
        if segment < p.segments and size > 0:
            start = segment * p.segment_stride + offset
            out.append((start, start + size))
    return out


@pytest.mark.parametrize("blocks,n,split,fraction,lanes", [(32, 6144, 1, 1.0, 48 * 128), (112, 4096, 4, 0.25, 4096),
                                                            (32, 28672, 8, 0.5, 224 * 8 * 128), (4, 64, 2, 0.5, 128),
                                                            (32, 4096, 3, 0.4, 10), (32, 4096, 3, 0.4, 1000)])
def test_plan_covers_the_first_share_of_each_k_range(blocks, n, split, fraction, lanes):
    packed = torch.zeros(blocks, n, 16, dtype=torch.int32)
    p = l2_prefetch.plan(packed, split, fraction, lanes)
    block_bytes = n * 16 * 4
    per_split = blocks // split
    rows = max(1, round(per_split * fraction))
    want = set()
    for s in range(split):
        start = s * per_split * block_bytes
        want.update(range(start // 16, (start + rows * block_bytes) // 16))
    got = set()
    for start, end in covered(p, lanes):
        assert start % 16 == 0 and end % 16 == 0 and end <= packed.numel() * 4
        got.update(range(start // 16, end // 16))
    assert got == want
    assert p.chunk >= l2_prefetch.MIN_CHUNK


def test_no_plan_for_nothing_to_prefetch():
    packed = torch.zeros(8, 64, 16, dtype=torch.int32)
    assert l2_prefetch.plan(packed, 2, 0.0, 128) is None
