"""gemlite Triton kernels (A16W4, A16W8, A8W8 int8/fp8, A8W4 int8), with a per-GPU autotune cache on disk."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from specbench.quantization.backends import Backend, register

_cache_loaded: dict[str, str] = {}


def gemlite_cache_path(device: torch.device | str | None = None) -> Path:
    """``$XDG_CACHE_HOME/specbench/gemlite/<gpu-name>.json`` (``~/.cache`` by default)."""
    name = torch.cuda.get_device_name(device).lower().replace(" ", "_")
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "specbench" / "gemlite" / f"{name}.json"


def _gemlite(device: torch.device):
    """Import gemlite and load the autotune cache once: ours for this GPU, else gemlite's H100 one on an H200."""
    import gemlite

    key = str(device)
    if key not in _cache_loaded:
        path = gemlite_cache_path(device)
        if not path.is_file() and "h200" in path.stem:
            path = Path(gemlite.__file__).parent / "configs" / "h100.json"
        _cache_loaded[key] = str(path) if path.is_file() and gemlite.load_config(str(path)) else "none"
    return gemlite


def save_gemlite_cache(device: torch.device | str | None = None) -> Path:
    """Write gemlite's autotune results (merged with what the file held) to this GPU's cache file."""
    import gemlite

    path = gemlite_cache_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    gemlite.cache_config(str(path))
    return path


@register
class Gemlite(Backend):
    name = "gemlite"
    schemes = ("w4a16", "w8a16", "w8a8_int8", "w8a8_fp8", "w4a8")
    package, extra = "gemlite", "gpu"

    def limits(self, qw, dtype):
        n, k = qw.shape
        if dtype not in (torch.float16, torch.bfloat16):
            return f"gemlite needs fp16/bf16 activations, not {dtype}"
        if k % 32 or k % qw.group_size or qw.group_size < 16:
            return "gemlite needs in_features % 32 == 0 and group size >= 16"
        if qw.channel_scale is not None:
            return "gemlite's int8-activation int4 path is per-channel only (w4a8 group -1)"
        return None

    def build(self, qw, dtype):
        helper = _gemlite(qw.device).helper
        dev, act = qw.device, qw.scheme.act
        if qw.scheme.bits == 8:
            maker = {"none": helper.A16W8_INT8, "int8": helper.A8W8_INT8_dynamic, "fp8": helper.A8W8_FP8_dynamic}[act]
            return maker(device=dev, dtype=dtype).from_weights(weight=qw.codes, scales=qw.scales.reshape(-1, 1))
        if qw.zeros is None:
            w, zeros = (qw.codes + 8).to(torch.uint8), torch.full_like(qw.scales, 8.0)
        else:
            w, zeros = qw.codes.to(torch.uint8), qw.zeros
        if act == "none":
            return helper.A16W4_HQQ_INT(device=dev, dtype=dtype).from_weights(w, qw.scales.to(dtype), zeros.to(dtype))
        maker = helper.A8W4_HQQ_INT_dynamic(device=dev, dtype=dtype, fp8=torch.int8, post_scale=True, fp32_scale=True)
        return maker.from_weights(w, qw.scales, zeros)

    def describe(self, qw):
        kind = {("int4", "none"): "A16W4", ("int8", "none"): "A16W8", ("int8", "int8"): "A8W8 int8 dynamic",
                ("fp8", "fp8"): "A8W8 fp8 dynamic", ("int4", "int8"): "A8W4 int8 dynamic"}[(qw.scheme.weight, qw.scheme.act)]
        packing = "int32 over K" if qw.scheme.bits == 4 else "8-bit [K, N]"
        cache = _cache_loaded.get(str(qw.device), "none")
        return {"kernel": f"gemlite {kind} (GEMV/split-K/GEMM by M)",
                "packing": f"gemlite {packing}, autotune cache {cache}"}
