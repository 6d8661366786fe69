"""The ``Question`` record, the row converters of each source format, and question selection."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from specbench.datasets.scoring import normalize_number


@dataclass
class Question:
    """One prompt of a benchmark; ``turns`` are the user messages (two for MT-bench).

    ``answer`` is the normalised final number of math questions (GSM8K ``#### N``); ``entry_point`` and ``test``
    are HumanEval's function name and unit-test code.
    """

    question_id: int | str
    category: str
    turns: list[str]
    reference: list[str] | None = None
    answer: str | None = None
    entry_point: str | None = None
    test: str | None = None


def read_rows(path: str | Path) -> list[dict]:
    """Read a JSON-lines file (gzip-compressed when its name ends in ``.gz``), skipping blank lines."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: not a JSON line ({err.msg}, column {err.colno}): "
                                 f"{line.strip()[:60]!r}") from None
    return rows


def final_answer(solution: str) -> str | None:
    """The normalised number after GSM8K's ``####`` marker, or None when the text has none."""
    if "####" not in solution:
        return None
    return normalize_number(solution.rsplit("####", 1)[1])


def from_spec_bench(row: dict, index: int) -> Question:
    """A Spec-Bench / FastChat / EAGLE row: ``question_id``, ``category``, ``turns``, optional ``reference``."""
    reference = row.get("reference")
    return Question(
        question_id=row["question_id"], category=row.get("category", ""), turns=list(row["turns"]),
        reference=list(reference) if reference else None,
        answer=final_answer(reference[0]) if reference else None,
    )


def from_humaneval(row: dict, index: int) -> Question:
    """An OpenAI HumanEval row: ``task_id``, ``prompt``, ``canonical_solution``, ``test``, ``entry_point``."""
    return Question(
        question_id=row["task_id"], category="humaneval", turns=[row["prompt"]],
        reference=[row["canonical_solution"]], entry_point=row["entry_point"], test=row["test"],
    )


def from_gsm8k(row: dict, index: int) -> Question:
    """A GSM8K row: ``question`` and ``answer`` (a worked solution ending in ``#### N``); ids are row indices."""
    return Question(question_id=index, category="gsm8k", turns=[row["question"]], reference=[row["answer"]],
                    answer=final_answer(row["answer"]))


def from_alpaca(row: dict, index: int) -> Question:
    """An Alpaca row: ``instruction``, optional ``input`` (appended after a blank line), ``output``."""
    text = row["instruction"] + (f"\n\n{row['input']}" if row.get("input") else "")
    return Question(question_id=index, category="alpaca", turns=[text], reference=[row["output"]])


def from_cnn_dm(row: dict, index: int) -> Question:
    """A CNN/DailyMail row, prompted as Spec-Bench does: ``Summarize: <article>``."""
    return Question(question_id=row.get("id", index), category="summarization",
                    turns=[f"Summarize: {row['article']}"], reference=[row["highlights"]])


def select(
    questions: Sequence[Question],
    categories: str | Iterable[str] | None = None,
    question_begin: int | None = None,
    question_end: int | None = None,
    groups: dict[str, tuple[str, ...]] | None = None,
) -> list[Question]:
    """Keep the given categories (a group name expands to its members), then the index range [begin, end).

    The range is a Python slice of the (filtered) list, as the papers' ``--question-begin/--question-end`` flags
    slice the question file; ``question_end=10`` keeps the first 10.
    """
    chosen = list(questions)
    if categories is not None:
        wanted = {categories} if isinstance(categories, str) else set(categories)
        groups = groups or {}
        known = {q.category for q in chosen} | set(groups)
        unknown = sorted(wanted - known)
        if unknown:
            raise ValueError(f"unknown categories {unknown}; this dataset has {sorted(known)}")
        members = set().union(*(groups.get(c, (c,)) for c in wanted))
        chosen = [q for q in chosen if q.category in members]
    return chosen[question_begin:question_end]
