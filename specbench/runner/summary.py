"""The table printed at the end of a run: what was measured, one line per method with 95% intervals, and where
each method's rows are.

The statistics are ``specbench.analysis``'s (``cell_stats``: tok/s macro over questions with prefill excluded,
τ with the bonus token, speedup paired with the same-precision AR run), so the summary agrees with the tables.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

N_BOOT = 1000
VARIANTS = {"tok_s": ("tok_s", {}), "tok_s_eq1": ("tok_s_eq1", {}), "tok_s_e2e": ("tok_s", {"prefill": "included"}),
            "tau": ("tau", {}), "speedup": ("speedup", {})}
CPU_NOTE = ("On a CPU a decoding step of a small model costs little more than the Python around it, so drafters "
            "that add steps can be slower than AR (speedup < 1); timings comparable with the papers need a GPU.")


def summarize(folders: list[Path], n_boot: int = N_BOOT) -> pd.DataFrame:
    """One row per run folder: drafter, its settings (label), tok/s (measured and Eq. (1)'s), τ, speedup with
    ``_lo``/``_hi``, folder."""
    from specbench.analysis import cell_stats, load_results
    from specbench.analysis.labels import run_labels

    found = [Path(f) for f in folders if (Path(f) / "results.parquet").exists()]
    data = load_results(found, columns=None)
    data = data.drop(columns=[c for c in ("answer", "accept_lengths") if c in data.columns])
    stats = cell_stats(data, variants=VARIANTS, n_boot=n_boot)
    hashes = {pd.read_parquet(f / "results.parquet", columns=["config_hash"]).config_hash.iloc[0]: f for f in found}
    return stats.assign(method=run_labels(stats), folder=stats.config_hash.map(hashes))


def setting(table: pd.DataFrame) -> str:
    """``tiny-target · quant none · specbench_mini · CPU`` (values shared by every row; several are joined)."""
    def values(column: str) -> str:
        found = [str(v) for v in dict.fromkeys(table[column]) if isinstance(v, str)] if column in table else []
        return "/".join(found) or "?"

    device = values("env.gpu") if table.get("env.gpu", pd.Series(dtype=object)).notna().any() else "CPU"
    weights = " · shape-only weights" if "shape_only" in set(table.get("weights", ())) else ""
    return (f"{values('model.source')} · quant {values('quant.scheme')} ({values('quant.backend')}) · "
            f"{values('dataset.name')} · {device}{weights}")


def with_interval(row: pd.Series, key: str, digits: int) -> str:
    """``350.2 [299.5–397.4]``: the value and its 95% interval (``—`` when there is no value)."""
    value, lo, hi = row.get(key, math.nan), row.get(f"{key}_lo", math.nan), row.get(f"{key}_hi", math.nan)
    if not math.isfinite(value):
        return "—"
    spread = f" [{lo:.{digits}f}–{hi:.{digits}f}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{value:.{digits}f}{spread}"


def lines(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = ["method", "questions", "tok/s [95% CI]", "Eq. (1) tok/s", "τ", "speedup [95% CI]"]
    rows = [[r["method"], f"{int(r.get('n_questions', 0) or 0)}", with_interval(r, "tok_s", 1),
             with_interval(r, "tok_s_eq1", 1), f"{r.tau:.2f}", with_interval(r, "speedup", 2)]
            for _, r in table.iterrows()]
    return header, rows


def print_summary(table: pd.DataFrame) -> None:
    title = f"specbench: {setting(table)}"
    header, rows = lines(table)
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(title)
        print(pd.DataFrame(rows, columns=header).to_string(index=False))
    else:
        out = Table(title=title, caption="tok/s: prefill excluded, mean over questions; Eq. (1) tok/s: predicted "
                                         "from the phase times; speedup: over the same-precision AR run, paired; "
                                         "95% bootstrap intervals over questions")
        for column in header:
            out.add_column(column, justify="left" if column == "method" else "right")
        for row in rows:
            out.add_row(*row)
        console = Console()
        if not console.is_terminal:  # a log file: as wide as the table, not rich's 80 columns that cut cells
            whole = console.measure(out, options=console.options.update_width(1000)).maximum
            console = Console(width=max(console.width, whole))
        console.print(out)
    if (table.get("env.gpu", pd.Series(dtype=object)).isna()).all():
        print(CPU_NOTE)
    for _, r in table.iterrows():
        print(f"results of {r['method']}: {r['folder']}")
