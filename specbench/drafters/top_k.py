"""The ``k`` most likely ids of each row of a draft pass's logits and their log-probabilities.

An EAGLE expansion pass needs, for each of its ``k`` frontier rows, the top ``k`` of a 128k-entry vocabulary and
the row's log-normaliser. torch's ``topk`` over such rows runs a multi-block radix select of about a dozen
kernels (84 µs per pass at k = 10 on the H200, next to the 250 µs LM head). On a GPU two Triton kernels do it
instead, in about 20 µs (docs/benchmarks.md, sessions 5 and 11): each program of the first takes one
``BLOCK``-entry chunk of a row and writes its top ``k`` (by repeated max) and its max and sum of exponentials; the
second merges a row's chunks. Ties go to the lowest id. Elsewhere (a CPU, no Triton) torch does it in two passes:
the top ``k`` of each 1024-entry chunk, then of those.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra; the CPU tests run the kernels through Triton's interpreter
    triton = None

TORCH_CHUNK = 1024  # torch path: vocabularies above 4 chunks take the top k per chunk first
BLOCK = 1024  # kernel path: vocabulary entries per program of the first kernel
MAX_K = 32


def top_log_probs(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids [..., k] int64, log-probabilities [..., k] float32, each row in descending order) of ``logits``."""
    if logits.is_cuda and triton is not None and k <= MAX_K and logits.shape[-1] >= k:
        rows = logits.reshape(-1, logits.shape[-1])
        ids, values = chunked_top_k(rows if rows.stride(-1) == 1 else rows.contiguous(), k)
        return ids.view(*logits.shape[:-1], k), values.view(*logits.shape[:-1], k)
    return torch_top_log_probs(logits, k)


def torch_top_log_probs(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``top_log_probs`` with torch's ``topk``: the same set (every row's top k lie among their chunks' top k)."""
    logits = logits.float()
    vocab = logits.shape[-1]
    if vocab <= 4 * TORCH_CHUNK:
        top = logits.topk(k)
        ids, values = top.indices, top.values
    else:
        chunks = -(-vocab // TORCH_CHUNK)
        padded = F.pad(logits, (0, chunks * TORCH_CHUNK - vocab), value=float("-inf"))
        local = padded.view(*logits.shape[:-1], chunks, TORCH_CHUNK).topk(k)
        offsets = torch.arange(chunks, device=logits.device)[:, None] * TORCH_CHUNK
        candidates = (local.indices + offsets).flatten(-2)
        top = local.values.flatten(-2).topk(k)
        ids, values = candidates.gather(-1, top.indices), top.values
    return ids, (values - torch.logsumexp(logits, -1, keepdim=True)).clamp(max=0.0)  # a log-prob is <= 0


if triton is not None:

    @triton.jit
    def _take_best(values, ids, taken, shift, K: tl.constexpr, FINAL: tl.constexpr, out_v, out_i):
        """Store the ``K`` best untaken entries of ``values`` in order (ties: lowest id). ``FINAL``: as log-probs
        ``value - shift`` (<= 0) with int64 ids; else raw, id -1 where fewer than ``K`` entries exist."""
        big = 2**31 - 1
        for j in tl.static_range(K):
            best = tl.max(tl.where(taken, float("-inf"), values), 0)
            pick = tl.min(tl.where((values == best) & ~taken, ids, big), 0)
            if FINAL:
                tl.store(out_v + j, tl.minimum(best - shift, 0.0))
                tl.store(out_i + j, tl.where(pick == big, 0, pick).to(tl.int64))
            else:
                tl.store(out_v + j, best)
                tl.store(out_i + j, tl.where(pick == big, -1, pick))
            taken = taken | (ids == pick)

    @triton.jit
    def _top_k_chunk_kernel(x_ptr, stride, vocab, cand_v, cand_i, chunk_m, chunk_s, chunks,
                            K: tl.constexpr, BLOCK: tl.constexpr):
        """One chunk of one row: its top ``K`` and its max and sum of exp(x - max)."""
        row, chunk = tl.program_id(0), tl.program_id(1)
        ids = chunk * BLOCK + tl.arange(0, BLOCK)
        valid = ids < vocab
        x = tl.load(x_ptr + row * stride + ids, mask=valid, other=float("-inf")).to(tl.float32)
        m = tl.max(x, 0)
        safe = tl.where(m == float("-inf"), 0.0, m)
        tl.store(chunk_m + row * chunks + chunk, m)
        tl.store(chunk_s + row * chunks + chunk, tl.sum(tl.where(valid, tl.exp(x - safe), 0.0), 0))
        at = (row * chunks + chunk) * K
        _take_best(x, ids, ~valid, 0.0, K, False, cand_v + at, cand_i + at)

    @triton.jit
    def _top_k_merge_kernel(cand_v, cand_i, chunk_m, chunk_s, out_v, out_i, chunks,
                            K: tl.constexpr, C: tl.constexpr, N: tl.constexpr):
        """One row: the top ``K`` of its chunks' candidates, as log-probabilities under the row's normaliser."""
        row = tl.program_id(0)
        c = tl.arange(0, C)
        m = tl.load(chunk_m + row * chunks + c, mask=c < chunks, other=float("-inf"))
        s = tl.load(chunk_s + row * chunks + c, mask=c < chunks, other=0.0)
        top = tl.max(m, 0)
        safe = tl.where(top == float("-inf"), 0.0, top)
        lse = safe + tl.log(tl.sum(s * tl.exp(m - safe), 0))
        lanes = tl.arange(0, N)
        live = lanes < chunks * K
        values = tl.load(cand_v + row * chunks * K + lanes, mask=live, other=float("-inf"))
        ids = tl.load(cand_i + row * chunks * K + lanes, mask=live, other=-1)
        _take_best(values, ids, ids < 0, lse, K, True, out_v + row * K, out_i + row * K)


@torch.library.custom_op("specbench::chunked_top_k", mutates_args=())
def chunked_top_k(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``top_log_probs`` of ``logits`` [rows, V] (rows contiguous) by the two kernels -> (ids int64, float32)."""
    rows, vocab = logits.shape
    chunks = triton.cdiv(vocab, BLOCK)
    cand_v = torch.empty(rows, chunks, k, dtype=torch.float32, device=logits.device)
    cand_i = torch.empty(rows, chunks, k, dtype=torch.int32, device=logits.device)
    chunk_m = torch.empty(rows, chunks, dtype=torch.float32, device=logits.device)
    chunk_s = torch.empty_like(chunk_m)
    _top_k_chunk_kernel[(rows, chunks)](logits, logits.stride(0), vocab, cand_v, cand_i, chunk_m, chunk_s, chunks,
                                        K=k, BLOCK=BLOCK, num_warps=4)
    values = torch.empty(rows, k, dtype=torch.float32, device=logits.device)
    ids = torch.empty(rows, k, dtype=torch.int64, device=logits.device)
    _top_k_merge_kernel[(rows,)](cand_v, cand_i, chunk_m, chunk_s, values, ids, chunks, K=k,
                                 C=triton.next_power_of_2(chunks), N=triton.next_power_of_2(chunks * k), num_warps=8)
    return ids, values


@chunked_top_k.register_fake
def _(logits, k):
    rows = logits.shape[0]
    return (logits.new_empty(rows, k, dtype=torch.int64), logits.new_empty(rows, k, dtype=torch.float32))
