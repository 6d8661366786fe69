"""Cell statistics: one metric over the result rows that fill a cell, with a paired bootstrap interval.

Conventions (see docs/analysis.md):

* per-question speed = sum over turns of ``new_tokens`` / sum of ``decode_s`` (``prefill="excluded"``,
  SpecMQuant) or of ``total_s`` (``"included"``, Quasar); a question with repeats contributes their mean;
* ``average="macro"``: mean over questions of per-question speed; ``"micro"``: sum of tokens / sum of time;
* speedup = speed of the method / speed of a baseline run: ``same_precision`` (the AR run with the same
  model, quantization, dataset, temperature, device), ``16bit`` (the AR run of fp16/bf16/none on the same
  model), or a dict of overrides naming another run (``{drafter: eagle, drafter.depth: 3}``); baselines are
  paired with the method on the questions both measured;
* tau = 1 + accepted / steps (bonus counted, AR = 1); alpha = accepted / drafted;
* Eq. (1) (``analysis/eq1.py``) takes its terms from matching probes when they exist, else "effective" values
  from the step timings: T_t = AR verify ms per step, T_v = the method's verify ms per step, T_d = draft ms per
  draft pass; ``tok_s_eq1`` is its predicted speed, 1000 * tau / (d * T_d + T_v) (T_t not needed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from specbench.analysis import eq1
from specbench.analysis.bootstrap import LEVEL, N_BOOT, Estimate, estimate, question_weights, unit_weights
from specbench.analysis.pool import (
    IDENTITY, Pool, baseline_overrides, describe_overrides, run_ids, units,
)
from specbench.analysis.resolve import Resolution, newest, run_dates


def _missing(value: Any) -> bool:
    return not isinstance(value, (list, tuple, dict)) and pd.isna(value)


@dataclass
class Side:
    """One run's units with their bootstrap weights (rows: point estimate, then replicates)."""

    units: pd.DataFrame
    w: np.ndarray

    def sum(self, column: str) -> np.ndarray:
        return self.w @ self.units[column].to_numpy(float)

    def mean(self, per_unit: np.ndarray) -> np.ndarray:
        return self.w @ per_unit / self.w.sum(axis=1)

    def speed(self, prefill: str, average: str) -> np.ndarray:
        time = {"excluded": "decode_s", "included": "total_s"}[prefill]
        if average == "micro":
            return self.sum("new_tokens") / self.sum(time)
        return self.mean(self.units["new_tokens"].to_numpy(float) / self.units[time].to_numpy(float))

    def per_step(self, column: str) -> np.ndarray:
        return self.sum(column) / self.sum("steps")

    def per_pass(self, column: str) -> np.ndarray:
        """Per draft pass (nan without draft passes: T_d is undefined, not infinite)."""
        return _ratio(self.sum(column), self.sum("draft_depth_sum"))

    def tau(self) -> np.ndarray:
        return 1 + self.sum("accepted_tokens") / self.sum("steps")

    def accuracy(self) -> np.ndarray:
        """Percent of turns scored correct."""
        return 100 * self.sum("correct") / self.sum("turns")


