"""``benchmarks.bench_tile_reads``' read-only kernel loads exactly the tiles its grid's programs own."""

from tests.conftest import run_in_interpreter

SCRIPT = """
import torch
from benchmarks.bench_tile_reads import launch_reads, reference_reads
gen = torch.Generator().manual_seed(1)
w = torch.randint(-2**31, 2**31 - 1, (128 // 8 * 5, 48), dtype=torch.int32, generator=gen)  # K 640, N 48
x = torch.randint(-2**31, 2**31 - 1, (7, 640 // 4), dtype=torch.int32, generator=gen)  # int8 rows
ok = []
for bk, bn, bm, split in [(128, 32, 4, 2), (64, 16, 8, 3), (128, 64, 16, 1)]:
    ok.append(torch.equal(launch_reads(w, x, 7, bk, bn, bm, split, stages=2, warps=1),
                          reference_reads(w, x, 7, bk, bn, bm, split)))
print("ok" if all(ok) else ok)
"""


def test_tile_reads_matches_the_reference_in_the_interpreter():
    assert run_in_interpreter(SCRIPT) == "ok"
