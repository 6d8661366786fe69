"""Split-K partial sums that a quantized linear leaves to its consumer in a compiled forward (``QuantLinear.partials``):
``linear_output`` asks for them, ``settle`` adds them where the consumer needs whole rows. Consumers that read them
directly: Inductor's kernels (the adds fold into them) and the attention kernel (q/k/v, ``attention``)."""

from __future__ import annotations

import torch
from torch import nn


def linear_output(linear: nn.Module, x: torch.Tensor, row_reduced: bool = False) -> torch.Tensor:
    """``linear(x)``, or its float32 split-K partial sums [split, *x.shape[:-1], out] where the linear leaves their sum
    to the consumer (``QuantLinear.partials``: inside a compiled forward, where Inductor adds them in the consumer's
    kernel and the linear's programs need not wait for one another); ``row_reduced``: the consumer reduces each row
    (a norm), which bounds the partials it can take."""
    # looked up on the class: a plain module's ``__getattr__`` would raise and catch an error per call
    out = linear.partials(x, row_reduced) if hasattr(type(linear), "partials") else None
    return linear(x) if out is None else out


def settle(out: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A ``linear_output`` with its partial sums added, in ``like``'s dtype (unchanged if it has ``like``'s rank).
    Added one by one, not by ``sum``: Inductor folds elementwise adds into the consumer's kernel, where a sum over
    eight or more became a kernel of its own (session 47)."""
    if out.dim() == like.dim():
        return out
    total = out[0]
    for part in out[1:]:
        total = total + part
    return total.to(like.dtype)
