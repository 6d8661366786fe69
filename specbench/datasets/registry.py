"""The dataset registry: one declarative ``DatasetSpec`` per prompt set, and ``load_questions``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable

from specbench.datasets import questions as q
from specbench.datasets.download import HubSource, UrlSource, cached_file, sha256_of

SPEC_BENCH_COMMIT = "fd2c1cd7d2201ef71db4c5f4e455008f017967bf"
EAGLE_COMMIT = "cb7e0841fe0c206c6ed74a197ad5e2a1f13f5a2b"
HUMAN_EVAL_COMMIT = "6d43fb980f9fee3c892a914eda09951f772ad10d"
MT_BENCH_CATEGORIES = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")


def github_raw(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


@dataclass(frozen=True)
class PackagedSource:
    """A file shipped inside ``specbench/datasets/data``."""

    filename: str

    def path(self) -> Path:
        return Path(str(resources.files("specbench.datasets").joinpath("data", self.filename)))


@dataclass(frozen=True)
class DatasetSpec:
    """Everything the harness needs to know about a prompt set.

    ``prompt_style`` is ``chat`` (chat template, multi-turn), ``gsm8k_8shot`` (raw 8-shot text) or ``humaneval``
    (evalplus-style chat with a pre-filled code fence); ``scorer`` names the accuracy metric (``gsm8k``,
    ``humaneval``) or is None; ``max_new_tokens`` is the papers' default generation length.
    """

    name: str
    description: str
    source: UrlSource | HubSource | PackagedSource
    convert: Callable[[dict, int], q.Question] = q.from_spec_bench
    expected_rows: int | None = None
    max_new_tokens: int = 1024
    prompt_style: str = "chat"
    scorer: str | None = None
    license: str = ""
    category_groups: dict[str, tuple[str, ...]] = field(default_factory=dict)


DATASETS: dict[str, DatasetSpec] = {}


class UnknownDatasetError(KeyError):
    """A dataset name that is not registered; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def register(spec: DatasetSpec) -> DatasetSpec:
    if spec.name in DATASETS:
        raise ValueError(f"dataset {spec.name!r} is already registered")
    DATASETS[spec.name] = spec
    return spec


def list_datasets() -> list[str]:
    return sorted(DATASETS)


def get_dataset(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownDatasetError(f"unknown dataset {name!r}; known datasets: {', '.join(list_datasets())}") from None


def dataset_file(name: str, *, path: str | Path | None = None, cache_dir: str | Path | None = None,
                 download: bool = True, force: bool = False) -> Path:
    """The file to read for dataset ``name``: ``path`` if given, the shipped file, or the (downloaded) cache file."""
    spec = get_dataset(name)
    if path is not None:
        path = Path(path).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"dataset {name!r}: no file at {path}")
        pinned = getattr(spec.source, "sha256", None)
        if pinned and sha256_of(path.read_bytes()) != pinned:
            warnings.warn(f"{path} differs from the pinned {name} file (sha256 {pinned}); results may not be "
                          "comparable with published numbers", stacklevel=3)
        return path
    if isinstance(spec.source, PackagedSource):
        return spec.source.path()
    return cached_file(name, spec.source, spec.expected_rows, cache_dir, download=download, force=force)


def load_questions(
    name: str,
    *,
    path: str | Path | None = None,
    categories: str | Iterable[str] | None = None,
    question_begin: int | None = None,
    question_end: int | None = None,
    cache_dir: str | Path | None = None,
    download: bool = True,
) -> list[q.Question]:
    """Load dataset ``name`` as ``Question`` records, filtered by category and then by index range."""
    spec = get_dataset(name)
    rows = q.read_rows(dataset_file(name, path=path, cache_dir=cache_dir, download=download))
    questions = [spec.convert(row, i) for i, row in enumerate(rows)]
    return q.select(questions, categories, question_begin, question_end, spec.category_groups)


def _eagle(name: str, sha256: str, description: str, **kw) -> DatasetSpec:
    url = github_raw("SafeAILab/EAGLE", EAGLE_COMMIT, f"eagle/data/{name}/question.jsonl")
    return DatasetSpec(f"eagle/{name}", description, UrlSource(url, sha256), expected_rows=80, **kw)


MT_BENCH_SHA256 = "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7"
GROUPS = {"mt_bench": MT_BENCH_CATEGORIES}

