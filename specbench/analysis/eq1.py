"""Eq. (1) of arXiv 2505.22179 and its terms: the one place they are computed, from timing probes or from a run's
step log (result rows, cell statistics, plots, ``bench_eq1`` and ``eq1_report`` all call this module).

    T_sd = (d * T_d + T_v(n)) / tau        speedup = tau / (d * T_d/T_t + T_v(n)/T_t)        tok/s = tau / T_sd

``T_t``: one target decode forward; ``T_v(n)``: one target forward over n tokens (root included); ``T_d``: one
draft forward, ``d`` of them per step; ``tau``: committed tokens per step (bonus included).

Terms from probes (``from_probes``; rows of ``probes.parquet``, ``specbench.timing.probes``). The matching rule:

* the target: ``model.source`` equal; quantization equal, a dense run's being its dtype (fp16 / bf16 / fp32; a
  probe of quantization ``none`` matches any dense run); backend equal when quantized (ignored when dense); GPU
  equal (``cpu`` on a CPU);
* ``n`` and the mask: the drafter's ``step_shape`` (EAGLE / EAGLE-3: ``tree_size`` under the tree mask; n-gram,
  draft model, layer skip: ``num_tokens + 1`` under the sequence mask), ``n`` exact: no nearest n, no
  interpolation (``n = 1``: T_v = T_t);
* the context: the probed context nearest the run's mean decoding context (``decode_context``: prompt plus half
  the answer, mean over the run's rows), the same for every term;
* T_d: ``d`` from ``step_shape``; EAGLE: the ``eagle_head`` probe over ``topk`` rows (one named after the run's
  target when there is one); draft model: a ``draft_model`` probe, else the ``T_t`` probe of the drafter's own
  model; n-gram (d = 0): no draft term; EAGLE-3 and layer skip: none (the head probes time EAGLE-1/2 heads, and
  no probe times the target's kept layers), so their Eq. (1) comes from step logs.

Terms from a step log (``from_steps``, rows of ``steps.parquet``): tau = mean ``accept_length``, ``d * T_d`` = mean
``draft_ms`` (all drafting of a step, an n-gram lookup included), T_v = mean ``verify_ms`` at the run's draft
sizes, d = mean ``draft_depth``, n = mean ``drafted`` + 1; T_t = the same-precision AR run's mean ``verify_ms``.
The accept phase and the loop's bookkeeping are outside Eq. (1) (``eq1_report``'s ``predicted_speedup_steps``
adds them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

RENAME = {"model": "model.source", "quant": "quant.scheme", "backend": "quant.backend", "gpu": "env.gpu"}
DENSE = {"none": None, "fp16": "fp16", "bf16": "bf16", "fp32": "fp32", "float16": "fp16", "bfloat16": "bf16",
         "float32": "fp32"}


def eq1_speedup(tau, d, t_d, t_t, t_v):
    """Eq. (1): ``tau / (d * T_d / T_t + T_v(n) / T_t)`` (floats or arrays); nan where T_t or ``d * T_d + T_v`` is
    not positive (phases not timed)."""
    t_t = np.asarray(t_t, dtype=float)
    return _per(tau * np.where(t_t > 0, t_t, np.nan), d * np.asarray(t_d, dtype=float) + t_v)


def tokens_per_s(tau, draft_ms, verify_ms):
    """Eq. (1) as a speed: ``1000 * tau / (d * T_d + T_v(n))`` tokens per second from times in ms (floats or
    arrays); nan where the step time is not positive."""
    return _per(1000.0 * np.asarray(tau, dtype=float), np.asarray(draft_ms, dtype=float) + verify_ms)


def _per(num, den):
    """``num / den``, nan where ``den <= 0``; a float for scalar inputs."""
    num, den = np.broadcast_arrays(np.asarray(num, dtype=float), np.asarray(den, dtype=float))
    out = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class Terms:
    """Eq. (1)'s terms of one run (floats, or arrays of bootstrap replicates); ``draft_ms`` is ``d * T_d`` (a
    step's drafting), ``source`` probes or steps; a ratio is nan where its denominator is not positive.

    ``tv_range`` / ``td_range``: p10-p90 range of T_v/T_t and T_d/T_t (probes; nan from steps).
    """

    tau: float
    t_t_ms: float
    t_v_ms: float
    draft_ms: float
    d: float
    n: float
    source: str
    tv_range: tuple[float, float] = (math.nan, math.nan)
    td_range: tuple[float, float] = (math.nan, math.nan)

    @property
    def t_d_ms(self) -> float:
        return _per(self.draft_ms, self.d)

    def over_t_t(self, ms):
        """``ms`` in units of T_t: ``over_t_t(t_v_ms)`` is T_v(n)/T_t, ``over_t_t(draft_ms)`` d * T_d / T_t."""
        return _per(ms, self.t_t_ms)

    @property
    def speedup(self) -> float:
        return eq1_speedup(self.tau, 1.0, self.draft_ms, self.t_t_ms, self.t_v_ms)

    @property
    def tokens_per_s(self) -> float:
        return tokens_per_s(self.tau, self.draft_ms, self.t_v_ms)


# ----------------------------------------------------------------- terms from probes


def normalize(probes: pd.DataFrame) -> pd.DataFrame:
    """Probe columns under the result files' names (``model`` -> ``model.source``, ...)."""
    return probes.rename(columns={k: v for k, v in RENAME.items() if k in probes and v not in probes})


