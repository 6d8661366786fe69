"""The table printed at the end of a run: one line per method, speedups against the AR baseline."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def summarize(folders: list[Path]) -> pd.DataFrame:
    frames = [pd.read_parquet(f / "results.parquet") for f in folders if (f / "results.parquet").exists()]
    data = pd.concat(frames, ignore_index=True)
    per_q = data.groupby(["drafter", "question_id", "repeat"], sort=False).agg(
        tokens=("new_tokens", "sum"), decode_s=("decode_s", "sum"), total_s=("total_s", "sum"))
    per_q["speed"] = per_q.tokens / per_q.decode_s
    per_q["speed_e2e"] = per_q.tokens / per_q.total_s
    table = per_q.groupby("drafter", sort=False).agg(tok_s=("speed", "mean"), tok_s_e2e=("speed_e2e", "mean"),
                                                     questions=("tokens", "size"))
    steps = data.groupby("drafter", sort=False).agg(steps=("steps", "sum"), accepted=("accepted_tokens", "sum"),
                                                    committed=("new_tokens", "sum"), turns=("new_tokens", "size"))
    table["tau"] = (steps.committed - steps.turns) / steps.steps
    if "none" in table.index:
        table["speedup"] = table.tok_s / table.loc["none", "tok_s"]
    return table.reset_index()


def print_summary(table: pd.DataFrame) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        return
    out = Table(title="specbench summary (tok/s: prefill excluded, macro over questions)")
    for column in table.columns:
        out.add_column(str(column), justify="right")
    for _, row in table.iterrows():
        out.add_row(*[f"{v:.2f}" if isinstance(v, float) else str(v) for v in row])
    Console().print(out)
