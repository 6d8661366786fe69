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



def test_rows_record_predicted_beside_measured_speed():
    """``tokens_per_s_eq1`` is Eq. (1) from the generation's own phase times; measured speed stays wall clock."""
    from specbench.decoding.generate import Generation
    from specbench.runner.metrics import generation_row

    gen = Generation(10, [1] * 9, accept_lengths=[3, 5], drafted=[6, 6], draft_depths=[2, 2], decode_s=0.04,
                     phase_ms={0: {"draft": 4.0, "verify": 10.0, "accept": 1.0}, 1: {"draft": 6.0, "verify": 10.0}})
    row = generation_row(gen)
    assert row["tokens_per_s_eq1"] == pytest.approx(1000 * 4.0 / (5.0 + 10.0))  # tau 4 per 15 ms of phases
    assert row["tokens_per_s_decode"] == pytest.approx(9 / 0.04) and row["decode_loop"] == "host"
    untimed = generation_row(Generation(10, [1], decode_s=0.01))  # no steps: no prediction
    assert untimed["tokens_per_s_eq1"] != untimed["tokens_per_s_eq1"]
