"""Loading, per-run statistics and Eq. (1) on the committed smoke results (results/smoke)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specbench.analysis import Estimate, Pool, cell_stats, evaluate, load_probes, load_results
from specbench.analysis.pool import IDENTITY
from specbench.runner.summary import summarize

SMOKE = Path(__file__).resolve().parents[1] / "results" / "smoke"
DEFAULT = {"runtime.temperature": 0.0, "quant.scheme": "none", "dataset.max_new_tokens": 48, "timing.repeats": 1}


@pytest.fixture(scope="module")
def data():
    return load_results(SMOKE, steps=True)


@pytest.fixture(scope="module")
def pool(data):
    return Pool(data, load_probes(SMOKE))


def test_filters_push_down_and_match_patterns(data):
    ngram = load_results(SMOKE, filters={"drafter": "ngram", "runtime.temperature": 0.0}, columns=["drafter", "tau"])
    assert list(ngram.columns) == ["drafter", "tau"] and set(ngram.drafter) == {"ngram"}
    assert len(ngram) == ((data.drafter == "ngram") & (data["runtime.temperature"] == 0)).sum()
    several = load_results(SMOKE, filters={"drafter": ["none", "eagle"], "model.source": "tiny-*"})
    assert set(several.drafter) == {"none", "eagle"}
    assert load_results(SMOKE, filters={"drafter.tree_size": None, "drafter": "eagle"}).empty  # eagle has a tree
    assert load_results(SMOKE, filters={"no.such.column": 1}).empty
    assert load_results(str(SMOKE / "*" / "*" / "results.parquet")).shape == data.drop(columns="draft_depth_sum").shape


def test_runs_whose_question_ids_differ_in_type_load_together(tmp_path):
    """Spec-Bench ids are integers, task-shaped synthetic ids strings: both load, as strings, with a filter."""
    for name, ids in (("a", [81, 82]), ("b", ["qa-0", "qa-1"])):
        (tmp_path / name).mkdir()
        pd.DataFrame({"config_hash": name, "env.gpu": "NVIDIA H200", "output.name": "x", "question_id": ids,
                      "drafter": "none", "tok_s": [1.0, 2.0]}).to_parquet(
            tmp_path / name / "results.parquet")
    both = load_results(tmp_path, filters={"drafter": "none"})
    assert sorted(both.question_id) == ["81", "82", "qa-0", "qa-1"] and both.tok_s.sum() == 6.0


def test_steps_give_draft_depths(data):
    eagle = data[data.drafter == "eagle"]
    assert (eagle.draft_depth_sum > 0).all()
    assert (data[data.drafter == "none"].draft_depth_sum == 0).all()


def test_ar_is_its_own_baseline(pool):
    ar = pool.select([(k, v) for k, v in DEFAULT.items()] + [("drafter", "none")])
    speedup = evaluate("speedup", ar, pool, n_boot=200)
    assert (speedup.value, speedup.lo, speedup.hi) == (1.0, 1.0, 1.0)
    assert evaluate("tau", ar, pool).value == 1.0


def test_speedup_agrees_with_the_runner_summary(pool, data):
    gamma, min_n = data["drafter.num_tokens"], data["drafter.min_n"]
    rows = data[(data["output.name"] == "default") & (gamma.isin([5, 6]) | gamma.isna()) & (min_n.eq(1) | min_n.isna())]
    for key, value in DEFAULT.items():
        rows = rows[rows[key] == value]
    assert sorted(rows.drafter.unique()) == ["draft_model", "eagle", "ngram", "none"]  # the default job's four runs
    folders = sorted({p.parent for p in SMOKE.rglob("results.parquet")
                      if pd.read_parquet(p, columns=["config_hash"]).config_hash.iloc[0] in set(rows.config_hash)})
    summary = summarize(folders).set_index("drafter")
    for drafter in ("ngram", "draft_model", "eagle"):
        mine = pool.select([(k, v) for k, v in DEFAULT.items()] + [("drafter", drafter), ("output.name", "default"),
                                                                     ("drafter.num_tokens", [5, 6, None])])
        assert evaluate("speedup", mine, pool, n_boot=50).value == pytest.approx(summary.loc[drafter, "speedup"])
        assert evaluate("tok_s", mine, pool, n_boot=50).value == pytest.approx(summary.loc[drafter, "tok_s"])


def test_two_denominators_for_a_quantized_run(pool):
    rows = pool.select([("drafter", "ngram"), ("quant.scheme", "w8a8_int8"), ("drafter.num_tokens", 5)])
    same, sixteen = (evaluate("speedup", rows, pool, baseline=b, n_boot=100) for b in ("same_precision", "16bit"))
    ar8_rows = pool.select([("drafter", "none"), ("quant.scheme", "w8a8_int8")])
    assert "newest of 2 matching runs" in evaluate("tok_s", ar8_rows, pool, n_boot=10).note  # 48- and 32-token jobs
    ar8 = evaluate("tok_s", ar8_rows[ar8_rows["dataset.max_new_tokens"] == 48], pool, n_boot=10)
    ar16 = evaluate("tok_s", pool.select([(k, v) for k, v in DEFAULT.items()] + [("drafter", "none")]), pool, n_boot=10)
    assert sixteen.value / same.value == pytest.approx(ar8.value / ar16.value)


@pytest.mark.slow  # bootstrap statistics of every smoke configuration: ~8 s
def test_cell_stats_reports_every_run(data):
    stats = cell_stats(data, n_boot=100)
    assert len(stats) == data.groupby(IDENTITY, dropna=False).ngroups
    ar = stats[stats.drafter == "none"]
    assert np.allclose(ar.speedup, 1) and np.allclose(ar.tau, 1)
    sd = stats[stats.drafter != "none"]
    assert (sd.speedup_lo <= sd.speedup).all() and (sd.speedup <= sd.speedup_hi).all()
    assert sd.predicted_speedup.notna().all()


def _probes(tt: float, tv: float, n: int, mask: str, td: float | None = None, rows: int = 10) -> pd.DataFrame:
    base = {"model": "tiny-target", "quant": "fp32", "backend": "dense", "gpu": "cpu", "context": 64, "replays": 100}
    frame = [{**base, "probe": "T_t", "n": 1, "mask": "causal", "median_ms": tt, "p10_ms": tt * .9, "p90_ms": tt * 1.1,
              "component": "target"},
             {**base, "probe": "T_v", "n": n, "mask": mask, "median_ms": tv, "p10_ms": tv, "p90_ms": tv,
              "component": "target"}]
    if td is not None:
        frame.append({**base, "model": "eagle_head(tiny-target)", "probe": "T_d", "n": rows, "mask": "tree",
                      "median_ms": td, "p10_ms": td, "p90_ms": td, "component": "eagle_head"})
    return pd.DataFrame(frame)


def test_eq1_with_probes_and_without(data):
    rows = data[(data.drafter == "eagle") & (data["drafter.tree_size"] == 60)]
    for key, value in DEFAULT.items():
        rows = rows[rows[key] == value]
    tau = evaluate("tau", rows, Pool(data), n_boot=100)
    with_probes = Pool(data, _probes(tt=2.0, tv=3.0, n=60, mask="tree", td=0.5))
    predicted = evaluate("predicted_speedup", rows, with_probes, n_boot=100)
    assert predicted.value == pytest.approx(tau.value / (6 * 0.5 / 2.0 + 3.0 / 2.0))  # d = 6 passes
    assert "probes" in predicted.note
    ratio = evaluate("tv_over_tt", rows, with_probes)
    assert ratio.value == pytest.approx(1.5) and ratio.ci == "probe p10-p90" and ratio.lo < 1.5 < ratio.hi
    wrong_n = Pool(data, _probes(tt=2.0, tv=3.0, n=30, mask="tree", td=0.5))  # no T_v(60): fall back, say so
    fallback = evaluate("predicted_speedup", rows, wrong_n, n_boot=100)
    assert isinstance(fallback, Estimate) and "no probe for T_v(n=60)" in fallback.note
    assert "effective" in fallback.note
    speed = evaluate("tok_s_eq1", rows, with_probes, n_boot=100)
    assert speed.value == pytest.approx(1000 * tau.value / (6 * 0.5 + 3.0)) and "probes" in speed.note
    steps = evaluate("tok_s_eq1", rows, Pool(data), n_boot=100)  # no probes: the runs' own phase times
    per_step = (rows.draft_ms.sum() + rows.verify_ms.sum()) / rows.steps.sum()
    assert steps.value == pytest.approx(1000 * tau.value / per_step) and "effective" in steps.note
    assert steps.lo < steps.value < steps.hi


def test_speed_cells_show_the_prediction_beside_the_measurement():
    from specbench.analysis.tables import ours

    cell = pd.Series({"kind": "tok_s", "value": 150.0, "lo": 148.0, "hi": 152.0, "predicted": 158.14,
                      "predicted_source": "probes", "h200": 140.0, "h200_lo": 139.0, "h200_hi": 141.0,
                      "h200_predicted": float("nan"), "h200_predicted_source": ""})
    assert ours(cell) == "150.0 ± 2.0 (Eq. (1) 158.1 from probes)"
    assert ours(cell, "h200") == "140.0 ± 1.0"  # no prediction: nothing added