def draft_shape(run: Mapping) -> tuple[int, tuple[str, ...], int, int] | str:
    """(verified tokens n, masks, draft passes d, rows per draft pass) of a run, or why Eq. (1) does not apply.

    The drafter's schema says it (``step_shape``), from the run's ``drafter.*`` settings.
    """
    from specbench.drafters import DRAFTERS

    name = run.get("drafter")
    entry = DRAFTERS.get(name)
    if entry is not None:
        own = {f.name for f in fields(entry.conf)} - {"name", "label", "head", "model", "quant"}
        unset_ok = {f.name for f in fields(entry.conf) if f.default is None}  # null by default: may be absent
        settings = {k: run[f"drafter.{k}"] for k in own if f"drafter.{k}" in run and not pd.isna(run[f"drafter.{k}"])}
        missing = own - set(settings) - unset_ok
        if missing:
            return f"the run has no {', '.join(sorted(f'drafter.{k}' for k in missing))}"
        shape = entry.conf(**settings).step_shape()
        if shape is not None:
            return shape
    return f"Eq. (1) has no term for drafter {name!r}"


def decode_context(results: pd.DataFrame) -> float:
    """A run's mean context while decoding: prompt plus half the answer, mean over its rows."""
    return float((results["prompt_tokens"] + results["new_tokens"] / 2).mean())


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


def _draft_rows(run: Mapping, probes: pd.DataFrame, width: int) -> pd.DataFrame:
    """T_d candidates: the EAGLE head's pass over ``width`` rows, or the draft model's one-token step."""
    component = probes["component"] if "component" in probes else pd.Series("", index=probes.index)
    if run.get("drafter") == "eagle":  # HeadProber times EAGLE-1/2 heads
        heads = probes[(probes.probe == "T_d") & (component == "eagle_head") & (probes.n == width)]
        mine = heads[heads["model.source"].astype(str).str.contains(str(run.get("model.source")), regex=False)]
        return mine if len(mine) else heads
    if run.get("drafter") != "draft_model":
        return probes.iloc[:0]
    steps = probes[(probes.probe == "T_d") & (component == "draft_model")]
    if len(steps):
        return steps
    draft = {"model.source": run.get("drafter.model.source"), "quant.scheme": run.get("drafter.quant.scheme"),
             "quant.backend": run.get("drafter.quant.backend"), "runtime.dtype": run.get("runtime.dtype")}
    return probes[_same_target(probes, draft) & (probes.probe == "T_t") & (probes.n == 1)]


def from_probes(run: Mapping, probes: pd.DataFrame | None, context: float, tau: float) -> Terms | str:
    """Eq. (1)'s terms for ``run`` (a row of its config columns) from probe medians, by the module's matching
    rule, with accept length ``tau``; or why a term has no probe."""
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

    def ratio_range(p):  # None: no draft term (d = 0), whose T_d/T_t is nan
        return (math.nan, math.nan) if p is None else (p.p10_ms / t_t.p90_ms, p.p90_ms / t_t.p10_ms)

    return Terms(tau, float(t_t.median_ms), float(t_v.median_ms), d * float(t_d.median_ms) if d else 0.0, d, n,
                 "probes", ratio_range(t_v), ratio_range(t_d))


def verify_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """T_v(n)/T_t per (model, quant, backend, kernel, context, mask, n) of probe rows (medians), T_t of the same
    model, quantization, backend, kernel and context."""
    keys = [k for k in ("model", "quant", "backend", "kernel", "context") if k in frame]
    t_t = frame[frame.probe == "T_t"].set_index(keys)["median_ms"].rename("T_t_ms")
    t_v = frame[frame.probe == "T_v"].join(t_t, on=keys)
    t_v = t_v.assign(ratio=t_v.median_ms / t_v.T_t_ms)
    return t_v[keys + ["mask", "n", "bucket", "median_ms", "T_t_ms", "ratio"]].reset_index(drop=True)


# ----------------------------------------------------------------- terms from a run's step log


def from_steps(steps: pd.DataFrame, t_t_ms: float = math.nan) -> Terms:
    """Eq. (1)'s effective terms of one run from its ``steps.parquet`` rows; ``t_t_ms``: its AR baseline's T_t."""
    if steps.empty:
        raise ValueError("no step rows")
    depth = float(steps.draft_depth.mean()) if "draft_depth" in steps else math.nan
    return Terms(float(steps.accept_length.mean()), t_t_ms, float(steps.verify_ms.mean()),
                 float(steps.draft_ms.mean()), depth, float(steps.drafted.mean()) + 1, "steps")


def step_ms(steps: pd.DataFrame) -> float:
    """Mean wall time of a step's phases, the accept and sample phases (outside Eq. (1)) included."""
    return float(sum(steps[c].mean() for c in ("draft_ms", "verify_ms", "accept_ms", "sample_ms") if c in steps))


