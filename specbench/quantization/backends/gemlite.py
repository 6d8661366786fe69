"""gemlite Triton kernels (A16W4, A16W8, A8W8 int8/fp8, A8W4 int8), a per-GPU config cache and a bounded autotune.

gemlite (0.6) runs one of four ``triton.autotune`` kernel families chosen by M (``gemlite.core.get_matmul_type``:
GEMV_REVSPLITK for 4-bit weights at M <= 4, GEMV_SPLITK for 8-bit at M <= 2, GEMM_SPLITK below M = 64, GEMM
from 64). Each is keyed on (M bucket, N, K, group size, packing, type id), and N and K are compile-time
constants, so every new layer shape compiles again. Its config pruner first looks the key up in the config
cache (``gemlite.load_config``); on a miss Triton compiles and times every candidate of the preset: "fast"
(gemlite's default, ~10-25 per family, ~10 s per shape and M bucket) or "max" (hundreds). The mode is
``SPECBENCH_GEMLITE_AUTOTUNE``:

- ``fast`` (default): the cached config for the key, else the cached one of the same shape and type at the
  nearest M bucket, else the first candidate of gemlite's no-autotune preset ("default") after gemlite's own
  pruning (block sizes fitted to M, N, K). Nothing is timed: a new shape and M bucket costs one compile. The
  dynamic activation-quantization kernels (A8 schemes) run their first config instead of timing three.
- ``tune``: gemlite's own autotune ("fast" preset); ``max``: its exhaustive one ("max" preset).

Every key resolved in this process is listed in ``TUNING`` (family, key, where its config came from).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from specbench.quantization.backends import Backend, register
from specbench.quantization.schemes import QuantConfigError

AUTOTUNE_ENV = "SPECBENCH_GEMLITE_AUTOTUNE"
PRESETS = {"fast": "default", "tune": "fast", "max": "max"}  # our mode -> gemlite's candidate list
MODE_DOC = {"fast": "cached config (nearest M of the shape) else gemlite's default preset, untimed",
            "tune": "gemlite autotune, fast preset", "max": "gemlite autotune, max preset"}
TUNING: list[dict] = []
_state: dict = {"mode": None, "cache": {}}  # cache: GPU name -> the config file loaded


def autotune_mode() -> str:
    """The mode this process uses (fixed at the first gemlite layer; later changes of the variable are ignored)."""
    if _state["mode"] is not None:
        return _state["mode"]
    mode = os.environ.get(AUTOTUNE_ENV, "").strip().lower() or "fast"
    if mode not in PRESETS:
        raise QuantConfigError(f"{AUTOTUNE_ENV}={mode!r}; use one of {', '.join(PRESETS)}")
    return mode


def gemlite_cache_path(device: torch.device | str | None = None) -> Path:
    """``$XDG_CACHE_HOME/specbench/gemlite/<gpu-name>.json`` (``~/.cache`` by default)."""
    name = torch.cuda.get_device_name(device).lower().replace(" ", "_")
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "specbench" / "gemlite" / f"{name}.json"


def _autotuners():
    """(family, triton Autotuner) for each of gemlite's kernel modules, as they are after ``set_autotune``."""
    import importlib

    from triton.runtime.autotuner import Autotuner

    for name in ("gemv", "gemv_revsplitK", "gemv_splitK", "gemm_splitK", "gemm"):
        module = importlib.import_module(f"gemlite.triton_kernels.{name}_kernels")
        for obj in vars(module).values():
            if isinstance(obj, Autotuner):
                yield module.MATMUL_TYPE, obj


def _no_timing(fn, quantiles=None, **kwargs):
    return [0.0, 0.0, 0.0]


def _nearest_cached(table: dict, key: tuple) -> tuple[int, str] | None:
    """(M, signature) of the cached config for the same shape and type at the M bucket nearest to ``key``'s M
    (any of them is valid at this M; gemlite itself shares one config across an M bucket)."""
    import math

    tail = ", " + str(tuple(key[1:]))[1:]  # signatures read "(M, N, K, group, packing, type)"
    near = [(int(sig[1:-len(tail)]), sig) for sig in table if sig.endswith(tail)]
    return min(near, key=lambda e: abs(math.log2(max(e[0], 1) / key[0])), default=None)


