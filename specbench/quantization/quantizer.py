"""The group quantizer ``build_model`` calls, the public entry points, and per-model reporting."""

from __future__ import annotations

import torch
from torch import nn

from specbench.quantization.backends import get_backend
from specbench.quantization.checkpoint import CheckpointFormat, detect
from specbench.model.transformer import stacked_linears
from specbench.quantization.linear import QuantLinear, stacked_quant_linear, swap_linear
from specbench.quantization.qweight import QuantizedWeight, quantize_rtn
from specbench.quantization.schemes import DENSE, QuantConfigError, Scheme, get_scheme


class Quantizer:
    """Swaps each linear of a module group for a ``QuantLinear``: read from the checkpoint, or RTN-quantized.

    A stacked linear (q/k/v, gate/up) is read from its parts' checkpoint tensors and stays one linear
    (``stacked_quant_linear``).

    ``rotated`` records that the weights carry a folded rotation (SpecMQuant Rot / QQQ checkpoints); nothing
    in a checkpoint marks it, so it comes from the run's config and is only reported.
    """

    def __init__(self, backend: str, *, scheme: Scheme | None = None, reader: CheckpointFormat | None = None,
                 group_size: int | None = None, sym: bool = True, quantize_lm_head: bool = False,
                 rotated: bool = False):
        self.backend, self.scheme, self.reader = backend, scheme, reader
        self.group_size, self.sym = group_size, sym
        self.quantize_lm_head, self.rotated = quantize_lm_head, rotated
        for name in reader.schemes if reader else (scheme.name,):
            get_backend(backend, name)  # "auto" is resolved per linear

    def info(self) -> dict:
        if self.reader:
            return {"scheme": ",".join(self.reader.schemes), "backend": self.backend, "source": self.reader.method,
                    "quantize_lm_head": self.quantize_lm_head, "rotated": self.rotated}
        group = self.scheme.default_group if self.group_size is None else self.group_size
        return {"scheme": self.scheme.name, "backend": self.backend, "source": "rtn", "group_size": group,
                "sym": self.sym, "quantize_lm_head": self.quantize_lm_head, "rotated": self.rotated}

    def _read(self, prefix: str, parts: dict[str, int], linear: nn.Linear,
              extra: dict) -> dict[str, QuantizedWeight] | None:
        """The checkpoint's quantized weight of each part of ``linear`` (its q/k/v, or itself), on its device;
        None where the checkpoint holds them dense."""
        if self.reader is None:
            return None
        read = {p: self.reader.read((prefix + p).rstrip("."), f"{p}." if p else "", extra) for p in parts}
        dense = [p for p, qw in read.items() if qw is None]
        if len(dense) == len(parts):
            return None
        if dense:
            quantized = [prefix + p for p in read if p not in dense]
            raise QuantConfigError(f"{[prefix + p for p in dense]} are dense in the checkpoint but {quantized} of the "
                                   "same stacked linear are quantized; one linear cannot mix them")
        for p, qw in read.items():
            if qw.shape != (parts[p], linear.in_features):
                raise QuantConfigError(f"checkpoint weight {prefix}{p} is {list(qw.shape)}; the model config "
                                       f"gives {[parts[p], linear.in_features]}")
        return {p.rpartition(".")[2] or "weight": qw.to(linear.weight.device) for p, qw in read.items()}

    def __call__(self, group: nn.Module, prefix: str, extra: dict[str, torch.Tensor], missing: set[str]) -> set[str]:
        provided = set()
        stacks = stacked_linears(group)
        linears = [(n, m) for n, m in group.named_modules() if isinstance(m, nn.Linear)]
        for name, linear in linears:
            full = (prefix + name).rstrip(".")
            parts = stacks.get(name, {name: linear.out_features})
            weights = self._read(prefix, parts, linear, extra)
            if weights is not None:
                provided |= {f"{p}.weight" if p else "weight" for p in parts}
            elif self.scheme is not None and (full != "lm_head" or self.quantize_lm_head):
                # row-wise scales: quantizing the stacked weight equals quantizing each part
                weights = {"weight": quantize_rtn(linear.weight.data, self.scheme, self.group_size, self.sym)}
            else:
                continue
            dtype = linear.weight.dtype
            if full == "lm_head" and not self.quantize_lm_head:  # a checkpoint's quantized head, kept 16-bit
                linear.weight.data.copy_(next(iter(weights.values())).dequantize().to(dtype))
                continue
            swap_linear(group, name, stacked_quant_linear(weights, linear.bias, self.backend, dtype))
        return provided & missing


