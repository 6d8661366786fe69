"""Accuracy: GSM8K exact match and HumanEval pass@1 (sandboxed execution, opt-in)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Sequence

from specbench.datasets.sandbox import CodeExecutionNotAllowed, ExecResult, require_sandbox, run_tests

if TYPE_CHECKING:
    from specbench.datasets.questions import Question

NUMBER = re.compile(r"-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
ANSWER_IS = re.compile(r"the answer is\s*:?\s*\$?\s*(" + NUMBER.pattern + ")", re.IGNORECASE)
NEXT_SHOT = re.compile(r"\n\s*Q:")
FENCED = re.compile(r"```[\w+-]*[ \t]*\n(.*?)(?:\n[ \t]*```|$)", re.DOTALL)


def normalize_number(text: str) -> str | None:
    """``" $1,000. "`` -> ``"1000"``, ``"2.50"`` -> ``"2.5"``; None when the text is not a number."""
    cleaned = text.strip().replace(",", "").replace("$", "").rstrip(".").strip()
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def extract_gsm8k_answer(text: str) -> str | None:
    """The number after the first "The answer is", else the last number; text after a new "Q:" is ignored.

    Few-shot generations run on into invented questions (no terminators), hence the cut at the next "Q:".
    """
    text = NEXT_SHOT.split(text, maxsplit=1)[0]
    found = ANSWER_IS.search(text)
    if found:
        return normalize_number(found.group(1))
    numbers = NUMBER.findall(text)
    return normalize_number(numbers[-1]) if numbers else None


def gsm8k_correct(prediction: str, reference: str) -> bool:
    """Exact match of the extracted number against ``reference`` (a bare number or a ``#### N`` solution)."""
    gold = normalize_number(reference.rsplit("####", 1)[-1])
    return gold is not None and extract_gsm8k_answer(prediction) == gold


def gsm8k_accuracy(predictions: Sequence[str], questions: Sequence[Question]) -> float:
    """Fraction of predictions whose number equals the question's ``answer``."""
    _same_length(predictions, questions)
    hits = [q.answer is not None and gsm8k_correct(p, q.answer) for p, q in zip(predictions, questions)]
    return sum(hits) / len(hits) if hits else 0.0


def extract_code(text: str, entry_point: str | None = None) -> str:
    """Sanitize a model answer into Python source.

    Text before the first fence is taken when there is no fence or when it already defines ``entry_point``
    (a completion after a pre-filled ```` ```python ```` fence); otherwise the first fenced block that defines
    ``entry_point``, else the first fenced block.
    """
    head = text.split("```", 1)[0]
    defines = f"def {entry_point}" if entry_point else None
    if "```" not in text or (defines and defines in head):
        return head
    blocks = FENCED.findall(text)
    return next((b for b in blocks if defines and defines in b), blocks[0] if blocks else head)


def humaneval_solution(answer: str, question: Question) -> str:
    """The model's code for one HumanEval answer: the prompt's imports, then the sanitized code.

    An answer that does not define the entry point is treated as a continuation of the prompt.
    """
    prompt = question.turns[0]
    code = extract_code(answer, question.entry_point)
    if f"def {question.entry_point}" not in code:
        code = prompt + answer.split("```", 1)[0]
    imports = "".join(line + "\n" for line in prompt.splitlines() if line.startswith(("import ", "from ")))
    return f"{imports}\n{code}\n"


def humaneval_tests(question: Question) -> str:
    """The trusted side of one problem: the prompt (its helpers, e.g. ``poly`` or ``encode_cyclic``) and
    ``check``; it never runs the model's code, only calls it through the sandbox."""
    return f"{question.turns[0]}\n\n{question.test}\n"


def humaneval_pass_at_1(
    answers: Sequence[str],
    questions: Sequence[Question],
    *,
    allow_code_execution: bool = False,
    timeout: float = 3.0,
    memory_mb: int = 1024,
    workers: int = 4,
) -> tuple[float, list[ExecResult]]:
    """pass@1 over greedy answers (one per question) and the per-question results.

    Runs model-written code, so it needs ``allow_code_execution=True``; see ``sandbox.run_tests`` for the
    isolation and limits. Raises ``SandboxUnavailable`` (and runs nothing) when the sandbox cannot be built.
    """
    if not allow_code_execution:
        raise CodeExecutionNotAllowed(
            "HumanEval scoring executes model-generated code. Opt in with allow_code_execution=True "
            "(it runs in a bubblewrap sandbox: no network, no host files, unprivileged, time/memory/disk limits)."
        )
    _same_length(answers, questions)
    require_sandbox()

    def score(pair: tuple[str, Question]) -> ExecResult:
        answer, question = pair
        return run_tests(humaneval_solution(answer, question), humaneval_tests(question), question.entry_point,
                         timeout=timeout, memory_mb=memory_mb)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(score, zip(answers, questions)))
    return (sum(r.passed for r in results) / len(results) if results else 0.0), results


def _same_length(predictions: Sequence, questions: Sequence) -> None:
    if len(predictions) != len(questions):
        raise ValueError(f"{len(predictions)} predictions for {len(questions)} questions")


def score_answer(scorer: str | None, answer: str, question: Question, *, allow_code_execution: bool = False
                 ) -> bool | None:
    """Whether one final answer is correct under the dataset's ``scorer``; None when it cannot be scored
    (no scorer, no reference, or HumanEval without the opt-in to execute code)."""
    if scorer == "gsm8k" and question.answer is not None:
        return gsm8k_correct(answer, question.answer)
    if scorer == "humaneval" and allow_code_execution and question.test:
        return humaneval_pass_at_1([answer], [question], allow_code_execution=True, workers=1)[0] == 1.0
    return None
