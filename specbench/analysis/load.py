"""Read result parquet files lazily: any set of folders, files or globs, filtered on any column.

Run folders write ``results.parquet`` (a row per question x turn x repeat), ``steps.parquet`` (a row per
decoding step) and, for Eq. (1), ``probes.parquet`` (isolated forward timings). Files of different runs have
different columns (each drafter adds its settings), so the schemas are unified and missing columns read as
null. Filters are pushed down to the parquet scan where they can be (``==``, ``isin``, ``is null``); a string
value containing ``*`` or ``?`` is a shell-style pattern, matched after the scan.
"""

from __future__ import annotations

import glob
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

ROW_KEY = ["config_hash", "env.gpu", "output.name", "question_id", "turn", "repeat"]
# columns renamed since results were first written (old name -> current name); old files read as current
RENAMED = {f"timing.{k}": f"engine.{k}" for k in ("cuda_graphs", "compile", "compile_mode", "fuse_projections", "gemv")}
PROBE_COLUMNS = ["config_hash", "model.source", "quant.scheme", "quant.backend", "env.gpu", "probe", "n", "mask",
                 "context", "median_ms", "p10_ms", "p90_ms", "replays"]


def find_files(paths_or_globs: str | Path | Iterable[str | Path], name: str = "results.parquet") -> list[Path]:
    """Files called ``name`` under each folder, each file given directly, or each glob match; no repeats."""
    items = [paths_or_globs] if isinstance(paths_or_globs, (str, Path)) else list(paths_or_globs)
    found: dict[Path, None] = {}
    for item in items:
        text = str(item)
        for match in sorted(glob.glob(text, recursive=True)) if any(c in text for c in "*?[") else [text]:
            path = Path(match)
            if path.is_dir():
                found.update(dict.fromkeys(sorted(path.rglob(name))))
            elif path.is_file() and path.name == name:
                found[path] = None
    return [p.resolve() for p in found]


def _is_pattern(value: Any) -> bool:
    return isinstance(value, str) and any(c in value for c in "*?")


def _expression(column: str, value: Any) -> ds.Expression | None:
    """The pushed-down filter for one column, or None where it must be matched after the scan (patterns)."""
    field = ds.field(column)
    values = value if isinstance(value, (list, tuple, set)) else [value]
    if any(_is_pattern(v) for v in values):
        return None
    plain = [v for v in values if v is not None]
    expr = field.isin(plain) if len(plain) > 1 else (field == plain[0]) if plain else None
    if None in values:
        expr = field.is_null() if expr is None else (expr | field.is_null())
    return expr


def matches(series: pd.Series, value: Any) -> pd.Series:
    """Rows of ``series`` equal to ``value``: a scalar, None (null), a pattern, or a list of those."""
    values = value if isinstance(value, (list, tuple, set)) else [value]
    hit = pd.Series(False, index=series.index)
    for v in values:
        if v is None:
            hit |= series.isna()
        elif _is_pattern(v):
            hit |= series.map(lambda s, v=v: isinstance(s, str) and fnmatchcase(s, v))
        else:
            hit |= series.eq(v).fillna(False).astype(bool)
    return hit


def _dataset(files: list[Path]) -> ds.Dataset:
    """``files`` as one dataset; a column typed differently across files (question ids are integers in some
    benchmarks and strings in others) is read as a string."""
    schemas = [pq.read_schema(f) for f in files]
    types: dict[str, set] = {}
    for schema in schemas:
        for field in schema:
            if not pa.types.is_null(field.type):
                types.setdefault(field.name, set()).add(field.type)
    mixed = {name for name, kinds in types.items()
             if len(kinds) > 1 and any(pa.types.is_string(t) or pa.types.is_large_string(t) for t in kinds)}
    if mixed:
        schemas = [pa.schema([f.with_type(pa.large_string()) if f.name in mixed else f for f in schema])
                   for schema in schemas]
    schema = pa.unify_schemas(schemas, promote_options="permissive")
    return ds.dataset([str(f) for f in files], schema=schema, format="parquet")


def read_table(files: list[Path], filters: Mapping[str, Any] | None = None,
               columns: list[str] | None = None) -> pd.DataFrame:
    """Scan ``files`` as one dataset; columns absent from every file read as null (filters) or are skipped."""
    if not files:
        return pd.DataFrame(columns=columns or [])
    dataset = _dataset(files)
    names = set(dataset.schema.names)
    filters = dict(filters or {})
    absent = {k: v for k, v in filters.items() if k not in names}
    if any(v is not None and not (isinstance(v, list) and None in v) for v in absent.values()):
        return pd.DataFrame(columns=columns or dataset.schema.names)  # a filter on a missing column: no match
    present = {k: v for k, v in filters.items() if k in names}
    exprs = [e for k, v in present.items() if (e := _expression(k, v)) is not None]
    expr = None
    for e in exprs:
        expr = e if expr is None else expr & e
    post = [k for k, v in present.items() if _expression(k, v) is None]
    wanted = None if columns is None else [c for c in dict.fromkeys([*columns, *post]) if c in names]
    frame = dataset.to_table(columns=wanted, filter=expr).to_pandas()
    for key in post:
        frame = frame[matches(frame[key], present[key])]
    if columns is not None:
        frame = frame[[c for c in columns if c in frame.columns]]
    return frame.reset_index(drop=True)