def build_quantizer(scheme: str, backend: str, hf_config: dict, *, quantize_lm_head: bool = False,
                    group_size: int | None = None, sym: bool = True, rotated: bool = False) -> Quantizer | None:
    """The quantizer for ``load_model``/``build_model``, or None for a dense 16-bit model.

    ``scheme``: "auto" (the checkpoint's ``quantization_config``, dense if none), "bf16"/"fp16" (dense), or a
    scheme name (round-to-nearest at load time; on a quantized checkpoint it must equal the checkpoint's).
    """
    reader = detect(hf_config)
    if scheme == "auto":
        return Quantizer(backend, reader=reader, quantize_lm_head=quantize_lm_head, rotated=rotated) if reader else None
    if scheme in DENSE:
        if reader:
            raise QuantConfigError(f"the checkpoint is quantized ({reader.method}); use scheme 'auto' to load it")
        return None
    spec = get_scheme(scheme)
    if reader is not None:
        if reader.schemes != (scheme,):
            raise QuantConfigError(f"the checkpoint is {reader.method} {','.join(reader.schemes)}, not {scheme}; "
                                   "use scheme 'auto' or a dense checkpoint")
        return Quantizer(backend, reader=reader, quantize_lm_head=quantize_lm_head, rotated=rotated)
    return Quantizer(backend, scheme=spec, group_size=group_size, sym=sym, quantize_lm_head=quantize_lm_head,
                     rotated=rotated)


def quantize_model(model: nn.Module, scheme: str, backend: str, *, group_size: int | None = None, sym: bool = True,
                   quantize_lm_head: bool = False, rotated: bool = False) -> nn.Module:
    """RTN-quantize an already built native model in place (dense schemes leave it as is); returns it."""
    from specbench.model.loading import module_groups

    if scheme == "auto":
        raise QuantConfigError("quantize_model applies RTN; 'auto' is for loading quantized checkpoints")
    if scheme in DENSE:
        return model
    quantizer = Quantizer(backend, scheme=get_scheme(scheme), group_size=group_size, sym=sym,
                          quantize_lm_head=quantize_lm_head, rotated=rotated)
    for prefix, group in module_groups(model):
        quantizer(group, prefix, {}, set())
    if model.config.tie_word_embeddings:
        quantizer(model.lm_head, "lm_head.", {}, set())
    model.rotated = rotated
    return model


def describe(model: nn.Module) -> dict:
    """Which scheme/backend/kernel/packing each quantized linear uses, plus a one-row summary for results."""
    layers = {name: m.info for name, m in model.named_modules() if isinstance(m, QuantLinear)}
    layers = {name.removesuffix(".quant"): info for name, info in layers.items()}
    joined = lambda field: " | ".join(sorted({str(i.get(field)) for i in layers.values()})) or "none"  # noqa: E731
    fields = ("scheme", "backend", "backend_choice", "kernel", "packing", "group_size", "autotune")
    summary = {f"quant_{f}": joined(f) for f in fields}
    summary["quant_linears"] = len(layers)
    summary["quant_lm_head"] = "lm_head" in layers
    summary["rotated"] = bool(getattr(model, "rotated", False))
    return {"summary": summary, "layers": layers}
