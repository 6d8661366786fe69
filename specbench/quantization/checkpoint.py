"""Detect a checkpoint's quantization from ``config.json``'s ``quantization_config`` and read its linears."""

from __future__ import annotations

import re

import torch

from specbench.quantization.formats import read_awq, read_compressed, read_gptq
from specbench.quantization.qweight import FP8, QuantizedWeight
from specbench.quantization.schemes import SCHEMES, QuantConfigError

METHODS = ("gptq", "awq", "compressed-tensors")
GPTQ_KEYS = ("qweight", "qzeros", "scales", "g_idx")
CT_KEYS = ("weight", "weight_packed", "weight_scale", "weight_zero_point", "weight_shape", "weight_g_idx")
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
INTEGERS = (torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8)
# the dtypes each published tensor may have; a quantized 8-bit ``weight`` is int8 or fp8 by its scheme
DTYPES = {"qweight": (torch.int32,), "qzeros": (torch.int32,), "scales": FLOATS, "g_idx": INTEGERS,
          "weight_packed": (torch.int32,), "weight_scale": FLOATS, "weight_zero_point": (*INTEGERS, *FLOATS),
          "weight_shape": INTEGERS, "weight_g_idx": INTEGERS}


def _take(extra: dict[str, torch.Tensor], key: str, names: tuple[str, ...], **dtypes) -> dict[str, torch.Tensor]:
    """Pop ``key + name`` for each name present, checking its dtype (``dtypes`` adds or overrides allowed ones)."""
    out = {n: extra.pop(key + n) for n in names if key + n in extra}
    for n, t in out.items():
        allowed = dtypes.get(n, DTYPES.get(n))
        if t.dtype not in allowed:
            raise QuantConfigError(f"checkpoint tensor {key}{n} has dtype {t.dtype}; the layout stores it as one of "
                                   f"{[str(d) for d in allowed]}")
    return out


class CheckpointFormat:
    """One published layout; ``read`` pops a linear's tensors from ``extra`` (None: the linear is dense)."""

    method = ""
    schemes: tuple[str, ...] = ()

    def read(self, name: str, key: str, extra: dict) -> QuantizedWeight | None:
        raise NotImplementedError


class Gptq(CheckpointFormat):
    method = "gptq"

    def __init__(self, cfg: dict):
        bits = cfg.get("bits", 4)
        if bits not in (4, 8):
            raise QuantConfigError(f"GPTQ checkpoints with {bits} bits are not supported (4 or 8)")
        self.scheme = SCHEMES["w4a16" if bits == 4 else "w8a16"]
        self.schemes = (self.scheme.name,)
        self.v1 = cfg.get("checkpoint_format", "gptq") != "gptq_v2"

    def read(self, name, key, extra):
        if key + "qweight" not in extra:
            return None
        return read_gptq(_take(extra, key, GPTQ_KEYS), self.scheme, self.v1)


class Awq(CheckpointFormat):
    method = "awq"
    schemes = ("w4a16",)

    def __init__(self, cfg: dict):
        version = str(cfg.get("version", "gemm")).lower()
        if version != "gemm" or cfg.get("bits", cfg.get("w_bit", 4)) != 4:
            raise QuantConfigError(f"only 4-bit AWQ checkpoints in the GEMM layout are supported, not {version!r}")

    def read(self, name, key, extra):
        if key + "qweight" not in extra:
            return None
        return read_awq(_take(extra, key, ("qweight", "qzeros", "scales")), SCHEMES["w4a16"])


def _ct_scheme(group: dict) -> str:
    w, a = group.get("weights") or {}, group.get("input_activations")
    act = "none"
    if a is not None:
        if not a.get("dynamic") or a.get("strategy") != "token" or a.get("num_bits") != 8:
            raise QuantConfigError(f"only dynamic per-token 8-bit activations are supported, got {a}")
        act = a.get("type", "int")
    weight = f"{w.get('type', 'int')}{w.get('num_bits')}"
    names = {("int8", "int"): "w8a8_int8", ("float8", "float"): "w8a8_fp8", ("int8", "none"): "w8a16",
             ("int4", "none"): "w4a16", ("int4", "int"): "w4a8"}
    if (weight, act) not in names:
        raise QuantConfigError(f"compressed-tensors weights {weight} with activations {act} match no scheme; "
                               f"supported: {sorted(set(names.values()))}")
    return names[(weight, act)]


def _matches(name: str, targets: list[str]) -> bool:
    return any(t == "Linear" or t == name or (t.startswith("re:") and re.match(t[3:], name)) for t in targets)


class CompressedTensors(CheckpointFormat):
    method = "compressed-tensors"
    FORMATS = ("int-quantized", "float-quantized", "naive-quantized", "pack-quantized")

    def __init__(self, cfg: dict):
        groups = cfg.get("config_groups") or {}
        formats = {g.get("format", cfg.get("format")) for g in groups.values()}
        if not groups or not formats <= set(self.FORMATS):
            raise QuantConfigError(f"compressed-tensors formats {sorted(map(str, formats))} unsupported; use {self.FORMATS}")
        self.groups = [(g.get("targets", []), _ct_scheme(g)) for g in groups.values()]
        self.ignore = cfg.get("ignore") or []
        self.schemes = tuple(dict.fromkeys(s for _, s in self.groups))

    def read(self, name, key, extra):
        if key + "weight_scale" not in extra or _matches(name, self.ignore):
            return None
        scheme = next((s for targets, s in self.groups if _matches(name, targets)), None)
        if scheme is None:
            raise QuantConfigError(f"{name} carries quantized tensors but matches no config group's targets")
        codes = (FP8,) if SCHEMES[scheme].weight == "fp8" else (torch.int8,)
        return read_compressed(_take(extra, key, CT_KEYS, weight=codes), SCHEMES[scheme])


def detect(hf_config: dict) -> CheckpointFormat | None:
    """The reader for ``hf_config['quantization_config']``, or None for a dense checkpoint."""
    cfg = hf_config.get("quantization_config")
    if not cfg:
        return None
    method = cfg.get("quant_method")
    readers = {"gptq": Gptq, "awq": Awq, "compressed-tensors": CompressedTensors}
    if method not in readers:
        raise QuantConfigError(f"quant_method {method!r} is not supported; supported: {', '.join(METHODS)}")
    return readers[method](cfg)
