"""Figures: distinct legend entries, titles of at most two lines, the same bytes from the same results; run labels
from the settings that vary, not hashes."""

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from specbench.analysis import Pool, cell_stats, load_probes, load_results
from specbench.analysis.labels import run_labels
from specbench.analysis.plots import STYLE, eq1, k_gamma, save, scheme_label, setting, speedup_bars, temperature, \
    tree_sweep

SMOKE = Path(__file__).resolve().parents[1] / "results" / "smoke"
pytestmark = pytest.mark.slow  # figure regeneration: ~20 s on two cores


@pytest.fixture(scope="module")
def stats():
    pool = Pool(load_results(SMOKE, steps=True), load_probes(SMOKE))
    frame = cell_stats(pool.data.drop(columns="_run"), probes=pool.probes, n_boot=10)
    return frame.assign(setting=frame.apply(setting, axis=1), scheme_label=frame.apply(scheme_label, axis=1))


@pytest.mark.parametrize("make", [speedup_bars, tree_sweep, temperature, k_gamma, eq1])
def test_figures_are_distinct_short_titled_and_reproducible(make, stats, tmp_path):
    with plt.rc_context(STYLE):
        fig = make(stats)
        assert len(fig._suptitle.get_text().splitlines()) <= 2
        for ax in fig.axes:
            title = max((ax.get_title(loc) for loc in ("left", "center", "right")), key=len)
            assert title == "" or len(title) > 2  # no panel titled "L"
            legend = ax.get_legend()
            if legend is None:
                continue
            looks = [(str(h.get_color()), h.get_marker(), h.get_linestyle(), str(h.get_markerfacecolor()))
                     for h in legend.legend_handles if hasattr(h, "get_marker")]
            assert len(looks) == len(set(looks)), [t.get_text() for t in legend.get_texts()]
        (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
        first = save(fig, tmp_path / "a", "f")
        second = save(make(stats), tmp_path / "b", "f")
    for one, two in zip(first, second):
        assert one.read_bytes() == two.read_bytes(), one.name
    assert b"Matplotlib" not in first[0].read_bytes()  # no library version in the PNG


def test_run_labels_name_the_varying_settings(stats):
    ngram = stats[(stats.drafter == "ngram") & (stats["runtime.temperature"] == 0) & (stats["quant.scheme"] == "none")
                  & (stats["dataset.max_new_tokens"] == 48)]
    labels = run_labels(ngram)
    assert labels.nunique() == len(ngram) == 5  # five n-gram configurations, five labels
    assert "ngram min_n=1 max_n=3 num_tokens=7" in set(labels.str.replace(r" ?timing.repeats=\d", "", regex=True))
    assert not labels.str.contains(r"[0-9a-f]{12}").any()


def test_the_kernel_figure_draws_each_line_from_its_newest_benchmark_file(tmp_path):
    from specbench.analysis.plots import measured_when, newest_lines

    def rows(path, data, backend, ms):
        return [{"device": "GPU", "model": "m", "scheme": "w4a16", "group_size": 128, "backend": backend, "M": m,
                 "stack_ms": ms, "measured": measured_when(path, data)} for m in (1, 16)]

    old, new = tmp_path / "2026-11-30" / "quant_linear.json", tmp_path / "2026-12-01" / "quant_linear.json"
    frame = pd.DataFrame(rows(old, {}, "triton", 20.0) + rows(old, {}, "torch", 18.0)
                         + rows(new, {"date": "2026-12-01T09:00:00Z"}, "triton", 17.0))
    kept = newest_lines(frame)
    assert sorted(kept.stack_ms) == [17.0, 17.0, 18.0, 18.0]  # triton from the newer file only; torch kept


def test_the_kernel_figure_leaves_cpu_files_out_when_a_gpu_file_exists(tmp_path):
    from specbench.analysis.plots import kernel_backends

    def bench(folder, device):
        path = tmp_path / folder / "quant_linear.json"
        path.parent.mkdir()
        rows = [{"model": "m", "scheme": "w4a16", "group_size": 128, "backend": "triton", "M": m, "stack_ms": 1.0 + m,
                 "ratio_to_M1": (1.0 + m) / 2} for m in (1, 16)]
        path.write_text(json.dumps({"device": device, "rows": rows}))
        return path

    def panels(files):
        fig = kernel_backends(files)
        plt.close(fig)
        return sorted(ax.get_title() for ax in fig.axes if ax.get_title())

    cpu, gpu = bench("smoke", "cpu"), bench("h200", "NVIDIA H200")
    assert panels([cpu, gpu]) == ["m · NVIDIA H200"]
    assert panels([cpu]) == ["m · cpu"]  # a fresh clone's smoke run still draws


def test_compiled_runs_get_panels_of_their_own():
    import numpy as np

    run = {"env.gpu": "NVIDIA H200", "dataset.max_new_tokens": 128, "runtime.temperature": 0.0, "model.source": "m",
           "dataset.name": "synthetic", "weights": "shape_only", "acceptance_source": "replay"}
    plain = {setting(pd.Series({**run, "engine.compile": value})) for value in (False, np.False_, None, float("nan"))}
    compiled = {setting(pd.Series({**run, "engine.compile": value})) for value in (True, np.True_)}
    assert len(plain) == len(compiled) == 1 and plain != compiled and "compiled" in compiled.pop()
    assert setting(pd.Series(run)) in plain  # rows written before engine.compile was recorded
    rows = load_results(SMOKE)
    first = rows.config_hash.iloc[0]
    stats = cell_stats(rows.assign(**{"engine.compile": rows.config_hash.eq(first)}), n_boot=5)
    assert stats.set_index("config_hash")["engine.compile"].to_dict()[first]  # the run statistics carry it
