"""Manifests cover every cell; `make tables` / `make plots` regenerate every file offline; the notebook runs."""

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.analysis.pool import Pool
from specbench.analysis.load import load_probes, load_results
from specbench.analysis.manifest import LABELS, PaperValue, cells, fill, load_all

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "results" / "smoke"
MANIFESTS = load_all(ROOT / "experiments")
FIGURES = ["speedup_bars", "tree_sweep", "temperature", "k_gamma", "eq1", "kernel_backends"]


@pytest.fixture(scope="module")
def filled():
    pool = Pool(load_results(SMOKE, steps=True), load_probes(SMOKE))
    return {m.id: fill(m, pool, n_boot=50) for m in MANIFESTS}


def test_paper_values_parse():
    assert PaperValue.parse("1.04 [P]") == PaperValue("1.04", "P", 1.04, False)
    assert PaperValue.parse("~1.8 [P]").approx and PaperValue.parse("~1.8 [P]").value == 1.8
    assert PaperValue.parse("2.4% [P]").value == 2.4
    blank = PaperValue.parse("not published [?]")
    assert blank.value is None and not blank.published and blank.label == "?"


def test_manifests_name_their_runs_and_label_every_paper_value():
    ids = {m.id for m in MANIFESTS}
    assert {"quasar", "specmquant"} <= ids
    tables = {(m.id, t["id"]) for m in MANIFESTS for t in m.tables}
    assert {("quasar", f"table{i}") for i in range(1, 6)} <= tables
    assert {("specmquant", t) for t in ("figure1a", "figure1b", "figure1c", "figure2", "figure3", "figure4_8b",
                                        "figure5", "table2", "table3", "sweep_d_d1")} <= tables
    unnamed = {(m.id, t["id"]) for m in MANIFESTS for t in m.tables if t["experiment"] is None and m.id != "smoke"}
    assert unnamed == set()  # every table names the experiment that fills it
    for manifest in MANIFESTS:
        for table in manifest.tables:
            assert "experiment" in table and table["title"]
            if table["experiment"] is not None:
                assert table["experiment"].startswith("+experiment=")
                name = table["experiment"].removeprefix("+experiment=")
                assert (ROOT / "conf" / "experiment" / f"{name}.yaml").exists(), name  # the experiment exists
        for cell in cells(manifest):
            assert cell.paper.text
            if manifest.id != "smoke":
                assert cell.paper.label in LABELS, cell.key


def test_known_paper_numbers_are_in_the_manifests():
    by_key = {(m.id, *c.key): c.paper for m in MANIFESTS for c in cells(m)}
    assert by_key["specmquant", "table2", "hierspec", "average", "tok_s"].value == 98.19
    assert by_key["specmquant", "table3", "hierspec", "average", "prefill_ms"].value == 76.4
    assert by_key["specmquant", "table3", "eagle", "average", "prefill_ms"].value == 6.4
    assert by_key["specmquant", "eagle3", "hierspec3", "average", "speedup"].value == 2.84
    assert by_key["specmquant", "eagle3_8b", "eagle3", "mt_bench", "tau"].value == 6.13
    assert by_key["quasar", "table1", "t0_quasar", "humaneval", "speed"].value == 1.22
    assert by_key["quasar", "table3", "k24_quasar", "g5", "speed"].text == "not published"


@pytest.mark.slow
def test_every_cell_is_filled_or_says_why_not(filled):
    for frame in filled.values():
        assert set(frame.status) <= {"filled", "not run"}
        done = frame[frame.status == "filled"]
        assert done.value.map(math.isfinite).all() and (done.lo <= done.value + 1e-12).all()
        missing = frame[frame.status == "not run"]
        assert missing.note.str.len().gt(0).all()
        assert frame.paper.str.len().gt(0).all()
    smoke = filled["smoke"]
    assert (smoke.status == "filled").sum() >= 0.7 * len(smoke)  # the smoke runs fill the smoke manifest
    assert (filled["quasar"].status == "not run").all()  # the tiny model fills no paper cell


def _tables(text: str) -> list[list[str]]:
    blocks, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            blocks.append(block)
            block = []
    return blocks


def _cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line)) - 2


@pytest.mark.slow
def test_make_tables_writes_parseable_markdown_and_latex(tmp_path):
    out = tmp_path / "tables"
    subprocess.run(["make", "-s", "tables", f"PY={sys.executable}", f"TABLES_OUT={out}", "N_BOOT=100"], cwd=ROOT,
                   check=True, capture_output=True)  # from results/, as on a fresh clone
    for manifest in MANIFESTS:
        for table in manifest.tables:
            md = (out / f"{manifest.id}_{table['id']}.md").read_text()
            tex = (out / f"{manifest.id}_{table['id']}.tex").read_text()
            assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") >= 1
            blocks = _tables(md)
            assert len(blocks) >= 2
            for block in blocks:
                width = _cells(block[0])
                assert re.fullmatch(r"\|( --- \|)+", block[1]) and _cells(block[1]) == width
                assert all(_cells(line) == width for line in block), block[0]
                assert all(c.strip() for line in block[2:] for c in re.split(r"(?<!\\)\|", line)[1:-1])  # no blanks
    assert "not run" in (out / "quasar_table1.md").read_text()
    assert (out / "runs.md").exists() and (out / "README.md").exists()


@pytest.mark.slow
def test_make_plots_writes_every_figure(tmp_path):
    out = tmp_path / "figures"
    subprocess.run(["make", "-s", "plots", f"PY={sys.executable}", f"FIGURES_OUT={out}", "N_BOOT=100"], cwd=ROOT,
                   check=True, capture_output=True)
    for name in FIGURES:
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert (out / f"{name}.pdf").read_bytes()[:4] == b"%PDF"


@pytest.mark.slow
def test_plots_say_when_there_is_no_data(tmp_path):
    from specbench.analysis.__main__ import main

    written = main(["plots", "--results", str(tmp_path), "--out", str(tmp_path / "f"), "--n-boot", "10"])
    assert sorted(p.name for p in written) == sorted(f"{n}.{e}" for n in FIGURES for e in ("png", "pdf"))


@pytest.mark.slow
def test_notebook_executes(monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this checkout's specbench

    nb = nbformat.read(ROOT / "notebooks" / "explore.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
                   ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("Estimate(" in str(o.get("data", {}).get("text/plain", "")) for o in outputs)
