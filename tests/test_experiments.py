"""Every experiment config composes with the papers' settings; every smoke variant runs offline on CPU.

Invariants checked on the smoke runs: every metric column is written; tau >= 1 and AR tau == 1; per run, the phase
times summed over steps (draft + verify + accept, perf_counter on a CPU) cover the wall-clock decode time within
5 % (what they leave out is the loop's own bookkeeping between phases, well under 1 % here); a second run of the same
config resumes and writes no duplicate rows.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from omegaconf import OmegaConf

from specbench.decoding.generate import Generation
from specbench.runner.metrics import generation_row, step_rows
from specbench.analysis.eq1 import from_steps, phase_coverage

CONF = Path(__file__).resolve().parents[1] / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
GROUP_KEYS = ("experiment/", "dataset")  # sweep keys whose values are config files


def sweep(cfg) -> dict[str, list[str]]:
    return {k: str(v).split(",") for k, v in OmegaConf.to_container(cfg.hydra.sweeper.params).items()}


def test_every_experiment_has_a_smoke_variant_and_names_its_source():
    assert len(EXPERIMENTS) == 14
    for name in EXPERIMENTS:
        text = (CONF / "experiment" / f"{name}.yaml").read_text()
        assert text.startswith("# @package _global_"), name
        assert any(ref in text for ref in ("Figure", "Table")), f"{name} names no table or figure"
        assert (CONF / "experiment" / "smoke" / f"{name}.yaml").is_file(), name


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_composes(hydra_compose, name):
    cfg = hydra_compose(f"+experiment={name}", hydra_cfg=True)
    params = sweep(cfg)
    assert params and all(values for values in params.values())
    assert cfg.output.name == name and cfg.runtime.device == "cuda:auto" and cfg.timing.warmup >= 1
    OmegaConf.to_container(hydra_compose(f"+experiment={name}"), resolve=True)
    smoke = hydra_compose(f"+experiment=smoke/{name}", hydra_cfg=True)
    smoke_params = sweep(smoke)
    # the smoke grid replaces every axis of the real grid with CPU-sized values
    assert set(smoke_params) == set(params)
    assert smoke.runtime.device == "cpu" and smoke.model.source == "tiny-target" and smoke.timing.warmup == 0
    assert smoke.dataset.name == "specbench_mini" and smoke.output.progress is False
    assert smoke.output.name == f"smoke_{name}" and smoke.dataset.max_new_tokens <= 16
    for key, values in {**params, **smoke_params}.items():
        if key.startswith(GROUP_KEYS):
            for value in values:
                assert (CONF / key / f"{value}.yaml").is_file(), f"{name}: {key}={value} has no config file"


def _distinct_group_overrides(hydra_compose) -> list[tuple[str, str, str]]:
    seen, out = set(), []
    for name in EXPERIMENTS:
        for variant in (name, f"smoke/{name}"):
            for key, values in sweep(hydra_compose(f"+experiment={variant}", hydra_cfg=True)).items():
                for value in values:
                    if key.startswith("experiment/") and (key, value) not in seen:
                        seen.add((key, value))
                        out.append((variant, key, value))
    return out


@pytest.mark.slow
def test_every_cell_and_method_composes(hydra_compose):
    """Each config file a sweep names composes into a resolvable config, and replayed runs have a tau."""
    combos = _distinct_group_overrides(hydra_compose)
    assert len(combos) >= 30
    for variant, key, value in combos:
        cfg = hydra_compose(f"+experiment={variant}", f"{key}={value}")
        resolved = OmegaConf.to_container(cfg, resolve=True)
        if cfg.timing.acceptance == "replay":
            assert resolved["timing"]["replay_tau"] is not None and resolved["timing"]["replay_tau"] >= 1, (key, value)
            if cfg.drafter.name == "hierspec":
                assert resolved["timing"]["replay_inner_tau"] >= 1
        if cfg.drafter.name in ("draft_model", "hierspec"):
            assert cfg.drafter.model.source, (key, value)


def test_paper_settings(hydra_compose):
    c = hydra_compose("+experiment=compat_llama3_8b", hydra_cfg=True)
    assert (c.drafter.name, c.drafter.depth, c.drafter.topk, c.dataset.name) == ("eagle", 6, 10, "mt_bench")
    assert sweep(c)["drafter.tree_size"] == ["10", "20", "30", "40", "50", "60"] and c.baseline
    assert c.runtime.temperature == 0 and c.dataset.max_new_tokens == 1024 and c.runtime.dtype == "float16"
    rot = hydra_compose("+experiment=compat_llama3_8b", "experiment/cell=l3_8b_w4a16_rot")  # optional cells
    assert rot.quant.scheme == "auto" and rot.quant.rotated and "on-W4A16-Rot" in rot.drafter.head
    qqq = hydra_compose("+experiment=compat_llama3_8b", "experiment/cell=l3_8b_w4a8_g128")
    assert (qqq.quant.scheme, qqq.quant.backend, qqq.quant.group_size) == ("w4a8", "auto", 128)
    c = hydra_compose("+experiment=compat_llama3_70b", hydra_cfg=True)
    assert sweep(c)["drafter.tree_size"] == ["24", "32", "40", "48"] and c.model.shape_only
    assert c.timing.acceptance == "replay" and c.timing.replay_tau == 4.16
    c = hydra_compose("+experiment=hierspec_70b", hydra_cfg=True)
    assert sweep(c)["experiment/method"] == ["l3_70b_ar", "l3_70b_sp6", "l3_70b_eg2_3_24", "l3_70b_hierspec"]
    assert (c.drafter.min_draft, c.drafter.inner_depth, c.drafter.inner_tree_size, c.drafter.topk) == (6, 3, 30, 10)
    assert c.dataset.name == "spec_bench" and c.quant.scheme == "w4a16" and c.drafter.quant.scheme == "w4a16"
    assert c.drafter.model.source == "llama-3-8b-instruct" and c.model.source == "llama-3-70b-instruct"
    eagle = hydra_compose("+experiment=hierspec_70b", "experiment/method=l3_70b_eg2_3_24")
    assert (eagle.drafter.depth, eagle.drafter.tree_size) == (3, 24) and eagle.timing.replay_tau <= 4  # tau <= d + 1
    ar = hydra_compose("+experiment=hierspec_70b", "experiment/method=l3_70b_ar")
    assert ar.drafter.name == "none" and ar.timing.replay_tau == 1.0
    c = hydra_compose("+experiment=eagle3", hydra_cfg=True)
    assert sweep(c)["experiment/method"] == ["l3_70b_ar", "l31_8b_eg2_6_60", "l31_8b_eg3_8_60"]
    assert (c.drafter.name, c.drafter.depth, c.drafter.topk, c.drafter.tree_size) == ("eagle3", 8, 10, 60)
    assert c.model.source == "llama-3.1-8b-instruct" and c.model.shape_only and c.timing.replay_tau == 6.13
    assert hydra_compose("+experiment=eagle3", "experiment/method=l31_8b_eg2_6_60").timing.replay_tau == 4.05
    c = hydra_compose("+experiment=eagle3_70b", hydra_cfg=True)
    assert sweep(c)["experiment/method"] == ["l3_70b_ar", "l33_70b_eg3_8_48", "l33_70b_hierspec3"]
    assert (c.drafter.name, c.drafter.first_level, c.drafter.min_draft, c.drafter.inner_depth) == (
        "hierspec", "eagle3", 6, 3)
    assert c.model.source == "llama-3.3-70b-instruct" and c.drafter.model.source == "llama-3.1-8b-instruct"
    assert c.quant.scheme == c.drafter.quant.scheme == "w4a16" and c.dataset.name == "spec_bench"
    e3 = hydra_compose("+experiment=eagle3_70b", "experiment/method=l33_70b_eg3_8_48")
    assert (e3.drafter.name, e3.drafter.tree_size, e3.timing.replay_tau) == ("eagle3", 48, 5.63)
    c = hydra_compose("+experiment=hierspec_sweep", hydra_cfg=True)
    assert sweep(c) == {"experiment/hs_d": ["d3", "d4", "d5", "d6"], "experiment/hs_d1": ["d1_3", "d1_4"]}
    d4 = hydra_compose("+experiment=hierspec_sweep", "experiment/hs_d=d4", "experiment/hs_d1=d1_4")
    assert (d4.drafter.min_draft, d4.drafter.inner_depth, d4.timing.replay_inner_tau) == (4, 4, 3.7)
    q = hydra_compose("+experiment=quasar_table1", hydra_cfg=True)
    assert (q.drafter.min_n, q.drafter.max_n, q.drafter.num_tokens, q.drafter.match) == (1, 3, 5, "earliest")
    assert q.dataset.question_end == 10 and q.runtime.max_seq_len == 2048 and q.dataset.enable_thinking
    assert sweep(q)["dataset"] == ["spec_bench", "eagle_humaneval", "eagle_gsm8k", "eagle_alpaca", "eagle_sum"]
    w8 = hydra_compose("+experiment=quasar_table1", "experiment/cell=q3_8b_w8a8")
    assert w8.quant.scheme == "w8a8_int8" and w8.model.source == "qwen3-8b"
    t = hydra_compose("+experiment=quasar_temperature", hydra_cfg=True)
    assert sweep(t)["runtime.temperature"] == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    s = hydra_compose("+experiment=quasar_sensitivity", hydra_cfg=True)
    assert sweep(s)["drafter.num_tokens"] == ["3", "5", "7", "9"] and s.dataset.name == "eagle/humaneval"
    k24 = hydra_compose("+experiment=quasar_sensitivity", "experiment/ngram_k=k2_4")
    assert (k24.drafter.min_n, k24.drafter.max_n) == (2, 4)
    p = hydra_compose("+experiment=quasar_pruning", "experiment/method=q3_prune75")
    assert p.drafter.name == "layer_skip" and p.drafter.keep_fraction == 0.75 and p.quant.scheme == "bf16"
    assert hydra_compose("+experiment=quasar_pruning", "experiment/method=q3_quasar").quant.scheme == "w8a8_int8"


def test_ar_baseline_is_shared_across_a_sweep(hydra_compose):
    """AR runs once per target: the baseline's config hash does not depend on the drafter axis of the grid."""
    from specbench.runner.run import method_configs, run_dir

    def ar_folder(*overrides):
        ar, sd = method_configs(hydra_compose("+experiment=compat_llama3_8b", *overrides))
        assert ar.drafter.name == "none" and sd.drafter.name == "eagle"
        return run_dir(ar), run_dir(sd)

    (ar10, sd10), (ar60, sd60) = ar_folder("drafter.tree_size=10"), ar_folder("drafter.tree_size=60")
    assert ar10 == ar60 and sd10 != sd60
    assert ar_folder("experiment/cell=l3_8b_w4a16")[0] != ar10  # another precision, another baseline
    methods = [method_configs(hydra_compose("+experiment=eagle_configs", f"experiment/method={m}"))
               for m in ("l3_8b_eg2_6_60", "l3_8b_sp6")]
    assert run_dir(methods[0][0]) == run_dir(methods[1][0]) and run_dir(methods[0][1]) != run_dir(methods[1][1])