for _spec in (
    DatasetSpec(
        "spec_bench", "Spec-Bench: MT-bench 80 (2 turns), translation, summarization, qa, math_reasoning, rag 80 each",
        UrlSource(github_raw("hemingkx/Spec-Bench", SPEC_BENCH_COMMIT, "data/spec_bench/question.jsonl"),
                  "4b6d33e79484f9841c487ee87d1cf6aa8c6066f61d5d482ff09e5a007fafdf04"),
        expected_rows=480, license="Apache-2.0 (sources: MT-bench, WMT14, CNN/DM, NQ CC BY-SA, GSM8K MIT)",
        category_groups=GROUPS,
    ),
    DatasetSpec(
        "mt_bench", "MT-bench: 80 two-turn questions in 8 categories (EAGLE's copy of FastChat's file)",
        UrlSource(github_raw("SafeAILab/EAGLE", EAGLE_COMMIT, "eagle/data/mt_bench/question.jsonl"), MT_BENCH_SHA256),
        expected_rows=80, license="Apache-2.0", category_groups=GROUPS,
    ),
    _eagle("mt_bench", MT_BENCH_SHA256, "EAGLE's MT-bench (80, 2 turns)", license="Apache-2.0",
           category_groups=GROUPS),
    _eagle("humaneval", "ce0244e2b228339e9a11afc63a151719beede1e389fdaec7cd9751d33902180e",
           "EAGLE's 80 HumanEval prompts ('Complete the code I provided'), no tests", license="MIT"),
    _eagle("gsm8k", "a55920b2f2aac724241124c59e5b8e8168dbbeb2ab0fdbee17d5b0ab6db5ff27",
           "EAGLE's 80 GSM8K questions, chat-prompted", scorer="gsm8k", license="MIT"),
    _eagle("alpaca", "8ad3e5a7fc61b88d8e25edb81a52a2ce00a04494d5694c122cb11a5cc26a00df",
           "EAGLE's 80 Alpaca instructions", license="CC BY-NC 4.0 (non-commercial)"),
    _eagle("sum", "916876f0c42f938a944de96eed16e51425f29f27438cca5c9ef4737c0fedf771",
           "EAGLE's 80 CNN/DM articles (= Spec-Bench summarization)", license="Apache-2.0 (HF card)"),
    _eagle("qa", "04252e41ab00bcc03b11940b4a3766cf40ae0b76a09c4f56968ba952f0b029f3",
           "EAGLE's 80 Natural Questions (= Spec-Bench qa)", license="CC BY-SA 3.0"),
    DatasetSpec(
        "humaneval", "OpenAI HumanEval: 164 problems with unit tests",
        UrlSource(github_raw("openai/human-eval", HUMAN_EVAL_COMMIT, "data/HumanEval.jsonl.gz"),
                  "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef", "HumanEval.jsonl.gz"),
        convert=q.from_humaneval, expected_rows=164, max_new_tokens=512, prompt_style="humaneval",
        scorer="humaneval", license="MIT",
    ),
    DatasetSpec(
        "gsm8k", "GSM8K test split (1319), 8-shot chain-of-thought", HubSource("openai/gsm8k", "main", "test"),
        convert=q.from_gsm8k, expected_rows=1319, max_new_tokens=256, prompt_style="gsm8k_8shot", scorer="gsm8k",
        license="MIT",
    ),
    DatasetSpec(
        "alpaca", "Stanford Alpaca instructions (52k)", HubSource("tatsu-lab/alpaca", None, "train"),
        convert=q.from_alpaca, expected_rows=52002, license="CC BY-NC 4.0 (non-commercial)",
    ),
    DatasetSpec(
        "cnn_dm", "CNN/DailyMail 3.0.0 test split, 'Summarize: <article>'",
        HubSource("abisee/cnn_dailymail", "3.0.0", "test"), convert=q.from_cnn_dm, expected_rows=11490,
        license="Apache-2.0 (HF card)",
    ),
    DatasetSpec(
        "specbench_mini", "14 short prompts written for specbench (chat, code, math, summarization, translation, qa; "
        "4 two-turn); Python-flavoured for the tiny shipped models", PackagedSource("specbench_mini.jsonl"),
        max_new_tokens=256, license="same as specbench", category_groups={},
    ),
):
    register(_spec)
