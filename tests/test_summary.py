"""The end-of-run summary names what was measured, gives intervals and says where each method's rows are."""

from pathlib import Path

import pandas as pd

from specbench.runner.summary import CPU_NOTE, lines, print_summary, summarize

SMOKE = Path(__file__).resolve().parents[1] / "results" / "smoke"


def test_summary_names_the_setting_intervals_and_folders(capsys):
    folders = sorted({p.parent for p in SMOKE.glob("tree_sweep/*/results.parquet")})[:2]
    table = summarize(folders, n_boot=50)
    assert set(table.folder) == set(folders)
    print_summary(table)
    out = capsys.readouterr().out
    assert "specbench: tiny-target · quant " in out and "specbench_mini · CPU" in out
    assert "[" in out and "95% bootstrap" in out and "Eq. (1) tok/s" in out
    assert (table.tok_s_eq1 > 0).all()  # predicted from the runs' phase times, beside the measured tok/s
    assert CPU_NOTE[:40] in out.replace("\n", " ") or CPU_NOTE[:20] in out
    for _, row in table.iterrows():
        assert f"results of {row.method}: {row.folder}" in out
    assert not any(h in row.method for h in table.config_hash for _, row in table.iterrows())
    assert pd.Series(table.method).str.startswith("eagle").all() and table.method.nunique() == len(table)


def test_summary_prints_every_interval_whole_into_a_log_file(capsys, monkeypatch):
    """A run whose output goes to a file (a SLURM log, ``> run.log``) keeps every figure whole: rich gives a
    non-terminal 80 columns, and cut cells read ``[175.7–181.…``."""
    monkeypatch.delenv("COLUMNS", raising=False)
    folders = sorted({p.parent for p in SMOKE.glob("tree_sweep/*/results.parquet")})[:2]
    table = summarize(folders, n_boot=50)
    table["method"] = table.method + " num_tokens=5 depth=6 total_tokens=60"  # a long label, as a sweep's
    print_summary(table)
    out = capsys.readouterr().out
    assert "…" not in out
    for row in lines(table)[1]:
        for cell in row:
            assert cell in out, cell
