"""Rotary position embedding: the frequencies (with linear or Llama-3 scaling), the per-token cos/sin tables, the
rotation in PyTorch, and its Triton twin that the KV-cache write and the attention kernel apply as they load keys
and queries (so a layer runs no RoPE kernel of its own on a GPU)."""

from __future__ import annotations

import math

import torch

from specbench.model.config import ModelConfig

try:
    import triton
    import triton.language as tl
except ImportError:  # the optional GPU extra; the CPU tests run the kernels through Triton's interpreter
    triton = None


def rope_inv_freq(config: ModelConfig) -> torch.Tensor:
    """Inverse frequencies of the rotary embedding, with linear or Llama-3 frequency scaling."""
    dim = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    scaling = config.rope_scaling or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        inv_freq = inv_freq / scaling["factor"]
    elif kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_len = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
        smooth = (old_len / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old_len / high) & (wavelen <= old_len / low)
        inv_freq = torch.where(medium, blended, scaled)
    return inv_freq.float()


def rope_tables(inv_freq: torch.Tensor, positions: torch.Tensor,
                dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE's (cos, sin) [n, head_dim] in ``dtype`` for rope ``positions`` [n]."""
    angles = positions.float()[:, None] * inv_freq[None, :]
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` [B, H, n, D] by the angles whose cos/sin are [n, D] (half-split convention), in float32 and
    rounded once to ``x``'s dtype, as ``roped_rows`` does (so eager, compiled and kernel forwards agree)."""
    half = x.shape[-1] // 2
    f = x.float()
    rotated = torch.cat((-f[..., half:], f[..., :half]), dim=-1)
    return (f * cos.float() + rotated * sin.float()).to(x.dtype)


if triton is not None:

    @triton.jit
    def roped_rows(x_ptr, offsets, dims, cos_ptr, sin_ptr, positions, ok, D: tl.constexpr):
        """The rows of ``x`` at ``offsets`` [R, 1] (+ ``dims`` [1, D]) rotated by the angles of table rows
        ``positions`` [R, 1] (``apply_rope``'s half-split convention), in float32; ``ok`` [R, 1] masks rows."""
        x = tl.load(x_ptr + offsets + dims, mask=ok, other=0.0).to(tl.float32)
        partner = tl.load(x_ptr + offsets + (dims + D // 2) % D, mask=ok, other=0.0).to(tl.float32)
        cos = tl.load(cos_ptr + positions * D + dims, mask=ok, other=0.0).to(tl.float32)
        sin = tl.load(sin_ptr + positions * D + dims, mask=ok, other=0.0).to(tl.float32)
        return x * cos + tl.where(dims < D // 2, -partner, partner) * sin
