"""Every column the runner writes is documented in docs/results.md, and no fact is written under two names."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from specbench.runner.run import run

DOC = Path(__file__).resolve().parents[1] / "docs" / "results.md"
GROUPS = ("model", "quant", "drafter", "dataset", "engine", "timing", "runtime", "output")


def documented() -> tuple[set[str], set[str]]:
    """(column names, config groups) listed in docs/results.md."""
    names = set(re.findall(r"`([a-z_][a-z0-9_.]*)`", DOC.read_text()))
    return names, {n.removesuffix(".*") for n in re.findall(r"`([a-z]+\.\*)`", DOC.read_text())}


@pytest.mark.slow
def test_every_written_column_is_documented(hydra_compose, tmp_path):
    cfg = hydra_compose("dataset=synthetic", "dataset.synthetic_questions=1", "dataset.synthetic_prompt_tokens=8",
                        "dataset.max_new_tokens=4", "timing.warmup=0", "output.progress=false",
                        f"output.root={tmp_path}", "drafter=layer_skip", "compare=[ngram,draft_model,eagle,hierspec]")
    folders = run(cfg)
    assert len(folders) == 6  # baseline, layer_skip and four compared drafters
    names, groups = documented()
    assert set(GROUPS) <= groups
    for folder in folders:
        assert not list(folder.glob("*.parts")) and not list(folder.rglob("*.tmp"))  # compacted at the end
        for table in ("results", "steps"):
            columns = pd.read_parquet(folder / f"{table}.parquet").columns
            missing = [c for c in columns if c not in names and c.split(".")[0] not in GROUPS]
            assert not missing, f"{folder.name}/{table}.parquet: document {missing} in docs/results.md"
        row = pd.read_parquet(folder / "results.parquet").iloc[0]
        assert "drafter.name" not in row and "rotated" not in row  # said once, as drafter and quant.rotated
        assert not [c for c in row.index if c.startswith(("ngram_", "eagle_", "hierspec_"))]

