"""Gather the run folders of a sweep into one results and one steps parquet, and print the run summary.

    python -m benchmarks.collect_runs RUNS_ROOT --out DIR

Every ``results.parquet`` / ``steps.parquet`` under ``RUNS_ROOT`` (one pair per method folder) is concatenated
into ``DIR/results.parquet`` and ``DIR/steps.parquet`` (so ``make tables`` reads DIR like a run folder); the
summary table goes to ``DIR/summary.md``. Used on the GPU machine, whose returned files must be few.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from specbench.atomic import write_parquet_atomic
from specbench.runner.summary import summarize


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    folders = sorted({p.parent for p in args.root.rglob("results.parquet")})
    if not folders:
        raise SystemExit(f"no results.parquet under {args.root}")
    args.out.mkdir(parents=True, exist_ok=True)
    for kind in ("results", "steps"):
        frames = [pd.read_parquet(f / f"{kind}.parquet") for f in folders if (f / f"{kind}.parquet").exists()]
        write_parquet_atomic(pd.concat(frames, ignore_index=True), args.out / f"{kind}.parquet")
    table = summarize(folders)
    text = table.to_string(index=False, float_format=lambda v: f"{v:.3f}")
    (args.out / "summary.md").write_text(text + "\n")
    print(text)
    return table


if __name__ == "__main__":
    main()
