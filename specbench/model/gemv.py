"""A Triton GEMV for decode: ``y = W x (+ b)`` for one token row and a 16-bit weight, read at HBM bandwidth.

At batch 1 a decode step is a chain of matrix-vector products whose cost is reading the weights once.
cuBLAS picks GEMM tiles for these and reaches about three quarters of the copy bandwidth on an H200; this
kernel streams the weight in [BLOCK_N, BLOCK_K] tiles, accumulates products in float32 registers and reduces
once per program. Configurations are autotuned per (N, K) on first use (before any CUDA-graph capture, since
``GraphedCall`` warms up first); ``chosen_configs`` says which, and result rows record it (``gemv_configs``). The
op is a ``torch.library`` custom op so ``torch.compile`` keeps it whole and fuses the norms, RoPE and activations
around it. Rows other than one, other dtypes and CPU tensors go to
``F.linear``. ``GemvLinear`` is the linear the engine builds a 16-bit model with on a GPU (``engine.gemv``).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra
    triton = None

DTYPES = (torch.bfloat16, torch.float16)
MIN_K_BLOCK = 256  # every configuration's BLOCK_K divides K; smaller or odd K goes to F.linear


def available() -> bool:
    return triton is not None and torch.cuda.is_available()


if triton is not None:

    @triton.jit
    def gemv_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, K: tl.constexpr, HAS_BIAS: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        """One program: rows [pid·BLOCK_N, +BLOCK_N) of ``y``, over all of K (which BLOCK_K divides)."""
        rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        row_ok = rows < N
        cols = tl.arange(0, BLOCK_K)
        w_ptrs = w_ptr + rows[:, None].to(tl.int64) * K + cols[None, :]
        acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            x = tl.load(x_ptr + k + cols).to(tl.float32)
            w = tl.load(w_ptrs + k, mask=row_ok[:, None], other=0.0, eviction_policy="evict_first")
            acc += w.to(tl.float32) * x[None, :]
        y = tl.sum(acc, axis=1)
        if HAS_BIAS:
            y += tl.load(b_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
        tl.store(y_ptr + rows, y.to(y_ptr.dtype.element_ty), mask=row_ok)

    CONFIGS = [
        triton.Config({"BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=s)
        for n, k, w, s in [
            (1, 2048, 4, 1), (1, 4096, 8, 1), (2, 512, 2, 1), (2, 1024, 2, 1), (2, 1024, 4, 1), (2, 2048, 4, 1),
            (2, 2048, 8, 1), (4, 512, 4, 1), (4, 1024, 4, 1), (4, 1024, 8, 1), (4, 2048, 8, 1), (8, 256, 4, 1),
            (8, 512, 4, 1), (8, 512, 8, 1), (8, 1024, 8, 1), (16, 256, 8, 1), (16, 512, 8, 1),
            (2, 1024, 4, 3), (4, 512, 4, 3), (8, 256, 4, 3),
        ]
    ]

    def _fitting(configs, named_args, **kwargs):
        return [c for c in configs if named_args["K"] % c.kwargs["BLOCK_K"] == 0]

    tuned_kernel = triton.autotune(CONFIGS, key=["N", "K"], prune_configs_by={"early_config_prune": _fitting})(
        gemv_kernel)


def chosen_configs() -> str:
    """The tile the autotuner chose for each (N, K, dtype) this process ran, for results ("none" before any)."""
    if triton is None or not tuned_kernel.cache:
        return "none"
    return "; ".join(f"{n}x{k} {'/'.join(dtypes)}: BLOCK_N {c.kwargs['BLOCK_N']}, BLOCK_K {c.kwargs['BLOCK_K']}, "
                     f"{c.num_warps} warps, {c.num_stages} stages"
                     for (n, k, *dtypes), c in sorted(tuned_kernel.cache.items(), key=lambda t: str(t[0])))


def launch(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], config: dict | None = None):
    """``weight`` [N, K] times ``x`` [K] (+ ``bias`` [N]) -> [N]; ``config`` fixes the block sizes (tests)."""
    n, k = weight.shape
    y = torch.empty(n, dtype=x.dtype, device=x.device)
    if config is None:
        tuned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),)](x, weight, bias, y, n, k, bias is not None)
    else:
        gemv_kernel[(triton.cdiv(n, config["BLOCK_N"]),)](x, weight, bias, y, n, k, bias is not None, **config)
    return y


@torch.library.custom_op("specbench::gemv", mutates_args=())
def gemv(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    """``weight @ x (+ bias)`` for a vector ``x`` [K], by the autotuned Triton kernel."""
    return launch(x, weight, bias)


@gemv.register_fake
def _(x, weight, bias):
    return x.new_empty(weight.shape[0])


def fits(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether ``x @ weight.T`` is one row the kernel handles (else it is left to ``F.linear``)."""
    k = weight.shape[-1]
    return (x.is_cuda and x.numel() == k and x.dtype == weight.dtype and weight.dtype in DTYPES
            and weight.is_contiguous() and k % MIN_K_BLOCK == 0)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``F.linear``, by the GEMV kernel when ``x`` holds one row."""
    if not fits(x, weight):
        return F.linear(x, weight, bias)
    return gemv(x.reshape(-1).contiguous(), weight, bias).reshape(*x.shape[:-1], weight.shape[0])


class GemvLinear(nn.Linear):
    """``nn.Linear`` whose one-row calls (decode steps) run the Triton GEMV."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
