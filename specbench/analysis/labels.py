"""Readable run labels: the drafter and the config values that vary among the runs shown, never a hash."""

from __future__ import annotations

import pandas as pd

from specbench.analysis.resolve import canon, config_columns


def varying(frame: pd.DataFrame) -> list[str]:
    """Config columns (``resolve.config_columns``) with more than one recorded value among the rows of ``frame``
    (a setting only some drafters have varies only if it takes two values)."""
    out = []
    for column in config_columns(frame.columns):
        values = {repr(canon(v)) for v in frame[column]} - {"None"}
        if len(values) > 1 and column != "drafter.name":
            out.append(column)
    return out


def short(column: str) -> str:
    """``drafter.num_tokens`` -> ``num_tokens``; other groups keep their prefix (``quant.scheme``)."""
    return column.removeprefix("drafter.")


def run_labels(frame: pd.DataFrame) -> pd.Series:
    """One label per row: ``ngram min_n=1 num_tokens=5`` from the columns in which the rows differ (a value a run
    lacks is left out)."""
    keys = [k for k in varying(frame) if k != "drafter"]

    def label(row: pd.Series) -> str:
        parts = [f"{short(k)}={v:g}" if isinstance(v, float) else f"{short(k)}={v}"
                 for k in keys if (v := canon(row[k])) is not None]
        return " ".join([str(row.get("drafter", "")), *parts]).strip()

    return frame.apply(label, axis=1) if len(frame) else pd.Series(dtype=object)
