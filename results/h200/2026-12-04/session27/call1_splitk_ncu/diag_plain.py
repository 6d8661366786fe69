"""Diagnostic only (wrong results): the W4A16 kernel with its split-K epilogue replaced by a plain store of each
program's partial, so that the table configs' times show what the reduction (fence, counter, last program's sum)
costs. Run as ``python diag_plain.py <profile_int4 args>``."""
import sys

import triton
import triton.language as tl

from specbench.quantization import int4_kernel


@triton.jit
def plain_store(acc, y_ptr, part_ptr, count_ptr, rows, cols, M, N, stride_ym, SPLITS: tl.constexpr):
    out_mask = (rows < M)[:, None] & (cols < N)[None, :]
    tl.store(part_ptr + tl.program_id(2) * M * N + rows[:, None] * N + cols[None, :], acc, mask=out_mask)


int4_kernel.store_tile = plain_store
from benchmarks.profile_int4 import main  # noqa: E402

main(sys.argv[1:])
