"""The quantized-linear benchmark runs end to end on CPU in --smoke mode and writes its tables; its Markdown labels."""

from __future__ import annotations

import json

import pytest

from benchmarks.bench_quant_linear import VARIANTS, main, markdown


def test_markdown_names_a_sibling_gpus_table_and_drops_the_other_notes():
    row = {"model": "m", "scheme": "w4a16", "group_size": 128, "backend": "triton", "kernel": "k", "M": 1,
           "stack_ms": 1.0, "ratio_to_M1": 1.0}
    result = {"Ms": [1], "device": "NVIDIA H100 80GB HBM3", "copy_bandwidth_Bps": 3e12, "agreement": [],
              "skipped": [], "rows": [{**row, "autotune": "table h200 (for h100)"},
                                      {**row, "model": "z", "autotune": "table h200 (for h100) (zero points)"},
                                      {**row, "model": "h", "autotune": "heuristic (no table entry)"}]}
    lines = markdown(result).splitlines()
    assert "| m | w4a16 g128 | triton | k | table h200 (for h100) | 1.000 |  | - |" in lines
    assert "| z | w4a16 g128 | triton | k | table h200 (for h100) | 1.000 |  | - |" in lines
    assert "| h | w4a16 g128 | triton | k | heuristic | 1.000 |  | - |" in lines


def test_markdown_lists_every_config_source_of_a_stack():
    # a stack whose shapes take their configs from the table at one M and from the heuristic at another
    row = {"model": "m", "scheme": "w4a16", "group_size": 128, "backend": "triton", "kernel": "k", "stack_ms": 1.0,
           "ratio_to_M1": 1.0, "autotune": "table h200"}
    at1 = {"4096x4096": {"config": [], "source": "table h200"}, "4096x14336": {"config": [], "source": "table h200"}}
    at8 = {**at1, "4096x14336": {"config": [], "source": "heuristic"}}
    result = {"Ms": [1, 8], "device": "NVIDIA H200", "copy_bandwidth_Bps": 4e12, "agreement": [], "skipped": [],
              "rows": [{**row, "M": 1, "triton": at1}, {**row, "M": 8, "triton": at8}]}
    assert "| m | w4a16 g128 | triton | k | table h200 + heuristic | 1.000 | x1.00 | - |" in markdown(result).splitlines()


@pytest.mark.slow  # minutes on two CPU cores; CI runs it
def test_bench_smoke_writes_json_and_markdown(tmp_path):
    result = main(["--smoke", "--out", str(tmp_path)])  # it pins torch to 1 thread, as conftest already has
    saved = json.loads((tmp_path / "quant_linear.json").read_text())
    assert saved["Ms"] == [1, 2, 4, 8] and not saved["skipped"]
    assert len(saved["agreement"]) == len(VARIANTS) and all(a["ok"] for a in saved["agreement"])
    rows = [r for r in saved["rows"] if r["backend"] == "reference"]
    assert len(rows) == 4 * len(VARIANTS) and all(r["stack_ms"] > 0 for r in rows)
    # the CPU times each shape's one layer eagerly, once a call: no copies to cycle
    assert all(r["timed_launches"] == {"128x128": {"copies": 1, "launches": 1}, "256x128": {"copies": 1, "launches": 1}}
               for r in rows)
    assert all(r["ratio_to_M1"] == 1.0 and r["bandwidth_vs_copy"] > 0 for r in saved["rows"] if r["M"] == 1)
    table = (tmp_path / "quant_linear.md").read_text()
    assert "| smoke | w4a16 g128 | reference |" in table and result["device"] == "cpu"


@pytest.mark.slow
def test_bench_zero_points_quantizes_w4a16_asymmetrically_and_labels_it(tmp_path):
    main(["--smoke", "--out", str(tmp_path), "--schemes", "w4a16", "w8a16", "--zero-points"])
    saved = json.loads((tmp_path / "quant_linear.json").read_text())
    flags = {(a["scheme"], a["zero_points"]) for a in saved["agreement"]}
    assert flags == {("w4a16", True), ("w8a16", False)} and all(a["ok"] for a in saved["agreement"])
    assert {r["zero_points"] for r in saved["rows"] if r["scheme"] == "w4a16"} == {True}
    assert "| smoke | w4a16 g128 zero points | reference |" in (tmp_path / "quant_linear.md").read_text()


@pytest.mark.slow
def test_bench_dtype_float16_runs_the_layers_in_float16_and_labels_them(tmp_path):
    main(["--smoke", "--out", str(tmp_path), "--schemes", "w4a16", "--dtype", "float16"])
    saved = json.loads((tmp_path / "quant_linear.json").read_text())
    assert saved["dtype"] == "float16" and not saved["skipped"]
    assert [a["dtype"] for a in saved["agreement"]] == ["float16"] and saved["agreement"][0]["ok"]
    assert {r["dtype"] for r in saved["rows"]} == {"float16"}
    assert {r["scheme"] for r in saved["rows"] if r["backend"] == "dense"} == {"fp16"}