def available_columns(paths_or_globs) -> list[str]:
    """Every column any results file under ``paths_or_globs`` has."""
    files = find_files(paths_or_globs)
    return _dataset(files).schema.names if files else []


def newest_files(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """(the files to read as they are, the older copies) of several files holding the same run (config hash x GPU
    x experiment name: copies of one run folder, or the same configuration measured again into another folder):
    the newest ``env.date`` of a run is read as that run; a file whose every run has a strictly newer copy
    elsewhere is an older copy (a rerun after a code change superseded it); runs are never pooled across files."""
    newest: dict[tuple, tuple[str, int]] = {}
    runs_of: dict[int, dict[tuple, str]] = {}
    for i, path in enumerate(files):
        names = set(pq.read_schema(path).names)
        frame = pd.read_parquet(path, columns=[c for c in [*ROW_KEY[:3], "env.date"] if c in names])
        if frame.empty:
            continue
        for run, dates in frame.astype(object).where(frame.notna(), "").groupby(
                [c for c in ROW_KEY[:3] if c in names]):
            date = str(dates["env.date"].max()) if "env.date" in dates else ""
            newest[run] = max(newest.get(run, ("", -1)), (date, i))
            runs_of.setdefault(i, {})[run] = date
    keep = {i for _, i in newest.values()}
    older = {i for i, runs in runs_of.items() if i not in keep and all(d < newest[r][0] for r, d in runs.items())}
    return [p for i, p in enumerate(files) if i in keep], [p for i, p in enumerate(files) if i in older]


def load_results(paths_or_globs, filters: Mapping[str, Any] | None = None, columns: list[str] | None = None,
                 steps: bool = False) -> pd.DataFrame:
    """Result rows of every ``results.parquet`` found, filtered; copies of one run folder are read once.

    An older copy of a run that was measured again (same config hash, older ``env.date``, another file) is read
    too (when ``config_hash`` and ``env.date`` are among the columns read), as its own run: ``~<date>`` is appended
    to its ``config_hash``. The newest copy fills the cells; an older one can still serve as the baseline of a run
    measured with the same code (``Pool.baseline``).

    ``steps=True`` adds ``draft_depth_sum``: the summed draft depth of each row's steps (from the sibling
    ``steps.parquet``), which per-draft-pass timings need.
    """
    files, older = newest_files(find_files(paths_or_globs))
    frame = _read_results(files, filters, columns, steps)
    if older and (columns is None or {"config_hash", "env.date"} <= set(columns)):
        old = _read_results(older, filters, columns, steps)
        if not old.empty and "env.date" in old.columns:
            old["config_hash"] = old["config_hash"].astype(str) + "~" + old["env.date"].astype(str).str[:16]
            frame = pd.concat([frame, old], ignore_index=True)
    return frame


def _read_results(files: list[Path], filters, columns, steps: bool) -> pd.DataFrame:
    """The rows of ``files`` (duplicate rows of copied run folders once), with ``draft_depth_sum`` if ``steps``."""
    if columns is not None:
        columns = list(dict.fromkeys([*columns, *(old for old, new in RENAMED.items() if new in columns)]))
    frame = current_names(read_table(files, filters, columns))
    key = [k for k in ROW_KEY if k in frame.columns]
    if len(key) == len(ROW_KEY):
        frame = frame.drop_duplicates(key, keep="last").reset_index(drop=True)
    if steps and not frame.empty and "config_hash" in frame.columns:
        frame = frame.merge(_depth_sums(files, frame["config_hash"].unique().tolist()),
                            on=["config_hash", "question_id", "turn", "repeat"], how="left")
    return frame


def current_names(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with renamed columns under their current names (a new name's gaps filled from the old one)."""
    for old, new in RENAMED.items():
        if old in frame.columns:
            frame[new] = frame[old] if new not in frame.columns else frame[new].where(frame[new].notna(), frame[old])
            frame = frame.drop(columns=old)
    return frame


def _depth_sums(files: list[Path], hashes: list[str]) -> pd.DataFrame:
    step_files = [f.parent / "steps.parquet" for f in files if (f.parent / "steps.parquet").exists()]
    keys = ["config_hash", "question_id", "turn", "repeat"]
    steps = read_table(step_files, {"config_hash": hashes}, [*keys, "draft_depth"])
    if steps.empty:
        return pd.DataFrame(columns=[*keys, "draft_depth_sum"])
    steps = steps.drop_duplicates()  # copies of one run folder
    return steps.groupby(keys, as_index=False).draft_depth.sum().rename(columns={"draft_depth": "draft_depth_sum"})


def load_steps(paths_or_globs, filters: Mapping[str, Any] | None = None,
               columns: list[str] | None = None) -> pd.DataFrame:
    """Step rows of every ``steps.parquet`` found (filter on step columns, e.g. ``config_hash``)."""
    return read_table(find_files(paths_or_globs, "steps.parquet"), filters, columns)


def load_probes(paths_or_globs, filters: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Eq. (1) timing probes (``probes.parquet``); an empty frame with the probe columns when there are none."""
    frame = read_table(find_files(paths_or_globs, "probes.parquet"), filters)
    return frame if not frame.empty else pd.DataFrame(columns=PROBE_COLUMNS)
