"""Eq. (1) of arXiv 2505.22179: speedup = tau / (d * T_d/T_t + T_v(n)/T_t), from timing probes.

A probe row (``probes.parquet``, written by ``specbench.timing.probes`` / ``benchmarks/bench_eq1.py``) is the
median of many replays of one isolated forward: ``T_t`` (one token), ``T_v`` (``n`` tokens, root included, under
a ``tree`` or ``sequence`` mask), ``T_d`` (an EAGLE-head pass over ``n`` rows, ``component = eagle_head``, or a
draft model's step, ``component = draft_model``) or ``prefill``, at a KV ``context`` length. Probes match a run
on model, quantization (dense = the run's dtype), backend (ignored for dense) and GPU ("cpu" on a CPU), at the
probed context nearest the run's mean context. ``n`` must match exactly (no interpolation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import pandas as pd

RENAME = {"model": "model.source", "quant": "quant.scheme", "backend": "quant.backend", "gpu": "env.gpu"}
DENSE = {"none": None, "fp16": "fp16", "bf16": "bf16", "fp32": "fp32", "float16": "fp16", "bfloat16": "bf16",
         "float32": "fp32"}


@dataclass(frozen=True)
class Terms:
    """T_v(n)/T_t, T_d/T_t and d for one run, with the p10-p90 range of each ratio."""

    tv: float
    tv_range: tuple[float, float]
    td: float
    td_range: tuple[float, float]
    d: int
    n: int


def normalize(probes: pd.DataFrame) -> pd.DataFrame:
    """Probe columns under the result files' names (``model`` -> ``model.source``, ...)."""
    return probes.rename(columns={k: v for k, v in RENAME.items() if k in probes and v not in probes})


def draft_shape(run: Mapping) -> tuple[int, tuple[str, ...], int, int] | str:
    """(verified tokens n, masks, draft passes d, rows per draft pass) of a run, or why Eq. (1) does not apply."""
    name = run.get("drafter")
    if name == "eagle":
        return int(run["drafter.tree_size"]), ("tree",), int(run["drafter.depth"]), int(run["drafter.topk"])
    if name in ("ngram", "draft_model", "layer_skip"):
        gamma = int(run["drafter.num_tokens"])
        return gamma + 1, ("sequence",), 0 if name == "ngram" else gamma, 1
    if name == "none":
        return 1, ("causal",), 0, 1
    return f"Eq. (1) has no term for drafter {name!r}"


def _label(scheme, dtype) -> str | None:
    """The probe-side quantization label of a run: its scheme, or its dtype when dense."""
    return DENSE.get(str(dtype), str(dtype)) if str(scheme) in DENSE else str(scheme)


def _gpu(value) -> str:
    return "cpu" if value is None or pd.isna(value) else str(value)


def _quant_ok(probe_quant: str, label: str | None) -> bool:
    if probe_quant == "none":  # a dense probe of unstated dtype
        return label in DENSE.values()
    return DENSE.get(probe_quant, probe_quant) == label


def _same_target(probes: pd.DataFrame, run: Mapping) -> pd.Series:
    label = _label(run.get("quant.scheme"), run.get("runtime.dtype"))
    quant = probes["quant.scheme"].astype(str)
    backend = quant.isin(list(DENSE)) | probes["quant.backend"].astype(str).eq(str(run.get("quant.backend")))
    return (probes["model.source"].astype(str).eq(str(run.get("model.source")))
            & quant.map(lambda q: _quant_ok(q, label)) & backend)


def _pick(rows: pd.DataFrame, context: float) -> pd.Series | None:
    if rows.empty:
        return None
    return rows.loc[(rows["context"].astype(float) - context).abs().idxmin()]


def terms(run: Mapping, probes: pd.DataFrame, context: float) -> Terms | str:
    """The Eq. (1) ratios for ``run`` (a row of config columns) from ``probes``, or why they are missing."""
    shape = draft_shape(run)
    if isinstance(shape, str):
        return shape
    n, masks, d, width = shape
    if probes is None or probes.empty:
        return "no probes.parquet"
    probes = normalize(probes)
    probes = probes[probes["env.gpu"].map(_gpu) == _gpu(run.get("env.gpu"))]
    target = probes[_same_target(probes, run)]
    t_t = _pick(target[(target.probe == "T_t") & (target.n == 1)], context)
    t_v = t_t if n == 1 else _pick(target[(target.probe == "T_v") & (target.n == n) & target["mask"].isin(masks)],
                                   context)
    t_d = _pick(_draft_rows(run, probes, width), context) if d else None
    missing = [name for name, p in (("T_t", t_t), (f"T_v(n={n})", t_v), ("T_d", t_d if d else 0)) if p is None]
    if missing:
        return f"no probe for {', '.join(missing)}"

    def ratio(p):
        if p is None:
            return 0.0, (0.0, 0.0)
        return p.median_ms / t_t.median_ms, (p.p10_ms / t_t.p90_ms, p.p90_ms / t_t.p10_ms)

    (tv, tv_range), (td, td_range) = ratio(t_v), ratio(t_d)
    return Terms(tv, tv_range, td, td_range, d, n)


def _draft_rows(run: Mapping, probes: pd.DataFrame, width: int) -> pd.DataFrame:
    """T_d candidates: the EAGLE head's pass over ``width`` rows, or the draft model's one-token step."""
    component = probes["component"] if "component" in probes else pd.Series("", index=probes.index)
    if run.get("drafter") == "eagle":
        heads = probes[(probes.probe == "T_d") & (component == "eagle_head") & (probes.n == width)]
        mine = heads[heads["model.source"].astype(str).str.contains(str(run.get("model.source")), regex=False)]
        return mine if len(mine) else heads
    steps = probes[(probes.probe == "T_d") & (component == "draft_model")]
    if len(steps):
        return steps
    draft = {"model.source": run.get("drafter.model.source"), "quant.scheme": run.get("drafter.quant.scheme"),
             "quant.backend": run.get("drafter.quant.backend"), "runtime.dtype": run.get("runtime.dtype")}
    return probes[_same_target(probes, draft) & (probes.probe == "T_t") & (probes.n == 1)]
