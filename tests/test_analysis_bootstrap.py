"""The bootstrap against known answers, and paired resampling of ratios (synthetic rows, no files)."""

import numpy as np
import pandas as pd
import pytest

from specbench.analysis.bootstrap import bootstrap, question_weights, unit_weights
from specbench.analysis.cells import evaluate
from specbench.analysis.pool import Pool


def test_constant_column_has_zero_width():
    est = bootstrap([3.5] * 12, n_boot=500)
    assert est.value == est.lo == est.hi == 3.5


def test_fixed_resamples_give_hand_computed_interval():
    # resamples of [1, 2, 3] as draw counts: {1, 1, 3} -> 5/3 and {2, 2, 2} -> 2
    est = bootstrap([1.0, 2.0, 3.0], weights=[[2, 0, 1], [0, 3, 0]], level=0.95)
    assert est.value == pytest.approx(2.0)
    # percentiles of two values interpolate linearly: 2.5% and 97.5% of the way from 5/3 to 2
    assert est.lo == pytest.approx(5 / 3 + 0.025 / 3)
    assert est.hi == pytest.approx(2 - 0.025 / 3)


def test_two_point_sample_matches_its_exact_bootstrap_distribution():
    # the mean of a resample of [0, 1] is 0, 1/2, 1 with probability 1/4, 1/2, 1/4
    weights = question_weights(np.zeros(2), 8000, np.random.default_rng(1))[1:]
    means = weights @ np.array([0.0, 1.0]) / 2
    assert np.mean(means == 0) == pytest.approx(0.25, abs=0.02)
    assert np.mean(means == 0.5) == pytest.approx(0.5, abs=0.02)
    est = bootstrap([0.0, 1.0], n_boot=8000, seed=1)
    assert (est.lo, est.hi) == (0.0, 1.0)


def test_bootstrap_variance_of_the_mean_is_plugin_variance_over_n():
    x = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    weights = question_weights(np.zeros(len(x)), 20000, np.random.default_rng(0))[1:]
    means = weights @ x / len(x)
    assert means.std() == pytest.approx(np.sqrt(x.var() / len(x)), rel=0.03)


def test_resampling_is_stratified_and_repeats_are_redrawn():
    rng = np.random.default_rng(0)
    qw = question_weights(["a"] * 3 + ["b"] * 5, 200, rng)
    assert (qw[0] == 1).all()
    assert (qw[1:, :3].sum(axis=1) == 3).all() and (qw[1:, 3:].sum(axis=1) == 5).all()
    unit_q = np.repeat(np.arange(8), 2)  # two repeats per question
    uw = unit_weights(qw, unit_q, rng)
    assert np.allclose(uw[0], 0.5)
    assert np.allclose(uw.reshape(len(uw), 8, 2).sum(axis=2), qw)  # a question's repeats sum to its draw count
    assert (uw[1:].reshape(200, 8, 2)[:, :, 0] != 0.5).any()  # repeats are resampled, not averaged


def test_same_seed_same_interval():
    x = np.random.default_rng(3).normal(size=30)
    assert bootstrap(x, seed=7) == bootstrap(x, seed=7)
    assert bootstrap(x, seed=7) != bootstrap(x, seed=8)


def _run(drafter: str, speeds: np.ndarray, tau_steps: int = 1, dataset: str = "d") -> pd.DataFrame:
    tokens = np.full(len(speeds), 100)
    return pd.DataFrame({
        "config_hash": f"h-{drafter}-{dataset}", "env.gpu": None, "model.source": "m", "quant.scheme": "none",
        "dataset.name": dataset, "runtime.temperature": 0.0, "drafter": drafter, "question_id": np.arange(len(speeds)),
        "repeat": 0, "turn": 0, "new_tokens": tokens, "decode_s": tokens / speeds, "total_s": tokens / speeds + 0.1,
        "steps": tokens // tau_steps, "accepted_tokens": tokens - tokens // tau_steps, "drafted_tokens": tokens})


def test_paired_ratio_cancels_question_difficulty():
    speeds = np.random.default_rng(0).uniform(10, 100, size=40)  # questions differ a lot in speed
    pool = Pool(pd.concat([_run("none", speeds), _run("ngram", 2 * speeds, tau_steps=2)], ignore_index=True))
    method = pool.select([("drafter", "ngram")])
    tok_s = evaluate("tok_s", method, pool, n_boot=500)
    speedup = evaluate("speedup", method, pool, n_boot=500)
    assert tok_s.hi - tok_s.lo > 5  # the speed itself is uncertain...
    assert speedup.value == pytest.approx(2.0) and speedup.hi - speedup.lo == pytest.approx(0, abs=1e-12)  # ...not
    assert evaluate("tau", method, pool).value == pytest.approx(2.0)


def test_speedup_pairs_only_shared_questions():
    speeds = np.linspace(10, 50, 10)
    base = _run("none", speeds)[:5]  # the baseline measured half the questions (Quasar's Qwen3 logs)
    pool = Pool(pd.concat([base, _run("ngram", 3 * speeds)], ignore_index=True))
    est = evaluate("speedup", pool.select([("drafter", "ngram")]), pool, n_boot=200)
    assert est.n == 5 and est.value == pytest.approx(3.0)
    assert "5 without baseline" in est.note


def test_over_datasets_averages_per_dataset_values():
    # dataset a: 2x on 4 questions, dataset b: 4x on 6 questions
    parts = [_run("none", np.full(4, 10.0), dataset="a"), _run("ngram", np.full(4, 20.0), dataset="a"),
             _run("none", np.full(6, 10.0), dataset="b"), _run("ngram", np.full(6, 40.0), dataset="b")]
    pool = Pool(pd.concat(parts, ignore_index=True))
    rows = pool.select([("drafter", "ngram")])
    assert evaluate("speedup", rows, pool, over="dataset.name", n_boot=50).value == pytest.approx(3.0)  # (2 + 4) / 2
    assert evaluate("speedup", rows, pool, n_boot=50).value == pytest.approx(3.2)  # pooled: (4*20 + 6*40) / 10 / 10
