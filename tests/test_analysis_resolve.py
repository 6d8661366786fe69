"""Several runs of one configuration (docs/analysis.md, "Several runs"): the newest wins, older ones are listed,
rows are never pooled across runs."""

from pathlib import Path

import pandas as pd
import pytest

from specbench.analysis import Pool, cell_stats, evaluate, load_results
from specbench.analysis.tables import superseded_markdown

SMOKE = Path(__file__).resolve().parents[1] / "results" / "smoke"
CELL = [("drafter", "ngram"), ("quant.scheme", "none"), ("runtime.temperature", 0.0), ("drafter.num_tokens", 5),
        ("drafter.min_n", 1), ("dataset.max_new_tokens", 48), ("timing.repeats", 1), ("output.name", "default")]


@pytest.fixture(scope="module")
def smoke():
    return load_results(SMOKE, steps=True)


def rerun(rows: pd.DataFrame, speed: float, date: str, sha: str) -> pd.DataFrame:
    """The same configuration measured again by newer code: another hash, a new setting, ``speed`` x faster."""
    return rows.assign(config_hash=rows.config_hash + sha[0], decode_s=rows.decode_s / speed, **{
        "env.date": date, "env.git_sha": sha, "timing.new_setting": True, "drafter_prefill_ms": rows.drafter_prefill_ms * speed})


@pytest.mark.slow  # four bootstrapped evaluations over the smoke results: ~10 s
def test_newest_run_of_a_configuration_wins(smoke):
    old = Pool(smoke).select(CELL)
    assert old.config_hash.nunique() == 1
    before = evaluate("tok_s", old, Pool(smoke), n_boot=20)
    newer = rerun(old, 2.0, "2027-01-01T00:00:00+00:00", "b" * 40)
    pool = Pool(pd.concat([smoke, newer, rerun(old, 3.0, "2026-12-01T00:00:00+00:00", "c" * 40)],
                          ignore_index=True))
    rows = pool.select(CELL)
    assert set(rows.config_hash) == {newer.config_hash.iloc[0]}  # older runs left out of the pool, never mixed
    found = evaluate("tok_s", rows, pool, n_boot=20)
    assert found.value == pytest.approx(2 * before.value)
    assert "newest of 3 runs" in found.note and old.config_hash.iloc[0] in found.note
    speedup = evaluate("speedup", rows, pool, n_boot=20)  # against the AR run that was measured once
    assert speedup.value == pytest.approx(2 * evaluate("speedup", old, Pool(smoke), n_boot=20).value)
    stats = cell_stats(pd.concat([smoke, newer], ignore_index=True), n_boot=10)
    assert len(stats) == smoke.config_hash.nunique()  # one row per configuration: plots draw it once
    other = Pool(pd.concat([smoke, newer.assign(**{"output.name": "another_experiment"})], ignore_index=True))
    assert old.config_hash.iloc[0] in set(other.select(CELL).config_hash)  # another experiment's run is its own
    compiled = Pool(pd.concat([smoke.assign(**{"engine.compile": False}), newer.assign(**{"engine.compile": True})],
                              ignore_index=True))  # a compiled run measures something else: it supersedes nothing
    assert {old.config_hash.iloc[0], newer.config_hash.iloc[0]} <= {k.split("@")[0] for k in compiled.kept}
    listing = superseded_markdown(pool.resolution)
    assert listing.count(f"| {old.config_hash.iloc[0]} (") == 1 and "c (2026-12-01" in listing


def test_a_cell_matching_different_configurations_shows_the_newest(smoke):
    pool = Pool(smoke)
    rows = pool.select([("drafter", "none"), ("quant.scheme", "w8a8_int8")])  # 48- and 32-token jobs
    found = evaluate("tok_s", rows, pool, n_boot=10)
    newest = rows.loc[rows["env.date"].idxmax()]
    alone = evaluate("tok_s", rows[rows.config_hash == newest.config_hash], pool, n_boot=10)
    assert found.value == alone.value
    assert "newest of 2 matching runs (they differ in dataset" in found.note


def test_the_same_run_folder_in_two_places_reads_the_newest_copy(smoke, tmp_path):
    folder = next(SMOKE.glob("default/*/results.parquet")).parent
    frame = pd.read_parquet(folder / "results.parquet")
    for name, date, speed in (("old", "2026-01-01T00:00:00+00:00", 1.0), ("new", "2026-06-01T00:00:00+00:00", 4.0)):
        (tmp_path / name / "default" / folder.name).mkdir(parents=True)
        frame.assign(**{"env.date": date}, decode_s=frame.decode_s / speed).to_parquet(
            tmp_path / name / "default" / folder.name / "results.parquet")
    loaded = load_results(tmp_path)
    run = frame.config_hash.iloc[0]
    same = loaded[loaded.config_hash == run]
    assert len(same) == len(frame) and (same["env.date"] == "2026-06-01T00:00:00+00:00").all()
    # the older copy is its own run (a baseline candidate), never pooled with the newest
    older = loaded[loaded.config_hash != run]
    assert len(older) == len(frame) and set(older.config_hash) == {f"{run}~2026-01-01T00:00"}


def test_a_run_not_measured_again_keeps_the_baseline_of_its_own_code(smoke, tmp_path):
    """A rerun folder that measured the AR baseline again (new kernels, 2x faster) but not the method: the method's
    speedup stays the one against the AR measured with its own code, not against the rerun's AR."""
    pool = Pool(smoke)
    method = pool.select(CELL)
    ar_run = pool.baseline(method.iloc[0], {"drafter": "none"})
    ar = pool.rows(ar_run).drop(columns="_run")
    before = evaluate("speedup", method, pool, n_boot=10).value
    for name, rows in (("old/a", method.drop(columns="_run")), ("old/b", ar)):
        (tmp_path / name).mkdir(parents=True)
        rows.assign(**{"env.date": "2026-01-01T00:00:00+00:00", "env.git_sha": "old"}).to_parquet(
            tmp_path / name / "results.parquet")
    (tmp_path / "new/b").mkdir(parents=True)
    ar.assign(**{"env.date": "2026-06-01T00:00:00+00:00", "env.git_sha": "new"}, decode_s=ar.decode_s / 2).to_parquet(
        tmp_path / "new/b" / "results.parquet")
    mixed = Pool(load_results(tmp_path))
    rows = mixed.select(CELL)
    assert evaluate("speedup", rows, mixed, n_boot=10).value == pytest.approx(before)
    rerun_ar = mixed.select([("drafter", "none"), ("config_hash", ar.config_hash.iloc[0])])
    assert (rerun_ar["env.git_sha"] == "new").all()  # the AR cell itself shows the rerun
