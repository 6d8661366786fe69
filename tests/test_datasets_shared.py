"""Integration: the real Spec-Bench and EAGLE files from $SPECBENCH_SHARED_DATA, through path and the cache."""

from __future__ import annotations

import os
import warnings
from collections import Counter
from pathlib import Path

import pytest

from specbench.datasets import download
from specbench.datasets.registry import MT_BENCH_CATEGORIES, load_questions

SHARED = os.environ.get("SPECBENCH_SHARED_DATA")
pytestmark = pytest.mark.skipif(not SHARED, reason="set SPECBENCH_SHARED_DATA to the folder with spec_bench/ and "
                                                   "eagle_subsets/ copies to run the integration tests")
EAGLE = ("mt_bench", "humaneval", "gsm8k", "alpaca", "sum", "qa")


def shared(*parts) -> Path:
    return Path(SHARED, *parts)


def test_spec_bench_all_480_rows():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the shared copy must match the pinned sha256
        qs = load_questions("spec_bench", path=shared("spec_bench", "question.jsonl"))
    assert len(qs) == 480
    assert [q.question_id for q in qs] == list(range(81, 561))
    counts = Counter(q.category for q in qs)
    assert all(counts[c] == 10 for c in MT_BENCH_CATEGORIES)
    assert all(counts[c] == 80 for c in ("translation", "summarization", "qa", "math_reasoning", "rag"))
    assert all(len(q.turns) == (2 if q.question_id <= 160 else 1) for q in qs)
    assert sum(q.reference is not None for q in qs) == 359
    assert all(q.answer is not None for q in qs if q.category == "math_reasoning")
    assert qs[320].turns[0].startswith("Jen decides") and qs[320].answer == "1000"


def test_spec_bench_first_ten_of_each_task():
    path = shared("spec_bench", "question.jsonl")
    assert [q.question_id for q in load_questions("spec_bench", path=path, question_end=10)] == list(range(81, 91))
    summ = load_questions("spec_bench", path=path, categories="summarization", question_end=10)
    assert [q.question_id for q in summ] == list(range(241, 251))
    assert len(load_questions("spec_bench", path=path, categories="mt_bench")) == 80


@pytest.mark.parametrize("name", EAGLE)
def test_eagle_subsets(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qs = load_questions(f"eagle/{name}", path=shared("eagle_subsets", name, "question.jsonl"))
    assert len(qs) == 80 and all(q.turns and all(isinstance(t, str) and t for t in q.turns) for q in qs)
    assert len({q.question_id for q in qs}) == 80
    if name == "mt_bench":
        assert all(len(q.turns) == 2 for q in qs)
    if name == "gsm8k":
        assert all(q.answer is not None for q in qs) and qs[0].answer == "109"


def test_download_path_with_the_real_bytes(tmp_path, monkeypatch):
    files = {f"eagle/data/{n}/question.jsonl": shared("eagle_subsets", n, "question.jsonl") for n in EAGLE}
    files["data/spec_bench/question.jsonl"] = shared("spec_bench", "question.jsonl")

    def fetch(url):
        return next(p.read_bytes() for suffix, p in files.items() if url.endswith(suffix))

    monkeypatch.setattr(download, "fetch_url", fetch)
    assert len(load_questions("spec_bench", cache_dir=tmp_path)) == 480
    assert len(load_questions("mt_bench", cache_dir=tmp_path)) == 80
    for name in EAGLE:
        assert len(load_questions(f"eagle/{name}", cache_dir=tmp_path)) == 80
