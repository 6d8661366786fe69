"""SmoothQuant (Xiao et al., 2023): move activation outliers into weights before W8A8 quantization.

For input channel j, ``s_j = max|X_j|^alpha / max|W_j|^(1-alpha)``; X is divided by s (folded into the
preceding RMSNorm weight or linear rows) and W multiplied by s, so the float function is unchanged.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn


@torch.no_grad()
def smooth(prev: nn.Module, linears: list[nn.Linear], act_absmax: torch.Tensor, alpha: float = 0.5,
           rows: slice = slice(None)) -> torch.Tensor:
    """Fold smoothing into ``prev`` (an RMSNorm, or the output ``rows`` of a linear, producing the input) and
    ``linears``; return s."""
    w_absmax = torch.stack([lin.weight.abs().amax(0).float() for lin in linears]).amax(0)
    s = (act_absmax.float().clamp_min(1e-5).pow(alpha) / w_absmax.clamp_min(1e-5).pow(1 - alpha)).clamp_min(1e-5)
    for lin in linears:
        lin.weight.mul_(s.to(lin.weight.dtype))
    if isinstance(prev, nn.Linear):
        prev.weight[rows].div_(s.to(prev.weight.dtype)[:, None])
        if prev.bias is not None:
            prev.bias[rows].div_(s.to(prev.bias.dtype))
    else:
        prev.weight.div_(s.to(prev.weight.dtype))
    return s


@contextmanager
def record_act_absmax(model: nn.Module) -> Iterator[dict[str, torch.Tensor]]:
    """Within the block, record each linear's per-input-channel activation absmax, keyed by module name."""
    stats: dict[str, torch.Tensor] = {}

    def hook(name):
        def fn(module, args):
            m = args[0].detach().abs().reshape(-1, args[0].shape[-1]).amax(0).float()
            stats[name] = torch.maximum(stats[name], m) if name in stats else m
        return fn

    handles = [m.register_forward_pre_hook(hook(n)) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    try:
        yield stats
    finally:
        for h in handles:
            h.remove()


def smooth_model(model: nn.Module, act_absmax: dict[str, torch.Tensor], alpha: float = 0.5) -> None:
    """Smooth every decoder layer of a native model: norm -> q/k/v, norm -> gate/up, up -> down."""
    for i, layer in enumerate(model.model.layers):
        p = f"model.layers.{i}."
        attn, mlp = layer.self_attn, layer.mlp
        smooth(layer.input_layernorm, [attn.qkv], act_absmax[p + "self_attn.qkv"], alpha)
        smooth(layer.post_attention_layernorm, [mlp.gate_up], act_absmax[p + "mlp.gate_up"], alpha)
        up = slice(mlp.down_proj.in_features, None)  # the up rows of the stacked gate/up
        smooth(mlp.gate_up, [mlp.down_proj], act_absmax[p + "mlp.down_proj"], alpha, rows=up)
