"""Quantization schemes, named as the papers do (W = weight bits, A = activation bits)."""

from __future__ import annotations

from dataclasses import dataclass


class QuantConfigError(ValueError):
    """An unknown scheme, an invalid setting, or a checkpoint layout that cannot be read."""


class UnsupportedBackendError(QuantConfigError):
    """A scheme x backend x device combination that cannot run."""


@dataclass(frozen=True)
class Scheme:
    name: str
    weight: str  # "int4", "int8" or "fp8"
    act: str  # "none" (16-bit), "int8" or "fp8": per-token dynamic
    group_sizes: tuple[int, ...]  # allowed group sizes; -1 = one group per output channel
    default_group: int = -1
    asym: bool = False  # asymmetric (zero point) weights allowed
    doc: str = ""

    @property
    def bits(self) -> int:
        return 4 if self.weight == "int4" else 8


SCHEMES = {
    s.name: s
    for s in (
        Scheme("w8a8_int8", "int8", "int8", (-1,), doc="SmoothQuant-style: int8 per-channel weights, int8 per-token acts"),
        Scheme("w8a8_fp8", "fp8", "fp8", (-1,), doc="fp8 e4m3 per-channel weights, fp8 e4m3 per-token acts"),
        Scheme("w8a16", "int8", "none", (-1,), doc="int8 per-channel weights, 16-bit acts"),
        Scheme("w4a16", "int4", "none", (-1, 32, 64, 128, 256), 128, asym=True, doc="GPTQ/AWQ-style int4 weights"),
        Scheme("w4a8", "int4", "int8", (-1, 128), 128, doc="QQQ-style int4 weights (group 128 with int8-range "
               "group scales and a per-channel scale), int8 per-token acts"),
        Scheme("w4a8_fp8", "int4", "fp8", (-1, 128), 128, doc="int4 symmetric weights with power-of-two group "
               "scales times a per-channel scale (exact in fp8), fp8 e4m3 per-token acts"),
    )
}
DENSE = ("bf16", "fp16")


def get_scheme(name: str) -> Scheme:
    if name not in SCHEMES:
        raise QuantConfigError(
            f"unknown quantization scheme {name!r}; known: {', '.join([*DENSE, 'auto', *SCHEMES])}"
        )
    return SCHEMES[name]


def check_layout(scheme: Scheme, group_size: int, sym: bool) -> None:
    """Raise if ``scheme`` cannot use this group size or asymmetric weights."""
    if group_size not in scheme.group_sizes:
        raise QuantConfigError(f"{scheme.name} supports group sizes {list(scheme.group_sizes)}, not {group_size}")
    if not sym and not scheme.asym:
        raise QuantConfigError(f"{scheme.name} weights are symmetric only (sym=False is only for w4a16)")
