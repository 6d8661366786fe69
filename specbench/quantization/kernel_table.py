"""Committed kernel data per GPU: the config ``tune`` measured fastest per weight shape and M bucket, and the
backend order ``quant.backend=auto`` follows per scheme (``backends``, from ``bench_quant_linear`` runs).

Tables live in ``specbench/quantization/tables/<gpu>.json`` (``<gpu>`` = "h200", "h100", "h800", from the CUDA
device name) and are written by ``python -m specbench.quantization.tune --gpu <gpu>``; nothing is tuned at run time.
A lookup takes the entry of the smallest tuned M bucket >= M (else the largest) for the weight's
(N, K, group kind); a shape with no entry runs those of the nearest tuned shape of its kind (``nearest_entries``,
within ``NEAR`` in N and K), else ``heuristic``, and the answer says which it was. W4A16 weights with
zero points (AWQ, asymmetric GPTQ) have entries of their own (``tune --zero-points``: the kernel that subtracts a
loaded zero point is not the one that subtracts 8), keyed ``NxK:<group kind>:zp``; an M bucket they lack is the
symmetric weight's.

Entries are keyed by scheme: the w4a16 kernel's (``int4_kernel``) as ``NxK:<group kind>``, the int8-activation
kernels' (``int8_kernel``, schemes w8a8_int8 and w4a8) as ``<scheme>:NxK:<group kind>``.

A GPU runs its sibling's entries (``SIBLINGS``, same architecture and SM count) where its own table, if it has one,
lacks the weight's M bucket, and results say so ("table h200 (for h100)"); its own table holds only what was timed on
it.

Heuristics (documented fallbacks). w4a16 on sm_90, groups of 128 and up or per-channel: ``heuristic_hopper``, the
table's usual shape of entry. Otherwise: M = 1 -> the ``gemv`` path, BN 64, BK 512 (or the largest power of two
<= 512 that divides K and the group); M > 1 -> the ``dot`` path, BM = the power of two >= M in [16, 64], BN 64, BK
128 (64 when the group is smaller). w8a8_int8 / w4a8: M = 1 -> ``gemv``, BK 512 for 8 bits and 1024 for 4 (512
weight bytes per channel), halved down to 32 until it divides K and the group, BN = 16 KB of weights per tile over
those bytes, between 32 and 128; M > 1 -> ``dot``, BM as above, BN 64, BK 128 (halved the same way; on sm_90 with
per-channel weights BK 256, 4 stages and about one program per SM, as the table's entries are). For all: K is split so
that about two programs per SM run (at most 16 splits), for M <= 128.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import torch

from specbench.quantization import int8_kernel
from specbench.quantization.int4_kernel import KernelConfig, block_rows, check_shape
from specbench.quantization.int8_kernel import A8Config
from specbench.quantization.schemes import SCHEMES

TABLES = Path(__file__).parent / "tables"
GPUS = ("h200", "h100", "h800")  # all sm_90: their heuristic is ``heuristic_hopper``
SMS = {"h200": 132, "h100": 132, "h800": 132}
# the same architecture (sm_90) and SM count: a GPU without a committed table of its own runs its sibling's entries
SIBLINGS = {"h100": "h200", "h800": "h200"}
NEAR = 1.5  # an untuned weight runs the entries of a tuned one at most this factor away in N and in K
MAX_SPLIT_M = 128  # larger M (prefill) never splits K, so the counters need only cover M <= 128


def gpu_key(device: torch.device | None = None) -> str | None:
    """"h200", "h100" or "h800" for those GPUs (the name's part: a GH200 is "h200"), else None (also for a CPU
    device on a machine with GPUs: Triton's interpreter runs the kernels there)."""
    if not torch.cuda.is_available() or (device is not None and torch.device(device).type != "cuda"):
        return None
    name = torch.cuda.get_device_name(device).lower()
    return next((g for g in GPUS if g in name), None)


def group_kind(k: int, group: int) -> str:
    return "channel" if group == k else f"g{group}"


def shape_key(n: int, k: int, group: int, scheme: str = "w4a16", zero_points: bool = False) -> str:
    key = f"{n}x{k}:{group_kind(k, group)}" + (":zp" if zero_points else "")
    return key if scheme == "w4a16" else f"{scheme}:{key}"


class TableKey(NamedTuple):
    scheme: str
    n: int
    k: int
    group: int  # K for per-channel weights
    zero_points: bool


def parse_key(key: str) -> TableKey:
    """The weight a table key names (``shape_key``'s inverse)."""
    scheme, rest = ("w4a16", key) if key[0].isdigit() else key.split(":", 1)  # shape_key leaves w4a16 unprefixed
    shape, kind, *zp = rest.split(":")
    n, k = map(int, shape.split("x"))
    return TableKey(scheme, n, k, k if kind == "channel" else int(kind[1:]), zp == ["zp"])


# the committed tables each GPU runs with, its own first, then its sibling's; read once, so that a forward traced by
# torch.compile touches no file
TABLES_OF = {gpu: tuple(g for g in (gpu, SIBLINGS.get(gpu)) if g and (TABLES / f"{g}.json").exists()) for gpu in GPUS}


def table_of(gpu: str | None) -> str | None:
    """The first committed table ``gpu`` runs with: its own, else its sibling's (``SIBLINGS``), else None."""
    return next(iter(TABLES_OF.get(gpu, ())), None)


def table_label(gpu: str | None, table: str | None = None) -> str:
    """How results name a table ``gpu`` runs with (default ``table_of``): "table h200", or "table h200 (for h100)"
    for a sibling's."""
    table = table or table_of(gpu)
    return f"table {table}" + ("" if table == gpu else f" (for {gpu})")


@lru_cache(maxsize=None)
def load(gpu: str | None) -> dict:
    """The committed tables ``gpu`` runs with as one ({} when there is none): per weight and M bucket its own table's
    entry over its sibling's, each entry naming its table under "table"; every other field from its own table where it
    has it ("backends_table": whose backend order it is)."""
    names = TABLES_OF.get(gpu, ())
    if not names:
        return {}
    merged: dict = {"entries": {}}
    for name in reversed(names):
        table = json.loads((TABLES / f"{name}.json").read_text())
        for key, rows in table.pop("entries", {}).items():
            merged["entries"].setdefault(key, {}).update({b: {**e, "table": name} for b, e in rows.items()})
        merged.update(table, **({"backends_table": name} if "backends" in table else {}))
    return merged


# auto's order per scheme where the GPU has no table (or the table names none). 4-bit weights: Marlin and QQQ first
# (GPTQModel, the ``gptq`` extra), the kernels SpecMQuant measured on its A100, tuned for Ampere and flat in M; on such
# a GPU specbench's W4A16 kernel runs heuristic configs, which on the H200's shapes took 3-20x the tuned time at
# M = 16-64. Then specbench's kernels, then the other maintained ones that can run the scheme.
DEFAULT_ORDER = {"w4a16": ("marlin", "triton", "gemlite", "fbgemm", "torch"), "w4a8": ("marlin", "triton", "gemlite"),
                 "w8a8_int8": ("triton", "gemlite"), "w8a8_fp8": ("fbgemm", "gemlite", "torch"), "w8a16": ("gemlite",),
                 "w4a8_fp8": ("fbgemm",)}


def backend_order(gpu: str | None, scheme: str) -> tuple[tuple[str, ...], str]:
    """The backends ``quant.backend=auto`` tries for ``scheme``, fastest first, and where the order comes from."""
    table = load(gpu)
    order = table.get("backends", {}).get(scheme)
    if order:
        return tuple(order), table_label(gpu, table["backends_table"])
    return DEFAULT_ORDER.get(scheme, ()), "default order"


def _split_for(tiles: int, k: int, bk: int, sms: int) -> int:
    split = 1
    while split < 16 and tiles * split < 2 * sms and k % (2 * split * bk) == 0:
        split *= 2
    return split


def _tile_k(k: int, group: int, most: int) -> int:
    """The largest power-of-two BK <= ``most`` that is a multiple of the packing block, divides K and divides the
    group size or is a multiple of it; else the block (which ``check_shape`` refuses if it is no power of two)."""
    p = block_rows(k, group)
    bk = 1 << (max(p, most).bit_length() - 1)
    while bk >= p:
        if bk % p == 0 and k % bk == 0 and (group == k or group % bk == 0 or bk % group == 0):
            return bk
        bk //= 2
    return p


def heuristic(n: int, k: int, group: int, m: int, sms: int = 132, hopper: bool = False) -> KernelConfig:
    if hopper:
        cfg = heuristic_hopper(n, k, group, m, sms)
        if cfg is not None:
            return cfg
    if m == 1:
        bk = _tile_k(k, group, 512)
        return KernelConfig("gemv", 64, bk, _split_for(-(-n // 64), k, bk, sms), warps=4, stages=1)
    bm = min(64, max(16, 1 << (m - 1).bit_length()))
    bk = _tile_k(k, group, 128 if group == k or group >= 128 else 64)
    tiles = -(-n // 64) * -(-m // bm)
    split = _split_for(tiles, k, bk, sms) if m <= MAX_SPLIT_M else 1
    return KernelConfig("dot", 64, bk, split, BM=bm, warps=4, stages=3)


def _split_to(programs: float, tiles: int, units: int, least: int = 1) -> int:
    """The smallest power of two >= ``least`` (at most 16 and ``units``) giving ``tiles`` x split >= ``programs``."""
    split = 1 << (max(1, least) - 1).bit_length()
    while tiles * split < programs and 2 * split <= min(16, units):
        split *= 2
    return min(split, units)


def heuristic_hopper(n: int, k: int, group: int, m: int, sms: int = 132) -> KernelConfig | None:
    """sm_90, grouped weights of groups >= 128 or per-channel: the table's usual shape of entry (None otherwise).
    M = 1: one group per MMA column (``DEQ`` 7; per-channel ``DEQ`` 5), BN 128, 4 warps, 4 stages; M > 1: the planes
    joined into one wgmma a tile (``DEQ`` 5), BM the power of two >= M in [16, 64], BN 128 from N = 8192 up (else
    64), 8 warps for 128 x 64 tiles, 3 stages. BK 128; K split (unevenly where it must) until about two programs per
    SM run, for M <= 128."""
    channel = group == k
    if not channel and (group < 128 or group & (group - 1)):
        return None
    units = k // 128
    if m == 1:
        deq = 5 if channel else 7
        least = 1 if channel else -(-(k // group) // 16)  # DEQ 7: at most BM = 16 groups a program
        if not channel:
            units = k // group
        split = _split_to(1.9 * sms, -(-n // 128), units, least)
        cfg = KernelConfig("dot", 128, 128, split, BM=16, warps=4, stages=4, DEQ=deq, uneven=units % split != 0)
    else:
        bm = min(64, max(16, 1 << (m - 1).bit_length()))
        bn = 128 if n >= 8192 else 64
        tiles = -(-n // bn) * -(-m // bm)
        split = _split_to(1.9 * sms, tiles, units) if m <= MAX_SPLIT_M else 1
        cfg = KernelConfig("dot", bn, 128, split, BM=bm, warps=8 if bn * bm >= 128 * 64 else 4, stages=3, DEQ=5,
                           uneven=units % split != 0)
    return cfg if check_shape(n, k, group, cfg) is None else None


def entries_label(gpu: str | None, rows: dict) -> str:
    """``table_label`` of each table a weight's entries (``rows``, per M bucket) come from, its own first, joined by
    " + "."""
    tables = sorted({e.get("table") for e in rows.values()}, key=lambda t: t != gpu)
    return " + ".join(table_label(gpu, t) for t in tables)


def describe_source(gpu: str | None, n: int, k: int, group: int, scheme: str = "w4a16",
                    zero_points: bool = False) -> str:
    """A layer's ``info["autotune"]``: the tables its entries come from, else the heuristic."""
    entries = load(gpu).get("entries", {})
    own = entries.get(shape_key(n, k, group, scheme, True)) if zero_points else None
    if own:
        return f"{entries_label(gpu, own)} (zero points)"
    rows = entries.get(shape_key(n, k, group, scheme))
    if rows:
        return entries_label(gpu, rows) + (" (symmetric weight's entries)" if zero_points else "")
    near = nearest_entries(entries, n, k, group, scheme, zero_points)
    if near:
        return f"{entries_label(gpu, near)}, {next(iter(near.values()))['from']}'s entries (no entry of its own)"
    return "heuristic (no table entry)"


def heuristic_a8(n: int, k: int, group: int, m: int, bits: int, sms: int = 132, hopper: bool = False) -> A8Config:
    channel_dot = hopper and m > 1 and group == k  # sm_90 per-channel: the table's K tiles of 256, 4 stages, 1 wave
    bk = 512 * 8 // bits if m == 1 else 256 if channel_dot else 128
    while bk > 32 and (k % bk or (group != k and group % bk)):
        bk //= 2
    if m == 1:
        bn = min(128, max(32, 16384 // (bk * bits // 8)))
        return A8Config("gemv", bn, bk, _split_for(-(-n // bn), k, bk, sms), warps=4, stages=2)
    bm = min(64, max(16, 1 << (m - 1).bit_length()))
    split = _split_for(-(-n // 64) * -(-m // bm), k, bk, sms // 2 if channel_dot else sms) if m <= MAX_SPLIT_M else 1
    return A8Config("dot", 64, bk, split, BM=bm, warps=4, stages=4 if channel_dot else 3)


def kernel_of(scheme: str):
    """(config class, ``check(n, k, group, cfg)``, ``heuristic(n, k, group, m, sms, hopper)``) of ``scheme``'s
    kernel."""
    if scheme == "w4a16":
        return KernelConfig, check_shape, heuristic
    bits = SCHEMES[scheme].bits
    return (A8Config, lambda n, k, g, cfg: int8_kernel.check_shape(n, k, g, bits, cfg),
            lambda n, k, g, m, sms=132, hopper=False: heuristic_a8(n, k, g, m, bits, sms, hopper))


def weight_entries(entries: dict, n: int, k: int, group: int, scheme: str = "w4a16",
                   zero_points: bool = False) -> dict:
    """An [N, K] weight's entries per M bucket in a table's ``entries`` ({} when it has none); with ``zero_points``
    its own buckets over the symmetric weight's."""
    own = entries.get(shape_key(n, k, group, scheme, True), {}) if zero_points else {}
    return {**entries.get(shape_key(n, k, group, scheme), {}), **own}


def nearest_entries(entries: dict, n: int, k: int, group: int, scheme: str = "w4a16",
                    zero_points: bool = False) -> dict:
    """The ``weight_entries`` of the tuned weight nearest to [N, K] (the product of the N and K ratios, each at most
    ``NEAR``) of the same scheme, group kind and zero-point kind, each entry marked with that weight's shape under
    "from" ({} when none is that near): an untuned layer of a model like a shipped one (Qwen3-8B's gate/up and down
    beside Llama-3-8B's) runs its neighbour's tiles, where ``check`` passes, rather than the heuristic's."""
    kind = group_kind(k, group)

    def ratios(t: TableKey) -> tuple[float, float]:
        return max(t.n / n, n / t.n), max(t.k / k, k / t.k)

    near = [t for t in map(parse_key, entries) if not t.zero_points and (t.n, t.k) != (n, k)
            and (t.scheme, group_kind(t.k, t.group)) == (scheme, kind) and max(ratios(t)) <= NEAR]
    if not near:
        return {}
    t = min(near, key=lambda t: (math.prod(ratios(t)), t.n, t.k))
    return {b: {**e, "from": f"{t.n}x{t.k}"}
            for b, e in weight_entries(entries, t.n, t.k, t.group, scheme, zero_points).items()}


def tuned_entries(gpu: str | None, n: int, k: int, group: int, scheme: str = "w4a16",
                  zero_points: bool = False) -> dict:
    """``weight_entries`` of the committed tables for ``gpu``, else those of the nearest tuned weight
    (``nearest_entries``)."""
    entries = load(gpu).get("entries", {})
    return (weight_entries(entries, n, k, group, scheme, zero_points)
            or nearest_entries(entries, n, k, group, scheme, zero_points))


def choose(gpu: str | None, n: int, k: int, group: int, m: int, scheme: str = "w4a16",
           entries: dict | None = None, hopper: bool | None = None) -> tuple[object, str]:
    """(config, ``table_label`` of the entry's table, or "heuristic") for ``scheme``'s kernel on an [N, K] weight at
    M rows; ``entries``: the shape's ``tuned_entries`` where the caller holds them, so that a forward traced by
    torch.compile reads no file; ``hopper``: whether the GPU is sm_90 (default: whether ``gpu`` is one of ``GPUS``)."""
    hopper = gpu in GPUS if hopper is None else hopper
    config_cls, check, fallback = kernel_of(scheme)
    entries = tuned_entries(gpu, n, k, group, scheme) if entries is None else entries
    if entries:
        buckets = sorted(int(b) for b in entries)
        bucket = next((b for b in buckets if b >= m), buckets[-1])
        entry = entries[str(bucket)]
        cfg = config_cls(**entry["config"])
        if cfg.one_row and m > 1:  # a one-row entry only serves M = 1
            cfg = None
        if cfg is not None and m > MAX_SPLIT_M and cfg.split > 1:
            cfg = config_cls(**{**cfg.as_dict(), "split": 1})
        if cfg is not None and check(n, k, group, cfg) is None:
            return cfg, table_label(gpu, entry.get("table")) + (f", {entry['from']}'s entry" if "from" in entry else "")
    return fallback(n, k, group, m, SMS.get(gpu, 132), hopper), "heuristic"