Stat = Callable[[dict, dict], np.ndarray]


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b, nan where b is 0."""
    return np.divide(a, b, out=np.full_like(a, np.nan), where=b != 0)


def _step_terms(s: dict) -> eq1.Terms:
    """Eq. (1)'s effective terms over the bootstrap replicates (arrays): the method's step timings, and T_t from
    the same-precision AR run where the metric has that side."""
    m = s["method"]
    t_t = s["same"].per_step("verify_ms") if "same" in s else np.nan
    return eq1.Terms(m.tau(), t_t, m.per_step("verify_ms"), m.per_step("draft_ms"), m.per_step("draft_depth_sum"),
                     np.nan, "steps")


def _over_t_t(terms: eq1.Terms, term: str):
    """An Eq. (1) term (``t_v_ms``, ``t_d_ms``) in units of T_t."""
    return terms.over_t_t(getattr(terms, term))


# metric -> (sides it needs, statistic); sides: "method", "baseline" (the cell's), "same" (same-precision AR)
METRICS: dict[str, tuple[tuple[str, ...], Stat]] = {
    "tok_s": (("method",), lambda s, o: s["method"].speed(o["prefill"], o["average"])),
    "tau": (("method",), lambda s, o: s["method"].tau()),
    "alpha": (("method",), lambda s, o: s["method"].sum("accepted_tokens") / s["method"].sum("drafted_tokens")),
    "speedup": (("method", "baseline"), lambda s, o: s["method"].speed(o["prefill"], o["average"])
                / s["baseline"].speed(o["prefill"], o["average"])),
    "added_speedup": (("method", "same", "baseline"), lambda s, o: (s["method"].speed(o["prefill"], o["average"])
                      - s["same"].speed(o["prefill"], o["average"])) / s["baseline"].speed(o["prefill"], o["average"])),
    "drafter_prefill_ms": (("method",), lambda s, o: s["method"].sum("drafter_prefill_ms") / s["method"].sum("turns")),
    "draft_ms_per_step": (("method",), lambda s, o: s["method"].per_step("draft_ms")),
    "draft_len": (("method",), lambda s, o: s["method"].per_step("draft_depth_sum")),
    "draft_ms_per_len": (("method",), lambda s, o: s["method"].per_pass("draft_ms")),
    "accuracy": (("method",), lambda s, o: s["method"].accuracy()),
    "accuracy_change": (("method", "baseline"),
                        lambda s, o: 100 * (s["method"].accuracy() / s["baseline"].accuracy() - 1)),
    # Eq. (1), effective terms from the step timings
    "tv_over_tt": (("method", "same"), lambda s, o: _over_t_t(_step_terms(s), "t_v_ms")),
    "td_over_tt": (("method", "same"), lambda s, o: _over_t_t(_step_terms(s), "t_d_ms")),
    "predicted_speedup": (("method", "same"), lambda s, o: _step_terms(s).speedup),
    "tok_s_eq1": (("method",), lambda s, o: _step_terms(s).tokens_per_s),
}
EQ1 = ("tv_over_tt", "td_over_tt", "predicted_speedup", "tok_s_eq1")
DEPTH_METRICS = ("td_over_tt", "draft_len", "draft_ms_per_len")


def one_run_per_dataset(rows: pd.DataFrame, resolution: Resolution) -> tuple[pd.DataFrame, str]:
    """The rows of one run per dataset: where a cell's filter matches several, the newest (``resolve.newest``);
    and the note saying which runs were left out."""
    ids = run_ids(rows)
    runs = rows.assign(_run=ids).drop_duplicates("_run").set_index("_run", drop=False)
    dates = run_dates(rows, ids)
    keep, notes = [], []
    for _, group in runs.groupby("dataset.name", dropna=False, sort=False):
        run, note = newest(group, dates) if len(group) > 1 else (group.index[0], "")
        keep.append(run)
        notes += [note, resolution.note(run)]
    return rows[ids.isin(keep)], "; ".join(n for n in notes if n)


def evaluate(metric: str, rows: pd.DataFrame, pool: Pool, *, prefill: str = "excluded", average: str = "macro",
             baseline: str | Mapping = "same_precision", base_model: str | None = None, over: str | None = None,
             n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL) -> Estimate | str:
    """``metric`` over ``rows`` (the runs that fill one cell), or the reason it cannot be computed. Several runs of
    one dataset are never pooled: the newest counts and the note lists the others."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if rows.empty:
        return "not run"
    rows, note = one_run_per_dataset(rows, pool.resolution)
    found = _evaluate(metric, rows, pool, prefill, average, baseline, base_model, over, n_boot, seed, level)
    if note and isinstance(found, Estimate):
        found = replace(found, note="; ".join(n for n in (found.note, note) if n))
    return found


