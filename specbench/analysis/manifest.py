"""Per-paper manifests (``experiments/*.yaml``): every table and figure as rows x columns x metrics.

A cell's filter is the conjunction of the table's, the row's, the column's and the metric's filters (a key named
twice must satisfy both); ``any: [{...}, {...}]`` inside a filter matches rows that satisfy one alternative. The paper's
value is text with a source label: ``"1.04 [P]"``, ``"~1.8 [P]"`` (approximate), ``"not published [?]"``; in a
per-column list, ``null`` stands for the table's ``default_paper`` (``"not published [?]"``).
Options (``prefill``, ``average``, ``baseline``, ``base_model``, ``over``, ``tolerance``) come from the
manifest's ``conventions`` and are overridden by the table, row, column and metric in that order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import yaml

from specbench.analysis import columns
from specbench.analysis.bootstrap import LEVEL, N_BOOT, Estimate
from specbench.analysis.cells import evaluate, one_run_per_dataset
from specbench.analysis.pool import Pool

LABELS = ("P", "C", "D", "?")
PAPER = re.compile(r"^\s*(?P<body>.*?)\s*(?:\[(?P<label>[PCD?])\])?\s*$")
NUMBER = re.compile(r"^(?P<approx>[~≈])?\s*(?P<num>[-+]?\d+(?:\.\d+)?)\s*(?P<unit>[×x%]|ms|tok/s)?$")
OPTIONS = ("prefill", "average", "baseline", "base_model", "over", "tolerance", "compare", "gpu")
DEFAULTS = {"prefill": "excluded", "average": "macro", "baseline": "same_precision", "base_model": None,
            "over": None, "tolerance": None, "compare": True, "gpu": None}
NOT_PUBLISHED = "not published [?]"
PREDICTED = {"tok_s": "tok_s_eq1", "speedup": "predicted_speedup"}  # a speed metric -> its Eq. (1) prediction


@dataclass(frozen=True)
class PaperValue:
    """A paper's cell: the text as printed, its source label, and the number when there is one."""

    text: str
    label: str
    value: float | None
    approx: bool

    @classmethod
    def parse(cls, raw: Any) -> "PaperValue":
        text = str(raw)
        found = PAPER.match(text)
        body, label = found["body"], found["label"] or ""
        number = NUMBER.match(body.replace(" ", ""))
        value = float(number["num"]) if number else None
        return cls(body, label, value, bool(number and number["approx"]))

    @property
    def published(self) -> bool:
        return not self.text.startswith(("not published", "n/a"))

    def __str__(self) -> str:
        return f"{self.text} [{self.label}]" if self.label else self.text


@dataclass
class Cell:
    """One cell of one table: where its runs come from, how it is measured, and what the paper printed."""

    table: str
    row: dict
    column: dict
    metric: dict
    conditions: list
    anys: list
    options: dict
    paper: PaperValue

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.table, self.row["id"], self.column["id"], self.metric["id"]


@dataclass
class Manifest:
    path: Path
    data: dict
    tables: list[dict] = field(init=False)

    def __post_init__(self):
        self.tables = self.data["tables"]

    @property
    def id(self) -> str:
        return self.data["paper"]


def load(path: str | Path) -> Manifest:
    return Manifest(Path(path), yaml.safe_load(Path(path).read_text()))


def load_all(folder: str | Path) -> list[Manifest]:
    return [load(p) for p in sorted(Path(folder).glob("*.yaml"))]


def _merge(parts: list[dict | None]) -> tuple[list, list]:
    """(column, value) conditions and ``any`` groups of several filters, all of which must hold."""
    conditions, anys = [], []
    for part in parts:
        for key, value in (part or {}).items():
            (anys if key == "any" else conditions).append(value if key == "any" else (key, value))
    return conditions, anys


def _paper(table: dict, row: dict, metric: dict, column_index: int) -> PaperValue:
    default = table.get("default_paper", NOT_PUBLISHED)
    values = (table.get("paper") or {}).get(row["id"], {}).get(metric["id"], default)
    if isinstance(values, list):
        if len(values) != len(table["columns"]):
            raise ValueError(f"{table['id']}/{row['id']}/{metric['id']}: {len(values)} paper values for "
                             f"{len(table['columns'])} columns")
        values = values[column_index]
    return PaperValue.parse(default if values is None else values)


def cells(manifest: Manifest) -> Iterator[Cell]:
    """Every cell of every table, in table, row, metric, column order."""
    base = {**DEFAULTS, **(manifest.data.get("conventions") or {})}
    for table in manifest.tables:
        for row in table["rows"]:
            for metric in table["metrics"]:
                for i, column in enumerate(table["columns"]):
                    levels = (table, row, column, metric)
                    options = dict(base)
                    for level in levels:
                        options.update({k: level[k] for k in OPTIONS if k in level})
                    conditions, anys = _merge([level.get("filter") for level in levels])
                    yield Cell(table["id"], row, column, metric, conditions, anys, options,
                               _paper(table, row, metric, i))


def _evaluate(cell: Cell, pool: Pool, options: dict, n_boot: int, seed: int, level: float) -> Estimate | str:
    rows = pool.select(cell.conditions, cell.anys)
    kwargs = {k: options[k] for k in ("prefill", "average", "baseline", "base_model", "over")}
    return evaluate(cell.metric["metric"], rows, pool, **kwargs, n_boot=n_boot, seed=seed, level=level)


