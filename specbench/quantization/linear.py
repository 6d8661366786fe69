"""``QuantLinear``: a canonical quantized weight packed for one kernel backend, in place of an ``nn.Linear``;
``stacked_quant_linear``: one such linear for a stacked q/k/v or gate/up (``QuantParts`` where the parts' layouts
cannot share one packed weight)."""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from specbench.quantization.backends import build_kernel, get_backend, resolve
from specbench.quantization.qweight import QuantizedWeight, stack


class QuantLinear(nn.Module):
    def __init__(self, qw: QuantizedWeight, bias: torch.Tensor | None, backend: str, dtype: torch.dtype):
        super().__init__()
        backend, chosen = resolve(backend, qw, dtype)
        impl = get_backend(backend, qw.scheme.name)
        self.out_features, self.in_features = qw.shape
        self.kernel = build_kernel(impl, replace(qw, perm=None), dtype)
        self.register_buffer("perm", qw.perm)
        self.bias = None if bias is None else nn.Parameter(bias.detach().to(dtype), requires_grad=False)
        self.info = {"scheme": qw.scheme.name, "backend": backend, "backend_choice": chosen, **impl.describe(qw),
                     "group_size": qw.group_size,
                     "zero_point": qw.zeros is not None, "act_order": qw.perm is not None}

    def _kernel_rows(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` [..., K] as the kernel's [M, K] rows, permuted where the weight's inputs are (act-order)."""
        x = x.reshape(-1, self.in_features)
        return x if self.perm is None else x.index_select(1, self.perm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        y = self.kernel(self._kernel_rows(x))
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*lead, self.out_features)

    def partials(self, x: torch.Tensor, row_reduced: bool = False) -> torch.Tensor | None:
        """``forward``'s output as float32 split-K partial sums [split, *lead, N] where the kernel leaves their sum to
        the consumer (``TritonLayer.partials``; ``transformer.settle`` adds them), else None (no bias is added
        there)."""
        if not torch.compiler.is_compiling() or self.bias is not None:
            return None  # eager code runs ``forward`` (only a compiled forward drops the work it does not use)
        kernel_partials = getattr(self.kernel, "partials", None)
        if kernel_partials is None:
            return None
        out = kernel_partials(self._kernel_rows(x), row_reduced)
        return None if out is None else out.reshape(out.shape[0], *x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        info = self.info
        return f"in_features={self.in_features}, out_features={self.out_features}, {info['scheme']} on {info['backend']}"


class QuantParts(nn.Module):
    """Quantized projections that cannot be packed as one weight (e.g. GPTQ act-order parts with different
    perms), run as one linear: each part's ``QuantLinear``, outputs concatenated in row order."""

    def __init__(self, parts: dict[str, QuantLinear]):
        super().__init__()
        self.parts = nn.ModuleDict(parts)
        first = next(iter(parts.values()))
        self.in_features, self.out_features = first.in_features, sum(p.out_features for p in parts.values())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([part(x) for part in self.parts.values()], dim=-1)


def stacked_quant_linear(parts: dict[str, QuantizedWeight], bias: torch.Tensor | None, backend: str,
                         dtype: torch.dtype) -> QuantLinear | QuantParts:
    """One linear over ``parts`` (name -> weight, in row order) and the stacked ``bias``: a ``QuantLinear`` of
    their weights concatenated along N where their layouts agree, else ``QuantParts``."""
    joined = stack(list(parts.values()))
    if joined is not None:
        linear = QuantLinear(joined, bias, backend, dtype)
        if len(parts) > 1:
            linear.info["stacked"] = "+".join(parts)
        return linear
    rows = [qw.shape[0] for qw in parts.values()]
    biases = [None] * len(parts) if bias is None else bias.split(rows)
    return QuantParts({name: QuantLinear(qw, b, backend, dtype) for (name, qw), b in zip(parts.items(), biases)})


def swap_linear(root: nn.Module, name: str, new: nn.Module) -> None:
    """Put ``new`` at ``root.<name>``; for ``name == ""`` (the group is the linear itself, e.g. the LM head)
    the linear keeps its place, forwards through ``new`` and drops its own weight reference."""
    if name:
        parent, _, attr = name.rpartition(".")
        setattr(root.get_submodule(parent), attr, new)
        return
    root.quant = new
    root.forward = new.forward
    root.weight = nn.Parameter(torch.empty(0, device=root.weight.device), requires_grad=False)