def test_launcher_configs():
    """Launcher configs are plain submitit configs (the plugin is an optional extra and is not imported here)."""
    for name in ("local", "slurm"):
        data = yaml.safe_load((CONF / "hydra" / "launcher" / f"{name}.yaml").read_text())
        assert data["defaults"] == [f"submitit_{name}"]
        assert data["gpus_per_node"] == 1 and data["tasks_per_node"] == 1 and data["nodes"] == 1


# ---------------------------------------------------------------------------------------------- smoke runs

METRICS = set(generation_row(Generation(4, [1, 2], accept_lengths=[1], drafted=[0], draft_depths=[0],
                                        decode_s=1.0)))
STEP_COLUMNS = {"config_hash", "question_id", "turn", "repeat", "step"} | set(
    step_rows(Generation(4, [1, 2], accept_lengths=[1], drafted=[0], draft_depths=[0]))[0])


def check_run(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    results, steps = pd.read_parquet(folder / "results.parquet"), pd.read_parquet(folder / "steps.parquet")
    assert not results.empty and not steps.empty
    assert METRICS <= set(results.columns), METRICS - set(results.columns)
    assert STEP_COLUMNS <= set(steps.columns), STEP_COLUMNS - set(steps.columns)
    assert {"drafter", "config_hash", "acceptance_source", "weights"} <= set(results.columns)
    assert (results.tau >= 1).all() and (steps.accept_length >= 1).all()
    if results.drafter.iloc[0] == "none":
        assert (results.tau == 1.0).all() and (steps.drafted == 0).all()
    # per-step phases cover the wall-clock decode loop within 5 %
    coverage = phase_coverage(results, steps)
    assert 0.95 <= coverage <= 1.0 + 1e-6, (folder, coverage)
    # tau in the results equals the step log's mean accept length
    assert results.steps.sum() == len(steps)
    assert from_steps(steps).tau == pytest.approx(
        (results.tau * results.steps).sum() / results.steps.sum())
    assert not results.duplicated(["question_id", "turn", "repeat"]).any()
    return results, steps


SMOKE_RUNS = [  # (experiment, extra overrides): every drafter and both acceptance modes, a few grid points
    ("compat_llama3_8b", ["experiment/cell=tiny_w4a16", "drafter.tree_size=4"]),
    ("compat_llama3_70b", []),
    ("eagle_configs", ["experiment/method=tiny_sp"]),
    ("drafting_time", ["experiment/method=tiny_eg2"]),
    ("eagle3", []),
    ("eagle3_70b", []),
    ("hierspec_70b", []),
    ("hierspec_sweep", []),
    ("quasar_table1", ["runtime.temperature=1.0"]),
    ("quasar_temperature", ["experiment/cell=tiny_w8a8"]),
    ("quasar_sensitivity", ["experiment/ngram_k=k2_4"]),
    ("quasar_pruning", []),
    ("quasar_accuracy", []),
    ("specmquant_accuracy", []),
]


def test_smoke_list_covers_every_experiment():
    assert sorted(name for name, _ in SMOKE_RUNS) == EXPERIMENTS


@pytest.mark.slow
@pytest.mark.parametrize("name,extra", SMOKE_RUNS, ids=[n for n, _ in SMOKE_RUNS])
def test_smoke_variant_runs(hydra_compose, tmp_path, name, extra):
    from specbench.runner.run import run

    cfg = hydra_compose(f"+experiment=smoke/{name}", f"output.root={tmp_path}", *extra)
    folders = run(cfg)
    assert len(folders) == len({f.name for f in folders})  # one config-hash folder per method
    assert all(f.parent == tmp_path / f"smoke_{name}" for f in folders)
    drafters = []
    for folder in folders:
        results, _ = check_run(folder)
        drafters.append(results.drafter.iloc[0])
        source = "replay" if cfg.timing.acceptance == "replay" else "real"
        assert set(results.acceptance_source) == {source}
        assert set(results.weights) == {"shape_only" if cfg.model.shape_only else "real"}
    expected = (["none"] if cfg.baseline and cfg.drafter.name != "none" else []) + [cfg.drafter.name]
    assert drafters == expected


@pytest.mark.slow
def test_resumed_run_writes_no_duplicates(hydra_compose, tmp_path):
    from specbench.runner.run import run

    cfg = hydra_compose("+experiment=smoke/quasar_table1", f"output.root={tmp_path}")
    first = run(cfg)
    before = {f: (pd.read_parquet(f / "results.parquet"), pd.read_parquet(f / "steps.parquet")) for f in first}
    second = run(cfg)
    assert second == first
    for folder in second:
        results, steps = check_run(folder)
        old_results, old_steps = before[folder]
        assert len(results) == len(old_results) and len(steps) == len(old_steps)
        pd.testing.assert_frame_equal(results, old_results)


@pytest.mark.slow
def test_an_unfinished_run_left_by_other_code_is_measured_again_whole(hydra_compose, tmp_path):
    """A code change between an interrupted run and its resumption: the kept rows would mix two versions (seen on
    the H200: rows of a broken random head beside rows of the fixed one), so the rerun measures them again."""
    from specbench.runner.environment import source_hash
    from specbench.runner.run import run

    cfg = hydra_compose("+experiment=smoke/quasar_table1", f"output.root={tmp_path}")
    folders = run(cfg)
    for folder in folders:  # interrupted after its first question, by a run of other code
        results = pd.read_parquet(folder / "results.parquet")
        first = results[results.question_id == results.question_id.iloc[0]]
        first.assign(**{"env.source_hash": "other"}).to_parquet(folder / "results.parquet")
    assert run(cfg) == folders
    for folder in folders:
        results, _ = check_run(folder)
        assert set(results["env.source_hash"]) == {source_hash()}
        assert results.question_id.nunique() > 1


def test_a_remeasured_question_replaces_its_rows(tmp_path):
    """output.resume=false measures again: the store keeps one set of rows per (question, repeat)."""
    from specbench.runner.store import ResultStore

    store = ResultStore(tmp_path)
    store.add([{"question_id": 1, "repeat": 0, "turn": 0, "tok_s": 1.0}],
              [{"question_id": 1, "repeat": 0, "step": s, "verify_ms": 1.0} for s in range(3)])
    store.add([{"question_id": 2, "repeat": 0, "turn": 0, "tok_s": 2.0}], [{"question_id": 2, "repeat": 0, "step": 0}])
    store.add([{"question_id": 1, "repeat": 0, "turn": 0, "tok_s": 3.0}], [{"question_id": 1, "repeat": 0, "step": 0}])
    reread = ResultStore(tmp_path)
    assert sorted(reread.results.tok_s) == [2.0, 3.0]
    assert len(reread.steps[reread.steps.question_id == 1]) == 1 and len(reread.steps) == 2
    assert reread.is_done(1, 0) and reread.is_done(2, 0) and not reread.is_done(1, 1)


def test_out_of_memory_says_what_to_change(hydra_compose, monkeypatch):
    import specbench.runner.run as run_module

    def no_room(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(run_module.Engine, "model", no_room)
    cfg = hydra_compose("+experiment=smoke/hierspec_70b")
    with pytest.raises(run_module.RunOutOfMemory) as info:
        run_module.run(cfg)
    message = str(info.value)
    assert "runtime.max_seq_len" in message and "quant=w4a16" in message and "Tried to allocate 2.00 GiB" in message
