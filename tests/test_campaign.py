"""The shape-only campaign: its plan, its resumable chunks on the tiny shapes, and where its rows land in the tables."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from specbench.analysis.manifest import fill, load
from specbench.analysis.pool import Pool
from specbench.analysis.cells import cell_stats
from specbench.analysis.tables import RUN_STATS, RUN_VIEW, runs_markdown, write_table
from specbench.campaign import execute as ex
from specbench.campaign.__main__ import main as campaign
from specbench.campaign.coverage import coverage
from specbench.campaign.plan import runs
from specbench.datasets.synthetic import TASK_LENGTHS, task_shaped_questions
from specbench.runner.config import register_schemas

ROOT = Path(__file__).resolve().parents[1]
SPECMQUANT = load(ROOT / "experiments" / "specmquant.yaml")
TIMING_EXPERIMENTS = {"compat_llama3_8b", "compat_llama3_70b", "eagle_configs", "drafting_time", "hierspec_70b",
                      "hierspec_sweep", "quasar_table1", "quasar_sensitivity", "quasar_temperature"}


def test_plan_covers_every_timing_experiment_most_valuable_first_with_a_source_per_tau():
    plan = runs()
    assert len({r.id for r in plan}) == len(plan)
    assert TIMING_EXPERIMENTS <= {r.experiment for r in plan}
    assert plan[0].id == "compat_llama3_8b/fp16/n60"
    first = {}
    for i, run in enumerate(plan):
        first.setdefault(run.experiment, i)
    assert first["compat_llama3_8b"] < first["eagle_configs"] < first["hierspec_70b"] < first["quasar_table1"]
    assert {"eagle3", "eagle3_70b"} <= set(first)
    for run in plan:
        assert run.taus and all(tau.source and tau.value >= 1 for tau in run.taus.values()), run.id


def test_every_experiment_of_the_plan_composes():
    register_schemas()
    first = {}
    for run in runs():
        first.setdefault(run.experiment, run)
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        for run in first.values():
            cfg = compose("config", overrides=ex.overrides(run, ex.PROFILES["h200"], Path("/tmp/c"), 2))
            assert cfg.output.name == run.experiment and cfg.model.shape_only and cfg.dataset.synthetic
            assert cfg.timing.acceptance == "replay" and cfg.timing.replay_source == run.source()


@pytest.mark.slow  # coverage of the tables by the plan: ~6 s
def test_the_plan_fills_the_h200_column_of_its_tables():
    plan = [r for r in runs() if r.id.startswith(("hierspec_70b/w4a16/", "compat_llama3_8b/fp16/n60",
                                                    "compat_llama3_8b/w8a8/n60"))]
    found = coverage(plan, ex.PROFILES["h200"], [SPECMQUANT]).set_index("table")
    assert found.loc["table2", "filled"] == 84  # every Table 2 cell but tau (4 methods x 7 columns x 3 metrics)
    assert found.loc["table3", "filled"] == 14
    assert found.loc["figure1a", "filled"] == 6  # FP16 and W8A8 x 3 metrics
    assert found.loc["figure1b", "filled"] == 6 and found.loc["figure4_8b", "filled"] == 0


def test_task_shaped_prompts_follow_the_stated_lengths_and_are_reproducible():
    questions = task_shaped_questions("spec_bench", 3, 1000)
    assert len(questions) == 3 * len(TASK_LENGTHS["spec_bench"])
    for q in questions:
        task = str(q.question_id).rsplit("-", 1)[0]
        categories, (lo, hi) = TASK_LENGTHS["spec_bench"][task]
        assert q.category in categories and lo <= len(q.turns[0]) <= hi
    assert [q.turns for q in task_shaped_questions("spec_bench", 3, 1000)] == [q.turns for q in questions]
    with pytest.raises(ValueError, match="task length table"):
        task_shaped_questions("gsm8k", 1, 1000)


def test_a_cut_chunk_resumes_and_done_runs_are_skipped(tmp_path, monkeypatch):
    plan = runs()[:4]
    # what each worker does, run by run, as the worker would: "done", "failed", "cut" (stopped by the budget while
    # measuring), "crash" (dies while measuring)
    scripts = iter([["done", "cut"], ["done", "crash"], ["done"]])
    started = []

    def fake_launch(job, log, timeout_s):
        todo = json.loads(job.read_text())["runs"]
        for run_id, outcome in zip(todo, next(scripts)):
            ledger = ex.Ledger(tmp_path)
            ledger.start(next(r for r in plan if r.id == run_id), log, [])
            started.append(run_id)
            if outcome in ("cut", "crash"):  # the worker stops with the run marked running
                return outcome == "crash"
            ledger.finish(run_id, outcome, 1.0)
        return True

    monkeypatch.setattr(ex, "launch", fake_launch)
    first = ex.execute(plan, ex.PROFILES["h200"], tmp_path, 600, say=lambda _: None)
    assert first == {"done": 1, "cut": 1, "failed": 0, "pending": 3, "failed_left": 0}  # the cut run and the two never started
    second = ex.execute(plan, ex.PROFILES["h200"], tmp_path, 600, say=lambda _: None)
    # the cut run resumes and finishes; the next one dies with its worker; a new worker runs the last one
    assert second == {"done": 2, "cut": 0, "failed": 1, "pending": 0, "failed_left": 1}
    assert started == [plan[0].id, plan[1].id, plan[1].id, plan[2].id, plan[3].id]
    ledger = json.loads((tmp_path / "campaign.json").read_text())["runs"]
    assert ledger[plan[1].id]["attempts"] == 2 and ledger[plan[1].id]["tau_source"] == plan[1].source()
    assert ledger[plan[2].id]["status"] == "failed"
    assert ex.execute(plan, ex.PROFILES["h200"], tmp_path, 600, say=lambda _: None)["done"] == 0  # failed: skipped
    assert ex.execute(runs()[4:6], ex.PROFILES["h200"], tmp_path, 10, say=lambda _: None)["pending"] == 2


def test_campaign_profiles_take_fewer_prompts_per_task_on_six_task_runs_and_short_warmups():
    h200, plan = ex.PROFILES["h200"], runs()
    drafting = next(r for r in plan if r.experiment == "drafting_time")  # its experiment already generates 256
    six = next(r for r in plan if r.experiment == "hierspec_70b")
    one = next(r for r in plan if r.experiment == "compat_llama3_8b")
    assert "dataset.synthetic_questions=1" in ex.overrides(six, h200, Path("/tmp/c"))
    assert "dataset.synthetic_questions=2" in ex.overrides(one, h200, Path("/tmp/c"))
    assert "dataset.synthetic_questions=3" in ex.overrides(six, h200, Path("/tmp/c"), questions=3)
    assert "timing.warmup_new_tokens=128" in ex.overrides(one, h200, Path("/tmp/c"))
    assert "dataset.max_new_tokens=256" in ex.overrides(one, h200, Path("/tmp/c"))
    assert not any(o.startswith("dataset.max_new_tokens") for o in ex.overrides(drafting, h200, Path("/tmp/c")))
    assert ex.estimate_s(six, 1, 256) < ex.estimate_s(six, 1, 1024)
    # each block of runs on one target cell is contiguous, so a worker builds each target once per block
    cells = [r.target_cell for r in plan if r.experiment in ("compat_llama3_8b", "eagle_configs")]
    assert cells == sorted(cells, key=cells.index)


@pytest.mark.slow  # a smoke campaign chunk: ~10 s
def test_smoke_campaign_on_tiny_shapes_writes_replayed_rows_per_task(tmp_path, capsys):
    args = ["smoke", "--root", str(tmp_path), "--only", "hierspec_70b/w4a16/eg2_3_24", "--budget-s", "300"]
    assert campaign(args)["done"] == 1
    rows = pd.read_parquet(next(tmp_path.glob("runs/hierspec_70b/*/results.parquet")))
    assert set(rows.category) >= {"translation", "summarization", "qa", "math_reasoning", "rag"}
    assert (rows.weights == "shape_only").all() and (rows.acceptance_source == "replay").all()
    assert rows["timing.replay_source"].str.contains("EAGLE-2 Tab.2").all()
    assert campaign(args)["done"] == 0  # the next chunk skips it
    assert "campaign complete" in capsys.readouterr().out


# --- a fake campaign: rows as the runner writes them, on named GPUs ---

def _rows(gpu, drafter, tok_s, tau, *, weights="shape_only", sha="a", config="c", seed=0, **settings):
    rng = np.random.default_rng(seed)
    tasks = ["writing", "translation", "summarization", "qa", "math_reasoning", "rag"]
    out = []
    for i, category in enumerate(tasks * 2):
        new, speed = 64, tok_s * (1 + 0.01 * rng.standard_normal())
        steps = round(new / tau)
        out.append({
            "config_hash": f"{config}-{drafter}", "env.gpu": gpu, "env.git_sha": sha, "output.name": "hierspec_70b",
            "model.source": "llama-3-70b-instruct", "model.shape_only": weights == "shape_only",
            "quant.scheme": "w4a16", "quant.group_size": 128, "quant.backend": "auto", "quant_backend": "triton",
            "quant_kernel": "specbench Triton int4", "drafter": drafter,
            **{f"drafter.{k}": v for k, v in settings.items()}, "dataset.name": "spec_bench",
            "dataset.max_new_tokens": 1024, "runtime.temperature": 0.0, "weights": weights,
            "acceptance_source": "replay" if weights == "shape_only" else "real",
            "timing.replay_source": "every task 3: derived from EAGLE-2 Tab.2" if weights == "shape_only" else None,
            "category": category, "question_id": f"q{i}", "turn": 0, "repeat": 0, "new_tokens": new,
            "decode_s": new / speed, "total_s": new / speed + 0.1, "steps": steps, "accepted_tokens": new - steps,
            "drafted_tokens": 3 * steps, "draft_ms": 1.0 * steps, "verify_ms": 5.0 * steps,
            "drafter_prefill_ms": 6.0, "prompt_tokens": 100,
        })
    return out


EAGLE = {"depth": 3, "topk": 10, "tree_size": 24}


def _table2(frame: pd.DataFrame) -> pd.DataFrame:
    cells = fill(SPECMQUANT, Pool(frame), n_boot=20)
    return cells[cells.table == "table2"].set_index(["row", "column", "metric"])


@pytest.mark.slow  # table regeneration: ~10 s
def test_fake_campaign_fills_the_h200_column_never_the_a100_one_and_never_shows_replayed_tau(tmp_path):
    h200 = pd.DataFrame(_rows("NVIDIA H200", "none", 30.0, 1.0) + _rows("NVIDIA H200", "eagle", 60.0, 3.0, **EAGLE))
    h200["env.date"] = "2026-12-04T14:48:18+00:00"
    cells = _table2(h200)
    speedup = cells.loc["eagle", "average", "speedup"]
    assert "measured 2026-12-04 at a" in speedup.h200_note  # the day and commit (sha "a") of the runs
    assert speedup.status == "not run" and "needs an A100" in speedup.note  # an H200 run never fills the A100 cell
    assert speedup.h200 == pytest.approx(2.0, rel=0.05) and speedup.h200_ratio == pytest.approx(2.0 / 2.12, rel=0.05)
    assert speedup.h200_note.startswith("† NVIDIA H200, shape-only, 1024 new tokens per prompt") and "τ replayed from every task 3" in \
        speedup.h200_note and "w4a16 kernel triton: specbench Triton int4: timing does not depend" in speedup.h200_note
    tau = cells.loc["eagle", "average", "tau"]
    assert math.isnan(tau.h200) and tau.h200_note.startswith("needs real weights")  # replayed tau is an input
    assert math.isnan(tau.value)
    assert cells.loc["hierspec", "average", "speedup"].h200_note.startswith("not run")  # nothing ran there
    # a real-weight A100 run fills the paper's column, and not the H200 one
    a100 = pd.DataFrame(_rows("NVIDIA A100-SXM4-80GB", "none", 20.0, 1.0, weights="real")
                        + _rows("NVIDIA A100-SXM4-80GB", "eagle", 50.0, 3.0, weights="real", **EAGLE))
    both = _table2(pd.concat([h200, a100], ignore_index=True))
    assert both.loc["eagle", "average", "speedup"].value == pytest.approx(2.5, rel=0.05)
    assert both.loc["eagle", "average", "speedup"].h200 == pytest.approx(2.0, rel=0.05)
    assert both.loc["eagle", "average", "tau"].value == pytest.approx(3.0, rel=0.05)  # measured: shown
    write_table(SPECMQUANT, next(t for t in SPECMQUANT.tables if t["id"] == "table2"),
                both.reset_index(), tmp_path)
    text = (tmp_path / "specmquant_table2.md").read_text()
    assert "H200†: 2.0" in text and "H200: not run" in text
    runs_md = runs_markdown(cell_stats(pd.concat([h200, a100], ignore_index=True), n_boot=20))
    replayed = [line for line in runs_md.splitlines() if "| shape_only |" in line]
    assert len(replayed) == 2 and all("| replay (every task 3" in line for line in replayed)
    column = len(RUN_VIEW) + [name for name, _ in RUN_STATS].index("τ")
    taus = [line.split(" | ")[column] for line in runs_md.splitlines() if "| eagle" in line]
    assert sorted(t.endswith("(replayed)") for t in taus) == [False, True] and all("3.0" in t for t in taus)


def test_two_runs_of_one_configuration_are_never_mixed():
    old = _rows("NVIDIA H200", "none", 30.0, 1.0, sha="old") + _rows("NVIDIA H200", "eagle", 45.0, 3.0, sha="old",
                                                                      **EAGLE)
    new = _rows("NVIDIA H200", "none", 30.0, 1.0, sha="new", config="c2") + \
        _rows("NVIDIA H200", "eagle", 75.0, 3.0, sha="new", config="c2", **EAGLE)
    cell = _table2(pd.DataFrame(old + new)).loc["eagle", "average", "speedup"]
    # the documented rule (docs/analysis.md): the newest run of a configuration wins and the older ones are listed;
    # until it lands the cell stays empty and names the ambiguity: never a mix of the two runs (1.5 and 2.5)
    if math.isfinite(cell.h200):
        assert cell.h200 == pytest.approx(2.5, rel=0.05)
    else:
        assert "ambiguous" in cell.h200_note


def test_the_run_list_says_when_each_run_started_and_which_commit_it_ran():
    old = pd.DataFrame(_rows("NVIDIA H200", "none", 30.0, 1.0, sha="0123456789abcdef")).assign(
        **{"env.date": "2026-12-01T08:17:54+00:00"})
    new = pd.DataFrame(_rows("NVIDIA H200", "eagle", 75.0, 3.0, sha="fedcba9876543210", **EAGLE)).assign(
        **{"env.date": "2026-12-06T21:05:11+00:00"})
    no_env = pd.DataFrame(_rows("NVIDIA A100-SXM4-80GB", "none", 20.0, 1.0, weights="real")).drop(
        columns="env.git_sha")
    lines = runs_markdown(cell_stats(pd.concat([old, new, no_env], ignore_index=True), n_boot=20)).splitlines()
    header = next(line for line in lines if line.startswith("| run |")).split(" | ")
    at, code, device = (header.index(name) for name in ("measured (UTC)", "code", "device"))
    rows = [line.split(" | ") for line in lines if "| c-" in line]
    assert sorted((r[device], r[at], r[code]) for r in rows) == [
        ("NVIDIA A100-SXM4-80GB", "—", "—"), ("NVIDIA H200", "2026-12-01 08:17", "0123456"),
        ("NVIDIA H200", "2026-12-06 21:05", "fedcba9")]


def test_a_replayed_tau_that_was_not_reached_is_named_in_the_cell_note():
    from specbench.analysis.columns import replay_shortfall

    rows = pd.DataFrame({"tau": [3.55, 3.6], "timing.replay_tau": [None, None], "category": ["writing", "math"],
                         "dataset.name": "mt_bench", "timing.replay_tau_by_task.mt_bench": [4.16, 4.16]})
    assert replay_shortfall(rows).startswith("achieved τ 3.58 of the imposed 4.16")
    assert replay_shortfall(rows.assign(tau=[4.1, 4.12])) == ""  # within 3 %
    assert replay_shortfall(pd.DataFrame({"tau": [1.0], "timing.replay_tau": [None]})) == ""  # AR: nothing imposed
    # a multi-task run: each row is held to its own task's tau (rag 2.5), other tasks to timing.replay_tau
    tasks = pd.DataFrame({"tau": [4.1, 2.45, 3.0], "category": ["writing", "rag", "qa"], "dataset.name": "spec_bench",
                          "timing.replay_tau": 3.0, "timing.replay_tau_by_task.mt_bench": 4.16,
                          "timing.replay_tau_by_task.rag": 2.5})
    assert replay_shortfall(tasks) == ""
    assert replay_shortfall(tasks.assign(tau=[3.0, 2.45, 3.0])).startswith("achieved τ 2.82 of the imposed 3.22")