def _instrument(family: str, tuner, mode: str) -> None:
    """Log each key's config source; in fast mode keep only the first pruned candidate and skip timing it."""
    import gemlite.core
    from gemlite.triton_kernels.utils import get_closest_m

    prune = tuner.early_config_prune

    def early_prune(configs, nargs, **kwargs):
        key = tuple(nargs[k] for k in ("M", "N", "K", "group_size", "elements_per_sample", "type_id"))
        table = gemlite.core.GEMLITE_TRITON_CONFIG_CACHE.get(family, {})
        signature = str((get_closest_m(key[0]), *key[1:]))
        source = "cache" if signature in table else ("default" if mode == "fast" else "tuned")
        near = _nearest_cached(table, key) if source == "default" else None
        if near is not None:  # lent for this one pruning call, so a save does not record it as tuned
            table[signature], source = table[near[1]], f"cache (M={near[0]})"
        try:
            chosen = list(prune(configs, nargs, **kwargs))
        finally:
            if near is not None:
                del table[signature]
        if mode == "fast":
            chosen = chosen[:1]
        elif source == "tuned":
            source = f"tuned over {len(chosen)}"
        TUNING.append({"family": family, "M": key[0], "N": key[1], "K": key[2], "group_size": key[3],
                       "elements_per_sample": key[4], "type_id": key[5], "source": source,
                       "config": {k: v for k, v in chosen[0].all_kwargs().items() if isinstance(v, (int, bool, str))}})
        return chosen

    tuner.early_config_prune = early_prune
    if mode == "fast":
        if len(tuner.configs) == 1:  # Triton skips the pruner (and so gemlite's config cache) for one candidate
            tuner.configs = tuner.configs * 2
        tuner.do_bench = _no_timing  # one candidate is left: nothing to compare


def _gemlite(device: torch.device):
    """Import gemlite, set the autotune mode once, and load a config cache once per GPU model: ours, else on an
    H100/H200 gemlite's packaged H100 one (same SM 9.0 and shared memory per block)."""
    import gemlite

    if _state["mode"] is None:
        mode = autotune_mode()
        gemlite.set_autotune(PRESETS[mode])  # rebuilds the kernel modules with this candidate list
        for family, tuner in _autotuners():
            _instrument(family, tuner, mode)
        if mode == "fast":  # the activation-quantization kernels (BLOCK_SIZE_M 1/2/4 per M and K): the first
            from triton.runtime.autotuner import Autotuner

            for tuner in vars(gemlite.quant_utils).values():
                if isinstance(tuner, Autotuner):
                    tuner.configs = tuner.configs[:1]
        _state["mode"] = mode
    gpu = torch.cuda.get_device_name(device)
    if gpu not in _state["cache"]:
        path = gemlite_cache_path(device)
        if not path.is_file() and ("h200" in path.stem or "h100" in path.stem):
            path = Path(gemlite.__file__).parent / "configs" / "h100.json"
        _state["cache"][gpu] = str(path) if path.is_file() and gemlite.load_config(str(path)) else "none"
    return gemlite


def save_gemlite_cache(device: torch.device | str | None = None) -> Path:
    """Write this GPU's config file: what it held, what was loaded, and (tune/max modes) what was tuned here.
    Fast mode adds nothing of its own: its untimed picks would read as tuned in a later run."""
    import gemlite
    import gemlite.core

    path = gemlite_cache_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    if autotune_mode() != "fast":
        gemlite.cache_config(str(path))
        return path
    saved = json.loads(path.read_text()) if path.is_file() else {}
    for family, entries in gemlite.core.GEMLITE_TRITON_CONFIG_CACHE.items():
        saved.setdefault(family, {}).update(entries)
    path.write_text(json.dumps(saved))
    return path


def kernel_choice(module, m: int) -> dict:
    """The kernel family a packed gemlite layer runs at M = ``m`` and where its config came from (``TUNING``;
    None before the layer ran at this M bucket)."""
    from gemlite.core import get_matmul_type
    from gemlite.triton_kernels.utils import get_closest_m

    meta = module.get_meta_args()
    type_id = {2: 1, 15: 14}.get(meta[5], meta[5]) * 100 + meta[1]  # bf16 shares fp16's configs, as in gemlite
    family = get_matmul_type(m, module.W_nbits)
    key = (family, get_closest_m(m), module.out_features, module.in_features, module.group_size,
           module.elements_per_sample, type_id)
    sources = [e["source"] for e in TUNING if (e["family"], get_closest_m(e["M"]), e["N"], e["K"], e["group_size"],
                                                e["elements_per_sample"], e["type_id"]) == key]
    return {"family": family, "config": sources[-1] if sources else None}


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
                ("fp8", "fp8"): "A8W8 fp8 dynamic", ("int4", "int8"): "A8W4 int8 dynamic"}
        kind = kind[qw.scheme.weight, qw.scheme.act]
        packing = "int32 over K" if qw.scheme.bits == 4 else "8-bit [K, N]"
        mode = autotune_mode()
        gpu = torch.cuda.get_device_name(qw.device) if qw.device.type == "cuda" else None
        cache = _state["cache"].get(gpu, "none")
        return {"kernel": f"gemlite {kind} (GEMV/split-K/GEMM by M)", "autotune": f"{mode} ({MODE_DOC[mode]})",
                "packing": f"gemlite {packing}, config cache {cache}"}
