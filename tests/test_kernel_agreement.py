"""The kernel-agreement check (``benchmarks/kernel_agreement.py``): its CPU run under Triton's interpreter, resuming,
refusals, and a wrong kernel caught at the one M where it is wrong."""

from __future__ import annotations

import json
import textwrap

import pytest
import torch

from benchmarks import kernel_agreement
from benchmarks.kernel_agreement import Item, check
from specbench.quantization import QuantLinear
from tests.conftest import run_in_interpreter


@pytest.mark.slow  # every smoke layout under the interpreter: ~10 s
def test_smoke_checks_every_layout_resumes_and_records_refusals(tmp_path):
    out = run_in_interpreter(textwrap.dedent(f"""
        import json
        from benchmarks.kernel_agreement import Item, SMOKE_MS, check, main
        first = main(["--smoke", "--out", "{tmp_path}", "--workers", "0"])
        again = main(["--smoke", "--out", "{tmp_path}", "--workers", "0"])
        refused = check(Item("triton", "w4a16", -1, False, False, "float16", 64, 200), SMOKE_MS, "cpu")
        print(json.dumps({{"first": first, "again": again, "refused": refused}}))
    """))
    result = json.loads(out.splitlines()[-1])
    rows = result["first"]["rows"]
    # 8 layouts x 2 shapes x 2 dtypes, less w4a16 in bf16 (the interpreter's tl.dot misreads bf16 casts)
    assert len(rows) == 8 * 2 * 2 - 5 * 2 and result["first"]["left"] == 0
    assert all(r["ok"] and r["ms"] == list(kernel_agreement.SMOKE_MS) for r in rows), rows
    assert all(r["config_sources"] == {"heuristic": len(kernel_agreement.SMOKE_MS)} for r in rows)  # no CPU table
    assert {r["tolerance"] for r in rows if r["scheme"] == "w8a8_int8"} == {5e-3}
    assert result["again"]["rows"] == rows and [r["items"] for r in result["again"]["runs"]] == [len(rows), 0]
    assert "in_features 200 must be a multiple of 128" in result["refused"]["refused"]
    table = (tmp_path / "kernel_agreement.md").read_text()
    assert "| triton | w4a16 | 128 | True | False | float16 | 2 of 2 | 0 | 0 |" in table
    assert table.count("| heuristic 12 |") == len(table.splitlines()) - 2  # 2 shapes x 6 M values a line


def test_a_kernel_wrong_at_one_m_fails_there(monkeypatch):
    item = Item("reference", "w4a16", 128, False, True, "float16", 64, 256)
    ms = (1, 2, 16, 17, 33)
    right = check(item, ms, "cpu")
    assert right["ok"] and right["worst_rel_error"] < 1e-3 and right["config_sources"] == {}

    def wrong_at_17(qw, bias, backend, dtype):
        layer = QuantLinear(qw, bias, backend, dtype)
        if dtype != torch.float32:  # the layer checked, not the fp32 oracle
            plain = layer.forward
            layer.forward = lambda x: plain(x) * (1.03 if x.shape[0] == 17 else 1.0)
        return layer

    monkeypatch.setattr(kernel_agreement, "QuantLinear", wrong_at_17)
    wrong = check(item, ms, "cpu")
    assert not wrong["ok"] and wrong["worst_m"] == 17 and wrong["worst_rel_error"] == pytest.approx(0.03, rel=0.05)
    assert max(e for m, e in zip(ms, wrong["rel_errors"]) if m != 17) < 1e-3


class _InProcessPool:
    """multiprocessing's Pool, run in this process, so that a patched ``_work`` reaches the 'workers'."""

    def __init__(self, n):
        pass

    def imap_unordered(self, fn, jobs):
        outcomes = map(fn, jobs)
        return type("Results", (), {"next": lambda self, timeout: next(outcomes)})()

    def terminate(self):
        pass

    def join(self):
        pass


def test_items_out_of_memory_are_retried_alone_and_on_resume(monkeypatch, tmp_path):
    calls = []

    def crowded_once(job):  # the first try of every item runs out of memory; alone it passes
        item = job[0]
        calls.append(item)
        if calls.count(item) == 1:
            return item, {"failed": "OutOfMemoryError: CUDA out of memory.", "ok": False}
        return item, {"ok": True, "worst_rel_error": 0.0, "worst_m": 1}

    monkeypatch.setattr(kernel_agreement, "INTERPRETED", True)
    monkeypatch.setattr(kernel_agreement, "_work", crowded_once)
    monkeypatch.setattr(kernel_agreement.multiprocessing, "get_context", lambda _: type("Ctx", (), {
        "Pool": _InProcessPool}))
    monkeypatch.setattr(kernel_agreement, "summary", lambda rows: "")
    args = ["--smoke", "--out", str(tmp_path), "--schemes", "w8a8_int8", "--workers", "2"]
    first = kernel_agreement.main(args)
    assert len(first["rows"]) == 4 and all(r["ok"] for r in first["rows"]) and len(calls) == 8

    # a row that ran out of memory in an earlier version of the file is checked again, the others are kept
    saved = json.loads((tmp_path / "kernel_agreement.json").read_text())
    saved["rows"][0].update(failed="OutOfMemoryError: CUDA out of memory.", ok=False)
    (tmp_path / "kernel_agreement.json").write_text(json.dumps(saved))
    calls.clear()
    again = kernel_agreement.main(args[:-1] + ["0"])  # alone: its outcome is kept whatever it is
    assert [r["items"] for r in again["runs"]] == [4, 1] and len(calls) == 1
    assert again["rows"][0]["failed"].startswith("OutOfMemoryError") and again["left"] == 0
