"""Which run counts when several measured the same thing: the newest run wins, the older ones are listed.

A run is one run folder (``pool.run_ids``). Two runs have the same configuration when every config value
(model, quantization, drafter, dataset, engine, timing, runtime settings, the GPU, real or shape-only weights, real or
replayed acceptance) that both recorded is equal and they belong to the same experiment (``output.name``: the
manifests pin their cells to it); a value one of them lacks (a setting added to the code since) does not count,
and neither do the code version, host or date (``env.*``) or the config hash. Among runs of one configuration the one with the newest ``env.date`` wins (ties: the larger
id); rows are never pooled across runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import Any

import numpy as np
import pandas as pd

CONFIG_PREFIXES = ("model.", "quant.", "drafter.", "dataset.", "engine.", "timing.", "runtime.")
CONFIG_EXTRA = ("drafter", "env.gpu", "weights", "acceptance_source", "output.name")


def canon(value: Any) -> Any:
    """A comparable form of a config value: nulls are None, integral floats are ints."""
    if isinstance(value, (list, tuple, dict)):
        return value
    if value is None or pd.isna(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return int(value) if float(value).is_integer() else float(value)
    return value


def config_columns(columns) -> list[str]:
    """The columns that define what a run measured (see the module docstring)."""
    return [c for c in columns if c.startswith(CONFIG_PREFIXES) or c in CONFIG_EXTRA]


def run_dates(rows: pd.DataFrame, run: pd.Series) -> pd.Series:
    """Newest ``env.date`` of each run id in ``run`` (empty text where none was recorded)."""
    dates = rows["env.date"].astype(object) if "env.date" in rows.columns else pd.Series("", index=rows.index)
    return dates.where(dates.notna(), "").astype(str).groupby(run.to_numpy()).max()


def differences(a: dict, b: dict) -> list[str]:
    """Config columns whose values both ``a`` and ``b`` recorded and that differ."""
    return [k for k in a if k in b and a[k] is not None and b[k] is not None and a[k] != b[k]]


def describe(run: str, dates) -> str:
    """``<config hash> (<date>)``."""
    return f"{run.split('@')[0]} ({dates.get(run, '') or 'undated'})"


@dataclass
class Resolution:
    """``kept``: the winning run ids, newest first; ``older``: winning run id -> the runs it supersedes."""

    kept: list[str]
    older: dict[str, list[str]]
    dates: dict[str, str]  # run id -> newest env.date

    def describe(self, run: str) -> str:
        return describe(run, self.dates)

    def note(self, run: str) -> str:
        """The cell note for a winning run that superseded others ("" when it superseded none)."""
        older = self.older.get(run, [])
        if not older:
            return ""
        return (f"newest of {len(older) + 1} runs of this configuration, {self.describe(run)}; older: "
                + ", ".join(self.describe(o) for o in older))


def resolve(runs: pd.DataFrame, dates: pd.Series) -> Resolution:
    """Group ``runs`` (one row per run, indexed by run id) by configuration; the newest of each group wins."""
    columns = config_columns(runs.columns)
    values = {run: {c: canon(v) for c, v in zip(columns, row)} for run, row in
              zip(runs.index, runs[columns].itertuples(index=False, name=None))}
    order = sorted(runs.index, key=lambda r: (dates.get(r, ""), r), reverse=True)
    kept: list[str] = []
    older: dict[str, list[str]] = {}
    for run in order:
        winner = next((k for k in kept if not differences(values[run], values[k])), None)
        if winner is None:
            kept.append(run)
        else:
            older.setdefault(winner, []).append(run)
    return Resolution(kept, older, {r: dates.get(r, "") for r in runs.index})


def newest(runs: pd.DataFrame, dates: pd.Series) -> tuple[str, str]:
    """The newest of several runs that all match one cell, and a note naming the others and how they differ."""
    order = sorted(runs.index, key=lambda r: (dates.get(r, ""), r), reverse=True)
    columns = config_columns(runs.columns)
    first = {c: canon(runs.at[order[0], c]) for c in columns}
    differ = sorted({c for r in order[1:] for c in differences(first, {k: canon(runs.at[r, k]) for k in columns})})
    why = f" (they differ in {', '.join(differ[:6])})" if differ else ""
    others = ", ".join(describe(r, dates) for r in order[1:])
    return order[0], f"newest of {len(order)} matching runs{why}, {describe(order[0], dates)}; others: {others}"
