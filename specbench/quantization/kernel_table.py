"""Committed kernel data per GPU: the config ``tune`` measured fastest per weight shape and M bucket, and the
backend order ``quant.backend=auto`` follows per scheme (``backends``, from ``bench_quant_linear`` runs).

Tables live in ``specbench/quantization/tables/<gpu>.json`` (``<gpu>`` = "h200", "h100", from the CUDA device
name) and are written by ``python -m specbench.quantization.tune --gpu <gpu>``; nothing is tuned at run time.
A lookup takes the entry of the smallest tuned M bucket >= M (else the largest) for the weight's
(N, K, group kind); a shape with no entry uses ``heuristic``, and the answer says which it was.

Heuristic (documented fallback): M = 1 -> the ``gemv`` path, BN 64, BK 512 (or the largest power of two <= 512
that the K split allows); M > 1 -> the ``dot`` path, BM = the power of two >= M in [16, 64], BN 64, BK 128 (64
when the group is smaller); K is split so that about two programs per SM run (at most 16 splits), for M <= 128.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import torch

from specbench.quantization.int4_kernel import KernelConfig, check_shape

TABLES = Path(__file__).parent / "tables"
GPUS = ("h200", "h100")
SMS = {"h200": 132, "h100": 132}
MAX_SPLIT_M = 128  # larger M (prefill) never splits K, so the counters need only cover M <= 128


def gpu_key(device: torch.device | None = None) -> str | None:
    """"h200"/"h100" for those GPUs, else None."""
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(device).lower()
    return next((g for g in GPUS if g in name), None)


def group_kind(k: int, group: int) -> str:
    return "channel" if group == k else f"g{group}"


def shape_key(n: int, k: int, group: int) -> str:
    return f"{n}x{k}:{group_kind(k, group)}"


@lru_cache(maxsize=None)
def load(gpu: str | None) -> dict:
    """The committed table for ``gpu`` ({} when there is none)."""
    path = TABLES / f"{gpu}.json"
    if gpu is None or not path.exists():
        return {}
    return json.loads(path.read_text())


# auto's order per scheme where the GPU has no table (or the table names none): specbench's kernel, then the
# maintained ones that can run it
DEFAULT_ORDER = {"w4a16": ("triton", "gemlite", "fbgemm", "torch", "marlin"), "w4a8": ("gemlite", "marlin"),
                 "w8a8_int8": ("gemlite",), "w8a8_fp8": ("fbgemm", "gemlite", "torch"), "w8a16": ("gemlite",),
                 "w4a8_fp8": ("fbgemm",)}


def backend_order(gpu: str | None, scheme: str) -> tuple[tuple[str, ...], str]:
    """The backends ``quant.backend=auto`` tries for ``scheme``, fastest first, and where the order comes from."""
    order = load(gpu).get("backends", {}).get(scheme)
    if order:
        return tuple(order), f"table {gpu}"
    return DEFAULT_ORDER.get(scheme, ()), "default order"


def _split_for(tiles: int, k: int, bk: int, sms: int) -> int:
    split = 1
    while split < 16 and tiles * split < 2 * sms and k % (2 * split * bk) == 0:
        split *= 2
    return split


def heuristic(n: int, k: int, group: int, m: int, sms: int = 132) -> KernelConfig:
    if m == 1:
        bk = 512
        while bk > 8 and (k % bk or (group != k and group % bk and bk % group)):
            bk //= 2
        return KernelConfig("gemv", 64, bk, _split_for(-(-n // 64), k, bk, sms), warps=4, stages=1)
    bm = min(64, max(16, 1 << (m - 1).bit_length()))
    bk = 128 if group == k or group >= 128 else 64
    while k % bk:
        bk //= 2
    tiles = -(-n // 64) * -(-m // bm)
    split = _split_for(tiles, k, bk, sms) if m <= MAX_SPLIT_M else 1
    return KernelConfig("dot", 64, bk, split, BM=bm, warps=4, stages=3)


def choose(gpu: str | None, n: int, k: int, group: int, m: int) -> tuple[KernelConfig, str]:
    """(config, "table <gpu>" or "heuristic") for an [N, K] weight at M rows."""
    entries = load(gpu).get("entries", {}).get(shape_key(n, k, group), {})
    if entries:
        buckets = sorted(int(b) for b in entries)
        bucket = next((b for b in buckets if b >= m), buckets[-1])
        cfg = KernelConfig(**entries[str(bucket)]["config"])
        if cfg.path == "gemv" and m > 1:  # a one-row entry only serves M = 1
            cfg = None
        if cfg is not None and m > MAX_SPLIT_M and cfg.split > 1:
            cfg = KernelConfig(**{**cfg.as_dict(), "split": 1})
        if cfg is not None and check_shape(n, k, group, cfg) is None:
            return cfg, f"table {gpu}"
    return heuristic(n, k, group, m, SMS.get(gpu, 132)), "heuristic"