def _evaluate(metric, rows, pool, prefill, average, baseline, base_model, over, n_boot, seed, level) -> Estimate | str:
    runs = rows.drop_duplicates([c for c in IDENTITY if c in rows.columns])
    needs, stat = METRICS[metric]
    probe_note = ""
    if metric in EQ1 and pool.probes is not None and not pool.probes.empty:
        found = _probe_estimate(metric, rows, runs, pool, n_boot, seed, level)
        if not isinstance(found, str):
            return found
        probe_note = f"{found}; "
    specs = {"baseline": baseline_overrides(baseline, base_model), "same": baseline_overrides("same_precision")}
    side_units = {"method": pool.units_of(rows)}
    side_runs = {"method": tuple(run_ids(runs))}
    for side in needs[1:]:
        keys = []
        for _, run in runs.iterrows():
            keys.append(pool.baseline(run, specs[side]))
            if keys[-1] is None:
                return f"not run: no {side} baseline ({describe_overrides(specs[side])}) for {run['drafter']}"
        side_units[side] = pd.concat([pool.units(k) for k in keys], ignore_index=True)
        side_runs[side] = tuple(keys)
    for column, needed_by in (("draft_depth_sum", DEPTH_METRICS), ("correct", ("accuracy", "accuracy_change"))):
        if metric in needed_by and side_units["method"][column].isna().all():
            return f"not run: no {column} (steps.parquet / scored answers)"
    shared = sorted(set.intersection(*(set(u.qkey) for u in side_units.values())))
    if not shared:
        return "not run: baseline shares no questions"
    rng = np.random.default_rng(seed)
    strata = [k.rsplit(":", 1)[0] for k in shared]
    qw = question_weights(strata, n_boot, rng)
    column = {k: i for i, k in enumerate(shared)}
    sides, drawn = {}, {}
    for name, u in side_units.items():
        u = u[u.qkey.isin(column)].reset_index(drop=True)
        if side_runs[name] not in drawn:  # a run that is its own baseline shares its repeat draws
            drawn[side_runs[name]] = unit_weights(qw, u.qkey.map(column).to_numpy(), rng)
        sides[name] = Side(u, drawn[side_runs[name]])
    options = {"prefill": prefill, "average": average}
    with np.errstate(divide="ignore", invalid="ignore"):
        if over:
            parts = [stat({n: Side(s.units, s.w * (s.units["dataset.name"] == v).to_numpy()) for n, s in sides.items()},
                          options) for v in dict.fromkeys(strata)]
            replicates = np.mean(parts, axis=0)
        else:
            replicates = stat(sides, options)
    dropped = len(set(side_units["method"].qkey)) - len(shared)
    notes = [probe_note + f"{metric} from step timings (effective)" if metric in EQ1 else "",
             f"paired on {len(shared)} questions ({dropped} without baseline)" if dropped else "",
             "acceptance replayed (tau imposed)" if "replay" in set(rows.get("acceptance_source", ())) else "",
             f"mean over {len(set(strata))} datasets ({', '.join(dict.fromkeys(strata))})" if over else ""]
    return estimate(replicates, n=len(shared), level=level, note="; ".join(n for n in notes if n))


def _probe_estimate(metric, rows, runs, pool, n_boot, seed, level) -> Estimate | str:
    if len(runs) != 1:
        return "probe terms need a single run"
    run = runs.iloc[0]
    ratio = metric in ("tv_over_tt", "td_over_tt")
    tau = None if ratio else evaluate("tau", rows, pool, n_boot=n_boot, seed=seed, level=level)
    found = eq1.from_probes(run, pool.probes, eq1.decode_context(rows), math.nan if ratio else tau.value)
    if isinstance(found, str):
        return found
    if metric == "tv_over_tt":
        return Estimate(_over_t_t(found, "t_v_ms"), *found.tv_range, ci="probe p10-p90",
                        note=f"T_v(n={found.n})/T_t from probes")
    if metric == "td_over_tt":
        return Estimate(_over_t_t(found, "t_d_ms"), *found.td_range, ci="probe p10-p90", note="T_d/T_t from probes")
    scale = (found.speedup if metric == "predicted_speedup" else found.tokens_per_s) / found.tau
    return Estimate(tau.value * scale, tau.lo * scale, tau.hi * scale, tau.n,
                    note=f"Eq. (1) with probes (d={found.d}, n={found.n}); CI resamples tau only")


