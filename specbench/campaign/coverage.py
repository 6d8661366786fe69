"""Which paper cells the campaign fills, checked before any GPU time: each run's composed config stands in for its
result rows (same config columns, synthetic questions and categories, made-up timings on a named GPU), and the
manifests are filled from those rows. A cell the plan should fill but does not points at a filter or a run that
disagree."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from hydra import compose, initialize_config_dir

from specbench.analysis.columns import gpu_columns
from specbench.campaign.execute import Profile, overrides
from specbench.campaign.plan import CONF, Run
from specbench.datasets.synthetic import task_shaped_questions
from specbench.runner.config import config_hash, flatten, register_schemas

GPU = {"h200": "NVIDIA H200"}


def stand_in_rows(cfg, gpu: str, questions: int) -> list[dict]:
    """Rows shaped like the runner's for one method config: AR at 30 tok/s, a drafter at 60 tok/s with tau 3."""
    drafting = cfg.drafter.name != "none"
    tau, speed = (3.0, 60.0) if drafting else (1.0, 30.0)
    identity = {**flatten(cfg), "config_hash": config_hash(cfg), "env.gpu": gpu, "drafter": cfg.drafter.name,
                "weights": "shape_only" if cfg.model.shape_only else "real",
                "acceptance_source": cfg.timing.acceptance}
    rows = []
    for q in task_shaped_questions(cfg.dataset.name, questions, 1000, cfg.dataset.categories):
        new = 64
        steps = round(new / tau)
        rows.append({**identity, "question_id": q.question_id, "category": q.category, "turn": 0, "repeat": 0,
                     "prompt_tokens": len(q.turns[0]), "new_tokens": new, "steps": steps,
                     "accepted_tokens": new - steps, "drafted_tokens": 4 * steps if drafting else 0,
                     "decode_s": new / speed, "total_s": new / speed + 0.05, "draft_ms": 2.0 * steps * drafting,
                     "verify_ms": 10.0 * steps, "drafter_prefill_ms": 5.0 * drafting, "draft_depth_sum": 3 * steps})
    return rows


def stand_in_results(plan: list[Run], profile: Profile, questions: int = 1) -> pd.DataFrame:
    """Stand-in rows for every method of every run in ``plan``."""
    from specbench.runner.run import method_configs

    register_schemas()
    rows = []
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for run in plan:
            cfg = compose("config", overrides=overrides(run, profile, Path("stand-in"), questions))
            for method in method_configs(cfg):
                rows += stand_in_rows(method, GPU[profile.gpu], questions)
    return pd.DataFrame(rows)


def coverage(plan: list[Run], profile: Profile, manifests) -> pd.DataFrame:
    """Per manifest table: its cells, and how many the plan's stand-in rows fill in the profile's GPU column."""
    from specbench.analysis.manifest import fill
    from specbench.analysis.pool import Pool

    pool = Pool(stand_in_results(plan, profile))
    out = []
    for manifest in manifests:
        for gpu in [g for g in gpu_columns(manifest) if g["id"] == profile.gpu]:
            cells = fill(manifest, pool, n_boot=5)
            for table, group in cells.groupby("table", sort=False):
                out.append({"paper": manifest.id, "table": table, "cells": len(group),
                            "filled": int(group[gpu["id"]].notna().sum())})
    return pd.DataFrame(out)
