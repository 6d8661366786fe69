"""Synthetic prompts for shape-only timing runs, which have no tokenizer.

``dataset.name=synthetic``: ``synthetic_questions`` random-token prompts of ``synthetic_prompt_tokens`` each.
``dataset.synthetic=true`` on a named benchmark: prompts shaped like that benchmark's tasks. Each task gets
``synthetic_questions`` single-turn prompts whose categories and ids stand in for the real ones (so the rows land in
the benchmark's per-task cells and pair with their AR baseline), and whose lengths are drawn uniformly from the
task's ``TASK_LENGTHS`` range. The ranges are the 10th and 90th percentiles of the real first-turn user message,
in characters / 4 (about one Llama-3 token per 4 characters of English), measured on the pinned files
(Spec-Bench @ SPEC_BENCH_COMMIT and EAGLE's eagle/data subsets); the chat template and system prompt are not
counted and MT-bench's second turn is not replayed.
"""

from __future__ import annotations

import torch

from specbench.datasets.questions import Question
from specbench.datasets.registry import MT_BENCH_CATEGORIES

# dataset name -> task -> (categories its questions take in turn, (shortest, longest) prompt in tokens)
MT_BENCH = (MT_BENCH_CATEGORIES, (21, 172))
TASK_LENGTHS: dict[str, dict[str, tuple[tuple[str, ...], tuple[int, int]]]] = {
    "spec_bench": {
        "mt_bench": MT_BENCH,
        "translation": (("translation",), (21, 61)),
        "summarization": (("summarization",), (386, 1519)),
        "qa": (("qa",), (9, 16)),
        "math_reasoning": (("math_reasoning",), (33, 86)),
        "rag": (("rag",), (729, 834)),
    },
    "mt_bench": {"mt_bench": MT_BENCH},
    "eagle/mt_bench": {"mt_bench": MT_BENCH},
    "eagle/humaneval": {"humaneval": (("humaneval",), (65, 197))},
    "eagle/gsm8k": {"gsm8k": (("gsm8k",), (31, 93))},
    "eagle/alpaca": {"alpaca": (("alpaca",), (10, 20))},
    "eagle/sum": {"sum": (("sum",), (386, 1519))},
    "eagle/qa": {"qa": (("qa",), (9, 16))},
}


def task_of(dataset: str, category: str) -> str | None:
    """The task of ``dataset`` a question category belongs to (None when the dataset has no task table)."""
    for task, (categories, _) in TASK_LENGTHS.get(dataset, {}).items():
        if category in categories or category == task:
            return task
    return None


def fixed_length_questions(count: int, length: int, vocab_size: int) -> list[Question]:
    """``dataset.name=synthetic``: ``count`` random-token prompts of ``length`` tokens."""
    g = torch.Generator().manual_seed(0)
    return [Question(i, "synthetic", [torch.randint(0, vocab_size, (length,), generator=g).tolist()])
            for i in range(count)]


def task_shaped_questions(dataset: str, per_task: int, vocab_size: int, tasks=None) -> list[Question]:
    """``per_task`` random-token prompts per task of ``dataset`` (only ``tasks`` when given), lengths uniform on the
    task's ``TASK_LENGTHS`` range; the same arguments give the same prompts."""
    if dataset not in TASK_LENGTHS:
        raise ValueError(f"dataset.synthetic=true needs a task length table for {dataset!r}; known: "
                         f"{', '.join(TASK_LENGTHS)} (or use dataset=synthetic for fixed-length prompts)")
    table = TASK_LENGTHS[dataset]
    unknown = sorted(set(tasks or ()) - set(table))
    if unknown:
        raise ValueError(f"dataset.categories {unknown} are not tasks of {dataset}: {', '.join(table)}")
    out = []
    for t, (task, (categories, (lo, hi))) in enumerate(table.items()):
        if tasks and task not in tasks:
            continue
        g = torch.Generator().manual_seed(t)
        for i in range(per_task):
            length = int(torch.randint(lo, hi + 1, (), generator=g))
            ids = torch.randint(0, vocab_size, (length,), generator=g).tolist()
            out.append(Question(f"{task}-{i}", categories[i % len(categories)], [ids]))
    return out
