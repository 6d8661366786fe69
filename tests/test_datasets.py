"""Dataset registry, loaders, filters, the download cache (fetch monkeypatched) and the CLI."""

from __future__ import annotations

import gzip
import json
import urllib.error

import pytest

from specbench.datasets import download, registry
from specbench.datasets.__main__ import main as cli
from specbench.datasets.download import ChecksumError, DatasetUnavailableError, HubSource, UrlSource, sha256_of
from specbench.datasets.registry import DatasetSpec, get_dataset, list_datasets, load_questions

ROWS = [
    {"question_id": 81, "category": "writing", "turns": ["Write a poem.", "Shorter."]},
    {"question_id": 82, "category": "coding", "turns": ["Sort a list.", "Faster."]},
    {"question_id": 161, "category": "translation", "turns": ["Translate German to English: Hallo"],
     "reference": ["Hello"]},
    {"question_id": 401, "category": "math_reasoning", "turns": ["2+2?"], "reference": ["2+2=4\n#### 1,004"]},
    {"question_id": 402, "category": "math_reasoning", "turns": ["3+3?"], "reference": ["#### 6"]},
]


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture
def temp_spec(monkeypatch):
    """Register a dataset served from the bytes the test gives; returns a function (data, **spec fields)."""

    def make(data: bytes, name="tmp/set", **fields):
        fields.setdefault("source", UrlSource("https://example.invalid/q.jsonl", sha256_of(data), "q.jsonl"))
        spec = DatasetSpec(name, "test set", **fields)
        monkeypatch.setitem(registry.DATASETS, name, spec)
        return spec

    return make


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Downloads fail unless a test installs its own fetch function."""

    def refuse(*args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(download, "fetch_url", refuse)
    monkeypatch.setattr(download, "load_hub_rows", refuse)
    monkeypatch.delenv("SPECBENCH_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)


def test_registry_lists_every_dataset_with_paper_defaults():
    names = set(list_datasets())
    assert {"spec_bench", "mt_bench", "humaneval", "gsm8k", "alpaca", "cnn_dm", "specbench_mini"} <= names
    assert {f"eagle/{n}" for n in ("mt_bench", "humaneval", "gsm8k", "alpaca", "sum", "qa")} <= names
    assert get_dataset("spec_bench").max_new_tokens == 1024
    assert (get_dataset("gsm8k").max_new_tokens, get_dataset("gsm8k").prompt_style) == (256, "gsm8k_8shot")
    assert (get_dataset("humaneval").max_new_tokens, get_dataset("humaneval").scorer) == (512, "humaneval")
    assert registry.SPEC_BENCH_COMMIT in get_dataset("spec_bench").source.url
    assert registry.EAGLE_COMMIT in get_dataset("eagle/qa").source.url


def test_unknown_dataset_lists_known_ones():
    with pytest.raises(KeyError) as err:
        load_questions("spec-bench")
    assert "spec-bench" in str(err.value) and "spec_bench" in str(err.value) and "eagle/gsm8k" in str(err.value)


def test_load_from_path_parses_fields_and_filters(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(jsonl(ROWS) + b"\n")  # a trailing blank line is ignored
    with pytest.warns(UserWarning, match="differs from the pinned"):
        qs = load_questions("spec_bench", path=path)
    assert [q.question_id for q in qs] == [81, 82, 161, 401, 402]
    assert qs[0].turns == ["Write a poem.", "Shorter."] and qs[0].reference is None
    assert qs[3].answer == "1004" and qs[2].reference == ["Hello"] and qs[2].answer is None
    with pytest.warns(UserWarning):
        assert [q.question_id for q in load_questions("spec_bench", path=path, categories="mt_bench")] == [81, 82]
        math = load_questions("spec_bench", path=path, categories=["math_reasoning", "translation"], question_end=2)
        assert [q.question_id for q in math] == [161, 401]
        assert [q.question_id for q in load_questions("spec_bench", path=path, question_begin=1, question_end=3)] \
            == [82, 161]
        with pytest.raises(ValueError, match="unknown categories.*summarisation"):
            load_questions("spec_bench", path=path, categories="summarisation")


def test_bad_json_line_names_file_and_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"q.jsonl:2"):
        load_questions("specbench_mini", path=path)


def test_missing_local_path_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_questions("spec_bench", path=tmp_path / "nope.jsonl")


def test_download_verifies_then_caches_atomically(tmp_path, monkeypatch, temp_spec):
    data = jsonl(ROWS)
    temp_spec(data, expected_rows=5)
    calls = []
    monkeypatch.setattr(download, "fetch_url", lambda url: calls.append(url) or data)
    qs = load_questions("tmp/set", cache_dir=tmp_path)
    assert len(qs) == 5 and calls == ["https://example.invalid/q.jsonl"]
    assert (tmp_path / "tmp" / "set" / "q.jsonl").read_bytes() == data
    assert not list(tmp_path.rglob("*.part"))
    # second load reads the cache, no fetch
    monkeypatch.setattr(download, "fetch_url", lambda url: pytest.fail("fetched although cached"))
    assert len(load_questions("tmp/set", cache_dir=tmp_path, question_end=2)) == 2


def test_checksum_mismatch_on_download_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(download, "fetch_url", lambda url: b'{"question_id": 1, "turns": ["tampered"]}\n')
    with pytest.raises(ChecksumError, match="does not match the pinned 4b6d33e7"):
        load_questions("spec_bench", cache_dir=tmp_path)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_tampered_cache_is_rejected(tmp_path, temp_spec):
    temp_spec(jsonl(ROWS))
    cached = tmp_path / "tmp" / "set" / "q.jsonl"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(jsonl(ROWS[:2]))
    with pytest.raises(ChecksumError, match="delete the file"):
        load_questions("tmp/set", cache_dir=tmp_path)


def test_offline_without_cache_or_path_explains_both_fixes(tmp_path):
    with pytest.raises(DatasetUnavailableError) as err:
        load_questions("spec_bench", cache_dir=tmp_path)
    message = str(err.value)
    assert "could not be downloaded" in message and "URLError" in message
    assert "dataset.path=" in message and "python -m specbench.datasets download spec_bench" in message


def test_offline_env_skips_the_network(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_OFFLINE", "1")
    monkeypatch.setattr(download, "fetch_url", lambda url: pytest.fail("network used while offline"))
    with pytest.raises(DatasetUnavailableError, match="downloading is disabled.*dataset.path="):
        load_questions("eagle/mt_bench", cache_dir=tmp_path)


def test_cache_dir_defaults_to_env(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path))
    assert download.default_cache_dir() == tmp_path
    monkeypatch.delenv("SPECBENCH_CACHE")
    assert download.default_cache_dir().parts[-3:] == (".cache", "specbench", "datasets")


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "f.jsonl"
    target.write_bytes(b"old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(download.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        download.atomic_write(target, b"new")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f.jsonl"]


def test_hub_dataset_rows_are_converted_and_counted(tmp_path, monkeypatch, temp_spec):
    rows = [{"question": "1+1?", "answer": "1+1=2\n#### 2"}, {"question": "2*3?", "answer": "#### 6"}]
    requested = []
    monkeypatch.setattr(download, "load_hub_rows", lambda *a: requested.append(a) or rows)
    from specbench.datasets.questions import from_gsm8k

    temp_spec(b"", name="tmp/hub", source=HubSource("openai/gsm8k", "main", "test"), convert=from_gsm8k,
              expected_rows=2)
    qs = load_questions("tmp/hub", cache_dir=tmp_path)
    assert requested == [("openai/gsm8k", "main", "test", None)]
    assert [(q.question_id, q.turns, q.answer) for q in qs] == [(0, ["1+1?"], "2"), (1, ["2*3?"], "6")]
    with pytest.raises(ChecksumError, match="2 rows, expected 1319"):
        load_questions("gsm8k", cache_dir=tmp_path / "other")


def test_humaneval_gz_and_alpaca_and_cnn_rows(tmp_path):
    he = {"task_id": "HumanEval/0", "prompt": "def f(x):\n", "canonical_solution": "    return x\n",
          "test": "def check(c):\n    assert c(1) == 1\n", "entry_point": "f"}
    path = tmp_path / "HumanEval.jsonl.gz"
    path.write_bytes(gzip.compress(jsonl([he])))
    with pytest.warns(UserWarning):
        (q,) = load_questions("humaneval", path=path)
    assert (q.question_id, q.entry_point, q.turns, q.test) == ("HumanEval/0", "f", ["def f(x):\n"], he["test"])
    alpaca = tmp_path / "alpaca.jsonl"
    alpaca.write_bytes(jsonl([{"instruction": "Sort these.", "input": "3 1 2", "output": "1 2 3"},
                              {"instruction": "Say hi.", "input": "", "output": "hi"}]))
    assert [q.turns[0] for q in load_questions("alpaca", path=alpaca)] == ["Sort these.\n\n3 1 2", "Say hi."]
    cnn = tmp_path / "cnn.jsonl"
    cnn.write_bytes(jsonl([{"id": "abc", "article": "Long text.", "highlights": "Short."}]))
    (c,) = load_questions("cnn_dm", path=cnn)
    assert (c.question_id, c.turns, c.reference) == ("abc", ["Summarize: Long text."], ["Short."])


def test_specbench_mini_is_shipped_and_covers_the_task_mix():
    qs = load_questions("specbench_mini", download=False)
    assert 12 <= len(qs) <= 16
    assert {"chat", "code", "math", "summarization", "translation"} <= {q.category for q in qs}
    assert sum(len(q.turns) == 2 for q in qs) >= 3
    assert len({q.question_id for q in qs}) == len(qs)
    assert all(q.answer for q in qs if q.category == "math")
    assert sum("Python" in " ".join(q.turns) for q in qs) >= 5


def test_cli_downloads_and_reports(tmp_path, monkeypatch, capsys, temp_spec):
    data = jsonl(ROWS)
    temp_spec(data)
    monkeypatch.setattr(download, "fetch_url", lambda url: data)
    assert cli(["download", "tmp/set", "--cache-dir", str(tmp_path)]) == 0
    assert "tmp/set: 5 questions at" in capsys.readouterr().out
    assert (tmp_path / "tmp" / "set" / "q.jsonl").is_file()
    assert cli(["download", "no_such_set", "--cache-dir", str(tmp_path)]) == 1
    assert "known datasets" in capsys.readouterr().err