def verify_by_nodes(steps: pd.DataFrame) -> pd.DataFrame:
    """Effective T_v per verified size: median/p10/p90 of ``verify_ms`` grouped by ``n = drafted + 1``."""
    frame = steps.assign(n=steps.drafted + 1)
    grouped = frame.groupby("n").verify_ms
    out = pd.DataFrame({"median_ms": grouped.median(), "p10_ms": grouped.quantile(0.1),
                        "p90_ms": grouped.quantile(0.9), "steps": grouped.size()})
    return out.reset_index()


def measured_speedup(sd_results: pd.DataFrame, ar_results: pd.DataFrame, *, prefill: bool = False) -> dict:
    """Measured speedup from two runs' ``results.parquet`` rows (wall clock, prefill excluded by default).

    ``macro``: the papers' rule, mean over questions of (sum of turn tokens / sum of turn time), SD over AR;
    ``micro``: total tokens over total time, SD over AR.
    """
    time_col = "total_s" if prefill else "decode_s"

    def rates(frame):
        per_q = frame.groupby(["question_id", "repeat"]).agg(tokens=("new_tokens", "sum"), seconds=(time_col, "sum"))
        return float((per_q.tokens / per_q.seconds).mean()), float(per_q.tokens.sum() / per_q.seconds.sum())

    sd_macro, sd_micro = rates(sd_results)
    ar_macro, ar_micro = rates(ar_results)
    return {"measured_speedup": sd_macro / ar_macro, "measured_speedup_micro": sd_micro / ar_micro,
            "sd_tok_s": sd_macro, "ar_tok_s": ar_macro}


def _read_run(run: str | Path | tuple) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """(results, steps) of a run folder, or a (results, steps) pair passed through (results may be None)."""
    if isinstance(run, tuple):
        return run
    folder = Path(run)
    results = folder / "results.parquet"
    return (pd.read_parquet(results) if results.exists() else None), pd.read_parquet(folder / "steps.parquet")


def eq1_report(sd_run, ar_run, *, probes: pd.DataFrame | None = None, context: float | None = None) -> dict:
    """Eq. (1)'s predicted speedup next to the measured one, for an SD run against its AR baseline.

    ``sd_run`` / ``ar_run``: run folders (``results.parquet`` + ``steps.parquet``) or ``(results, steps)`` pairs.
    Reported: the step-log terms (``from_steps``; T_t = the AR run's mean verify time), ``predicted_speedup`` and
    ``predicted_tok_s`` (Eq. (1) with them), ``predicted_speedup_steps`` (``tau * AR step / SD step``, accept and
    sample phases included), ``measured_speedup`` (and ``_micro``, ``prediction_error``) from wall-clock
    ``results.parquet``; with ``probes`` and the SD run's results, ``probe_speedup`` and ``probe_tok_s`` (Eq. (1)
    with the matched probes at ``context``, default ``decode_context``), or ``probe_error`` saying why none match.
    """
    sd_results, sd_steps = _read_run(sd_run)
    ar_results, ar_steps = _read_run(ar_run)
    ar = from_steps(ar_steps)
    sd = replace(from_steps(sd_steps), t_t_ms=ar.t_v_ms)
    out = {
        "tau": sd.tau, "nodes": sd.n - 1, "depth": sd.d, "T_t_ms": sd.t_t_ms, "draft_ms": sd.draft_ms,
        "T_d_ms": sd.t_d_ms, "verify_ms": sd.t_v_ms, "verify_ratio": sd.over_t_t(sd.t_v_ms),
        "draft_ratio": sd.over_t_t(sd.draft_ms),
        "predicted_speedup": sd.speedup, "predicted_tok_s": sd.tokens_per_s,
        "predicted_speedup_steps": sd.tau * step_ms(ar_steps) / step_ms(sd_steps),
    }
    if sd_results is not None and ar_results is not None:
        out.update(measured_speedup(sd_results, ar_results))
        out["prediction_error"] = out["predicted_speedup"] / out["measured_speedup"] - 1
    if probes is not None and sd_results is not None:
        ctx = decode_context(sd_results) if context is None else context
        found = from_probes(sd_results.iloc[0], probes, ctx, sd.tau)
        if isinstance(found, str):
            out["probe_error"] = found
        else:
            out.update({"probe_T_t_ms": found.t_t_ms, "probe_T_v_ms": found.t_v_ms, "probe_T_d_ms": found.t_d_ms,
                        "probe_speedup": found.speedup, "probe_tok_s": found.tokens_per_s})
    return out


def phase_coverage(results: pd.DataFrame, steps: pd.DataFrame) -> float:
    """Sum over steps of draft + verify + accept time, over the runs' wall-clock decode time (1.0 = all of it)."""
    phase_ms = sum(float(steps[c].sum()) for c in ("draft_ms", "verify_ms", "accept_ms") if c in steps)
    decode_ms = float(results.decode_s.sum()) * 1e3
    return phase_ms / decode_ms if decode_ms > 0 else math.nan
