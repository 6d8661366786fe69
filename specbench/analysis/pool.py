"""The loaded runs and how a cell finds its baselines.

A run is one run folder: config hash x GPU x experiment name (``run_ids``). A baseline is the run that matches
the method's run on every key of ``MATCH_KEYS`` except the groups the baseline spec overrides (``quant.*`` for the
16-bit baseline, ``drafter*`` always), and equals the overrides; among several, the most alike wins (config first,
then code version), then one that fills cells over an older run of its configuration, then the one with most rows.
Older runs (superseded by a newer run of the same configuration) fill no cell but stay baseline candidates, so a
run that was not measured again keeps the baseline measured with its own code. ``units`` sums a run's rows per
question and repeat.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from specbench.analysis.load import matches
from specbench.analysis.resolve import Resolution, canon, resolve, run_dates

IDENTITY = ["config_hash", "env.gpu", "output.name"]
MATCH_KEYS = [
    "model.source", "model.shape_only", "model.overrides", "quant.scheme", "quant.backend", "quant.rotated",
    "quant.group_size", "quant.symmetric", "quant.quantize_lm_head", "dataset.name", "dataset.path",
    "dataset.max_new_tokens", "dataset.max_turns", "dataset.system_prompt", "dataset.enable_thinking",
    "dataset.ignore_eos", "engine.cuda_graphs", "engine.compile", "engine.compile_mode", "engine.compile_scope",
    "engine.fuse_projections", "engine.gemv", "timing.phase_events", "runtime.device", "runtime.dtype",
    "runtime.temperature", "runtime.top_p", "runtime.top_k", "env.gpu", "drafter",
]
LIKENESS = ("model.", "quant.", "dataset.", "engine.", "timing.", "runtime.", "output.name", "env.git_sha", "env.torch")
SIXTEEN_BIT = ["fp16", "bf16", "none"]
SUMS = ["new_tokens", "decode_s", "total_s", "steps", "accepted_tokens", "drafted_tokens", "draft_ms", "verify_ms",
        "drafter_prefill_ms", "prompt_tokens", "draft_depth_sum", "correct"]


def describe_overrides(spec: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in spec.items())


def baseline_overrides(baseline: str | Mapping, base_model: str | None = None) -> dict:
    """The overrides that pick a baseline run: named (``same_precision``, ``16bit``) or given."""
    if baseline == "same_precision":
        spec = {}
    elif baseline == "16bit":
        spec = {"quant.scheme": SIXTEEN_BIT, **({"model.source": base_model} if base_model else {})}
    elif isinstance(baseline, Mapping):
        spec = dict(baseline)
    else:
        raise ValueError(f"unknown baseline {baseline!r}")
    return spec if "drafter" in spec else {**spec, "drafter": "none"}


def run_ids(rows: pd.DataFrame) -> pd.Series:
    """One id per run folder: config hash, GPU and experiment name (the same config measured on two GPUs, or by
    two experiments, is two runs)."""
    ids = rows["config_hash"].astype(str)
    for column in IDENTITY[1:]:
        values = rows[column] if column in rows.columns else pd.Series(None, index=rows.index, dtype=object)
        ids = ids + "@" + values.map(lambda v: "" if pd.isna(v) else str(v))
    return ids


class Pool:
    """All loaded rows, indexed by run folder (see ``run_ids``), with unit sums and filter masks cached."""

    def __init__(self, data: pd.DataFrame, probes: pd.DataFrame | None = None):
        columns = {c: data[c].astype(object) if pd.api.types.is_string_dtype(data[c].dtype) else data[c]
                   for c in data.columns}  # numpy-backed strings: fast boolean indexing
        every = pd.DataFrame({**columns, "_run": run_ids(data) if len(data) else None}, index=data.index)
        runs = every.drop_duplicates("_run").set_index("_run", drop=False)
        self.resolution: Resolution = resolve(runs, run_dates(every, every["_run"]) if len(every) else pd.Series())
        self.kept = set(self.resolution.kept)
        self.data = every[every["_run"].isin(self.kept)]  # the newest run of each configuration
        self.probes = probes
        self.runs = runs  # every run: baseline candidates
        self._every = every
        self._rows = every.groupby("_run").groups
        self._canon = {k: np.array([canon(v) for v in self.runs[k]], dtype=object)
                       for k in self.runs.columns if k.startswith(LIKENESS) or k in MATCH_KEYS}
        self._units: dict[str, pd.DataFrame] = {}
        self._masks: dict[tuple, np.ndarray] = {}

    def rows(self, key: str) -> pd.DataFrame:
        return self._every.loc[self._rows[key]]

    def units(self, key: str) -> pd.DataFrame:
        if key not in self._units:
            self._units[key] = units(self.rows(key))
        return self._units[key]

    def units_of(self, rows: pd.DataFrame) -> pd.DataFrame:
        """Unit sums of any subset of the rows (cached by the subset)."""
        key = rows.index.to_numpy().tobytes()
        if key not in self._units:
            self._units[key] = units(rows)
        return self._units[key]

    def select(self, conditions: list, anys: list = ()) -> pd.DataFrame:
        """Rows meeting every ``(column, value)`` condition and one alternative of each ``any`` list."""
        return self.data[self._mask(conditions, anys)]

    def _mask(self, conditions: list, anys: list) -> np.ndarray:
        mask = np.ones(len(self.data), dtype=bool)
        for key, value in conditions:
            cache = (key, repr(value))
            if cache not in self._masks:
                self._masks[cache] = (matches(self.data[key], value).to_numpy(bool) if key in self.data.columns
                                      else np.full(len(self.data), value is None))
            mask &= self._masks[cache]
        for alternatives in anys:
            mask &= np.logical_or.reduce([self._mask(*_split(alt)) for alt in alternatives])
        return mask

    def baseline(self, run: Mapping, overrides: Mapping) -> str | None:
        """The run (identity key) that serves as ``run``'s baseline under ``overrides``, or None."""
        groups = {k.split(".")[0] for k in overrides}
        mask = np.ones(len(self.runs), dtype=bool)
        for key in MATCH_KEYS:
            if key.split(".")[0] not in groups and key in self._canon:
                target = canon(run.get(key))
                mask &= np.fromiter((v == target for v in self._canon[key]), bool, len(mask))
        for key, value in overrides.items():
            mask &= matches(self.runs[key], value).to_numpy(bool) if key in self.runs.columns else value is None
        cand = self.runs.index[mask]
        if not len(cand):
            return None
        return min(cand, key=lambda k: (*self._unlikeness(run, k), k not in self.kept, -len(self._rows[k]), k))

    def _unlikeness(self, run: Mapping, key: str) -> tuple[int, int]:
        """(config values, code-version values) in which a candidate baseline differs from ``run``: the most alike
        candidate wins, then the one with the most rows."""
        i = self.runs.index.get_loc(key)
        differ = [k for k, values in self._canon.items() if k in run and canon(run[k]) != values[i]]
        code = sum(k.startswith("env.") for k in differ)
        return len(differ) - code, code


def _split(spec: Mapping) -> tuple[list, list]:
    """A filter dict as ``(column, value)`` conditions and ``any`` groups."""
    return [(k, v) for k, v in spec.items() if k != "any"], ([spec["any"]] if "any" in spec else [])


def units(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, question, repeat) sums of the additive columns, plus ``turns``; keyed by ``qkey``."""
    present = [c for c in SUMS if c in rows.columns]
    frame = rows[["dataset.name", "question_id", "repeat", *present]]
    frame = frame.assign(qkey=frame["dataset.name"].astype(str) + ":" + frame["question_id"].astype(str))
    grouped = frame.groupby(["qkey", "dataset.name", "repeat"], sort=True)
    out = grouped[present].sum(min_count=1).astype(float)
    out["turns"] = grouped.size()
    for column in SUMS:
        if column not in out.columns:
            out[column] = np.nan
    return out.reset_index()
