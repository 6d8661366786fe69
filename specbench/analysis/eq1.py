"""Eq. (1) of arXiv 2505.22179: speedup = tau / (d * T_d/T_t + T_v(n)/T_t), from timing probes.

A probe row (``probes.parquet``, written by ``specbench.timing.probes`` / ``benchmarks/bench_eq1.py``) is the
median of many replays of one isolated forward: ``T_t`` (one token), ``T_v`` (``n`` tokens, root included, under
a ``tree`` or ``sequence`` mask), ``T_d`` (an EAGLE-head pass over ``n`` rows, ``component = eagle_head``, or a
draft model's step, ``component = draft_model``) or ``prefill``, at a KV ``context`` length. Probes match a run
on model, quantization (dense = the run's dtype), backend (ignored for dense) and GPU ("cpu" on a CPU), at the
probed context nearest the run's mean context. ``n`` must match exactly (no interpolation).

The second half recovers the same terms from a run's step logs (``effective_terms``) and sets Eq. (1)'s prediction
next to the measured speedup (``eq1_report``); ``eq1_from_probes`` picks probes by explicit n, mask and context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
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
    """(verified tokens n, masks, draft passes d, rows per draft pass) of a run, or why Eq. (1) does not apply.

    The drafter's schema says it (``step_shape``), from the run's ``drafter.*`` settings.
    """
    from specbench.drafters import DRAFTERS

    name = run.get("drafter")
    entry = DRAFTERS.get(name)
    if entry is not None:
        own = {f.name for f in fields(entry.conf)} - {"name", "label", "head", "model", "quant"}
        settings = {k: run[f"drafter.{k}"] for k in own if f"drafter.{k}" in run and not pd.isna(run[f"drafter.{k}"])}
        if len(settings) < len(own):
            return f"the run has no {', '.join(sorted(f'drafter.{k}' for k in own - set(settings)))}"
        shape = entry.conf(**settings).step_shape()
        if shape is not None:
            return shape
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


# ----------------------------------------------------------------- the terms recovered from a run's step logs


def eq1_speedup(tau: float, d: float, t_d: float, t_t: float, t_v: float) -> float:
    """Eq. (1): ``tau / (d * T_d / T_t + T_v(n) / T_t)``."""
    if t_t <= 0:
        raise ValueError("T_t must be > 0")
    denominator = d * t_d / t_t + t_v / t_t
    if denominator <= 0:
        raise ValueError("d * T_d + T_v must be > 0")
    return tau / denominator


def eq1_from_probes(probes: pd.DataFrame, *, tau: float, d: int, n: int, context: int, mask: str = "tree",
                    draft_rows: int | None = None, draft_component: str = "eagle_head") -> dict:
    """Eq. (1) with probe medians: T_t and T_v(n) at ``context`` (nearest probed context), T_d of
    ``draft_component`` (``draft_rows`` rows for a head; a draft model's decode step), or no draft cost when
    the probes have none (a model-free drafter such as n-gram: ``d`` is then ignored)."""
    contexts = sorted(set(probes.context))
    ctx = min(contexts, key=lambda c: abs(c - context))
    at = probes[probes.context == ctx]
    t_t = float(at[(at.probe == "T_t")].median_ms.iloc[0])
    verify = at[(at.probe == "T_v") & (at["mask"] == mask)]
    if n == 1:
        t_v = t_t
    else:
        if verify.empty:
            raise ValueError(f"no T_v probes with mask {mask!r} at context {ctx}")
        nearest = min(set(verify.n), key=lambda m: abs(m - n))
        t_v = float(verify[verify.n == nearest].median_ms.iloc[0])
    drafts = at[(at.probe == "T_d") & (at.component == draft_component)]
    if draft_rows is not None and not drafts.empty:
        drafts = drafts[drafts.n == min(set(drafts.n), key=lambda m: abs(m - draft_rows))]
    t_d = float(drafts.median_ms.iloc[0]) if not drafts.empty else 0.0
    return {"tau": tau, "d": d, "n": n, "context": ctx, "T_t_ms": t_t, "T_v_ms": t_v, "T_d_ms": t_d,
            "verify_ratio": t_v / t_t, "draft_ratio": d * t_d / t_t,
            "predicted_speedup": eq1_speedup(tau, d, t_d, t_t, t_v)}


PHASE_COLUMNS = ("draft_ms", "verify_ms", "accept_ms", "sample_ms")


def effective_terms(steps: pd.DataFrame) -> dict:
    """Mean per-step terms of one run from its ``steps.parquet`` rows.

    ``draft_ms`` is the effective ``d * T_d`` (all drafting of a step), ``verify_ms`` the effective T_v at the
    run's draft sizes, ``accept_ms`` the bookkeeping Eq. (1) leaves out; ``tau`` the mean accept length (bonus
    included), ``nodes`` the mean drafted nodes (so verified tokens are ``nodes + 1``).
    """
    if steps.empty:
        raise ValueError("no step rows")
    phases = {c: float(steps[c].mean()) if c in steps else 0.0 for c in PHASE_COLUMNS}
    return {
        "steps": int(len(steps)),
        "tau": float(steps.accept_length.mean()),
        "nodes": float(steps.drafted.mean()),
        "depth": float(steps.draft_depth.mean()) if "draft_depth" in steps else float("nan"),
        **phases,
        "step_ms": float(sum(phases.values())),
        "verify_median_ms": float(steps.verify_ms.median()),
    }


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


def eq1_report(sd_run, ar_run, *, d: float | None = None, probes: pd.DataFrame | None = None,
               context: int | None = None) -> dict:
    """Eq. (1)'s predicted speedup next to the measured one, for an SD run against its AR baseline.

    ``sd_run`` / ``ar_run``: run folders (``results.parquet`` + ``steps.parquet``) or ``(results, steps)`` pairs.
    Effective terms come from the step logs: ``T_t`` = mean AR verify time, ``d * T_d`` = mean SD draft time per
    step, ``T_v`` = mean SD verify time per step. Reported:

    * ``predicted_speedup``: Eq. (1) with those effective terms (drafting + verification only);
    * ``predicted_speedup_steps``: ``tau * AR step time / SD step time``, the phases' whole step (accept and
      bookkeeping included), i.e. what the step logs imply;
    * ``measured_speedup`` (and ``_micro``): from wall-clock ``results.parquet`` (when present);
    * with ``probes``: ``probe_speedup``, Eq. (1) with isolated probe medians at the run's mean draft size and
      the probed context nearest to ``context`` (default: mean prompt length plus half the mean answer).
    """
    sd_results, sd_steps = _read_run(sd_run)
    ar_results, ar_steps = _read_run(ar_run)
    sd, ar = effective_terms(sd_steps), effective_terms(ar_steps)
    t_t = ar["verify_ms"]
    out = {
        "tau": sd["tau"], "nodes": sd["nodes"], "depth": sd["depth"], "T_t_ms": t_t,
        "draft_ms": sd["draft_ms"], "verify_ms": sd["verify_ms"], "accept_ms": sd["accept_ms"],
        "verify_ratio": sd["verify_ms"] / t_t, "draft_ratio": sd["draft_ms"] / t_t,
        "predicted_speedup": eq1_speedup(sd["tau"], 1.0, sd["draft_ms"], t_t, sd["verify_ms"]),
        "predicted_speedup_steps": sd["tau"] * ar["step_ms"] / sd["step_ms"],
    }
    if d:
        out["d"], out["T_d_ms"] = d, sd["draft_ms"] / d
    if sd_results is not None and ar_results is not None:
        out.update(measured_speedup(sd_results, ar_results))
        out["prediction_error"] = out["predicted_speedup"] / out["measured_speedup"] - 1
    if probes is not None:
        if context is not None:
            ctx = context
        elif sd_results is not None:  # the mean context while decoding: prompt plus half the answer
            ctx = int((sd_results.prompt_tokens + sd_results.new_tokens / 2).mean())
        else:
            ctx = 512
        n = max(1, int(round(sd["nodes"])) + 1)
        has_draft = d is not None and d > 0
        p = eq1_from_probes(probes, tau=sd["tau"], d=int(d) if has_draft else 0, n=n, context=ctx)
        out.update({"probe_T_t_ms": p["T_t_ms"], "probe_T_v_ms": p["T_v_ms"], "probe_T_d_ms": p["T_d_ms"],
                    "probe_speedup": p["predicted_speedup"]})
    return out


def phase_coverage(results: pd.DataFrame, steps: pd.DataFrame) -> float:
    """Sum over steps of draft + verify + accept time, over the runs' wall-clock decode time (1.0 = all of it)."""
    phase_ms = sum(float(steps[c].sum()) for c in ("draft_ms", "verify_ms", "accept_ms") if c in steps)
    decode_ms = float(results.decode_s.sum()) * 1e3
    return phase_ms / decode_ms if decode_ms > 0 else math.nan