def variants(cell: Cell) -> list[tuple[str, dict]]:
    """Speedup cells also report both denominators, prefill in and out, macro and micro."""
    if cell.metric["metric"] != "speedup":
        return []
    bases = list(dict.fromkeys([_name(cell.options["baseline"]), "same_precision", "16bit"]))
    out = []
    for base in bases:
        for prefill in ("excluded", "included"):
            for average in ("macro", "micro"):
                baseline = cell.options["baseline"] if base == _name(cell.options["baseline"]) else base
                out.append((f"{base}/{prefill}/{average}",
                            {**cell.options, "baseline": baseline, "prefill": prefill, "average": average}))
    return out


def _name(baseline) -> str:
    return baseline if isinstance(baseline, str) else "cell baseline"


def _measure(cell: Cell, pool: Pool, n_boot: int, seed: int, level: float) -> tuple[Estimate | None, str]:
    """The cell's estimate (None when empty) and its note: what the rows are, or why there is no value."""
    found = _evaluate(cell, pool, cell.options, n_boot, seed, level)
    if isinstance(found, Estimate) and math.isfinite(found.value):
        mark = columns.marker(one_run_per_dataset(pool.select(cell.conditions, cell.anys), pool.resolution)[0])
        return found, "; ".join(n for n in (mark, found.note) if n)
    return None, found if isinstance(found, str) else "no finite value"


def predicted(cell: Cell, pool: Pool, n_boot: int, seed: int, level: float) -> tuple[float, str]:
    """Eq. (1)'s prediction beside a speed cell (tok/s, or speedup over the same-precision AR run; prefill
    excluded, as in Eq. (1)) and its source: ``probes`` (matching probes) or ``steps`` (the runs' step timings);
    (nan, "") for other cells or none."""
    metric = PREDICTED.get(cell.metric["metric"])
    if metric is None or cell.options["prefill"] != "excluded" or (
            metric == "predicted_speedup" and cell.options["baseline"] != "same_precision"):
        return math.nan, ""
    found = _evaluate(replace(cell, metric={**cell.metric, "metric": metric}), pool, cell.options, n_boot, seed,
                      level)
    if not isinstance(found, Estimate) or not math.isfinite(found.value):
        return math.nan, ""
    return found.value, "probes" if "with probes" in found.note else "steps"


def _gpu_columns(manifest: Manifest, cell: Cell, pool: Pool, n_boot: int, seed: int, level: float) -> dict:
    """``<id>``, ``<id>_lo``, ``<id>_hi``, ``<id>_note``, ``<id>_ratio`` (ours / paper), ``<id>_predicted`` and
    ``<id>_predicted_source`` (Eq. (1)) per GPU column."""
    out = {}
    for gpu in columns.gpu_columns(manifest):
        gpu_cell = columns.gpu_column(cell, gpu["gpu"])
        found, note = _measure(gpu_cell, pool, n_boot, seed, level)
        value = found.value if found else math.nan
        ratio = value / cell.paper.value if found and cell.paper.value and cell.options["compare"] else math.nan
        out.update({gpu["id"]: value, f"{gpu['id']}_lo": found.lo if found else math.nan,
                    f"{gpu['id']}_hi": found.hi if found else math.nan, f"{gpu['id']}_ratio": ratio,
                    f"{gpu['id']}_note": note if found else columns.why_empty(gpu_cell, pool, gpu["gpu"], note)})
        prediction = predicted(gpu_cell, pool, n_boot, seed, level) if found else (math.nan, "")
        out[f"{gpu['id']}_predicted"], out[f"{gpu['id']}_predicted_source"] = prediction
    return out


def fill(manifest: Manifest, pool: Pool, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL) -> pd.DataFrame:
    """One row per cell: the paper's value, ours on the paper's GPU with its interval (or why there is none), the
    difference, and the same cell on each of the manifest's ``gpu_columns``."""
    records = []
    for paper_cell in cells(manifest):
        cell = columns.paper_column(paper_cell)
        found, note = _measure(cell, pool, n_boot, seed, level)
        ok = found is not None
        record = {
            "paper_id": manifest.id, "table": cell.table, "row": cell.row["id"], "row_label": cell.row["label"],
            "column": cell.column["id"], "column_label": cell.column["label"], "metric": cell.metric["id"],
            "metric_label": cell.metric["label"], "kind": cell.metric["metric"], "paper": str(cell.paper),
            "paper_value": cell.paper.value, "paper_label": cell.paper.label, "approx": cell.paper.approx,
            "published": cell.paper.published, "status": "filled" if ok else "not run",
            "value": found.value if ok else math.nan, "lo": found.lo if ok else math.nan,
            "hi": found.hi if ok else math.nan, "n": found.n if ok else 0, "ci": found.ci if ok else "",
            "note": note if ok else columns.why_empty(cell, pool, None, note),
        }
        record["predicted"], record["predicted_source"] = predicted(cell, pool, n_boot, seed, level) if ok \
            else (math.nan, "")
        compare = ok and cell.options["compare"] and cell.paper.value is not None
        record["delta"] = found.value - cell.paper.value if compare else math.nan
        tol = cell.options["tolerance"]
        record["match"] = ("yes" if abs(round(found.value, 2) - cell.paper.value) <= tol + 1e-9 else "no") \
            if compare and tol is not None and not cell.paper.approx else ""
        if ok:
            for name, opts in variants(cell):
                other = _evaluate(cell, pool, opts, n_boot, seed, level)
                record[f"variant:{name}"] = other if isinstance(other, str) else (other.value, other.lo, other.hi)
        record.update(_gpu_columns(manifest, paper_cell, pool, n_boot, seed, level))
        records.append(record)
    return pd.DataFrame(records)