# the statistics reported for every run: name -> (metric, options)
VARIANTS: dict[str, tuple[str, dict]] = {
    "tok_s": ("tok_s", {}),
    "tok_s_e2e": ("tok_s", {"prefill": "included"}),
    "tau": ("tau", {}),
    "alpha": ("alpha", {}),
    "speedup": ("speedup", {}),
    "speedup_e2e": ("speedup", {"prefill": "included"}),
    "speedup_micro": ("speedup", {"average": "micro"}),
    "speedup_e2e_micro": ("speedup", {"prefill": "included", "average": "micro"}),
    "speedup16": ("speedup", {"baseline": "16bit"}),
    "speedup16_e2e": ("speedup", {"baseline": "16bit", "prefill": "included"}),
    "speedup16_micro": ("speedup", {"baseline": "16bit", "average": "micro"}),
    "speedup16_e2e_micro": ("speedup", {"baseline": "16bit", "prefill": "included", "average": "micro"}),
    "added_speedup": ("added_speedup", {"baseline": "16bit"}),
    "tv_over_tt": ("tv_over_tt", {}),
    "td_over_tt": ("td_over_tt", {}),
    "predicted_speedup": ("predicted_speedup", {}),
    "tok_s_eq1": ("tok_s_eq1", {}),
    "drafter_prefill_ms": ("drafter_prefill_ms", {}),
    "draft_ms_per_step": ("draft_ms_per_step", {}),
}
RUN_COLUMNS = ["model.source", "weights", "acceptance_source", "timing.replay_source", "quant.scheme", "quant.backend",
               "quant.group_size", "quant.rotated", "drafter", "dataset.name", "dataset.max_new_tokens",
               "runtime.temperature", "runtime.device", "engine.compile", "env.gpu", "output.name", "config_hash",
               "env.date", "env.git_sha"]


def cell_stats(data: pd.DataFrame, by: list[str] | None = None, probes: pd.DataFrame | None = None,
               variants: Mapping[str, tuple[str, dict]] = VARIANTS, n_boot: int = N_BOOT, seed: int = 0,
               level: float = LEVEL) -> pd.DataFrame:
    """One row per run (config hash x GPU x experiment name, and per ``by`` value): each variant's value, ``_lo``
    and ``_hi`` (nan where missing)."""
    pool = Pool(data, probes)
    groups = [*[c for c in IDENTITY if c in data.columns], *(by or [])]
    out = []
    for _, rows in pool.data.groupby(groups, dropna=False, sort=False):
        first = rows.iloc[0]
        record = {c: first[c] for c in [*RUN_COLUMNS, *(by or [])] if c in rows.columns}
        record.update({k: first[k] for k in rows.columns if k.startswith("drafter.") and not _missing(first[k])})
        for name, (metric, options) in variants.items():
            found = evaluate(metric, rows, pool, **options, n_boot=n_boot, seed=seed, level=level)
            ok = isinstance(found, Estimate)
            record[name] = found.value if ok else math.nan
            record[f"{name}_lo"] = found.lo if ok else math.nan
            record[f"{name}_hi"] = found.hi if ok else math.nan
            if ok and name == "tau":
                record["n_questions"] = found.n
            if name == "predicted_speedup":
                record["eq1_source"] = (found.note.split(";")[0] if ok else found)
        out.append(record)
    return pd.DataFrame(out)
