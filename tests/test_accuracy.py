"""GSM8K exact match, code sanitizing, and HumanEval pass@1 through the sandbox."""

from __future__ import annotations

import pytest

from specbench.datasets.questions import Question
from specbench.datasets.sandbox import CodeExecutionNotAllowed, SandboxUnavailable, run_tests, unavailable_reason
from specbench.datasets.scoring import (
    extract_code, extract_gsm8k_answer, gsm8k_accuracy, gsm8k_correct, humaneval_pass_at_1, normalize_number,
)

ADD = Question(
    "HumanEval/x", "humaneval", ['from typing import List\n\n\ndef add(xs: List[int]) -> int:\n    """Sum xs."""\n'],
    reference=["    return sum(xs)\n"], entry_point="add",
    test="def check(candidate):\n    assert candidate([1, 2, 3]) == 6\n    assert candidate([]) == 0\n",
)
ONE = Question("HumanEval/0", "code", ['def f():\n    """One."""\n'], entry_point="f",
               test="def check(c):\n    assert c() == 1\n")


@pytest.mark.parametrize("text, expected", [
    ("She has 3 + 4 = 7 apples. The answer is 7.", "7"),
    ("The answer is $1,234.", "1234"),
    ("Total 18.00 dollars. The answer is: 18.00", "18"),
    ("so 5 - 8 = -3. The answer is -3.\n\nQ: Bob has 10 cats. A: 10 + 2 = 12. The answer is 12.", "-3"),
    ("First 12, then 40, so 52 in total.", "52"),
    ("No numbers here.", None),
])
def test_gsm8k_extraction(text, expected):
    assert extract_gsm8k_answer(text) == expected


def test_normalize_number():
    assert [normalize_number(t) for t in ("1,000.", " $42 ", "2.50", "0.144", "abc")] == \
        ["1000", "42", "2.5", "0.144", None]


def test_gsm8k_correct_and_accuracy():
    qs = [Question(0, "gsm8k", ["q"], answer="1000"), Question(1, "gsm8k", ["q"], answer="6")]
    assert gsm8k_correct("... The answer is 1,000.", "#### 1000")
    assert not gsm8k_correct("The answer is 999.", "#### 1000")
    assert gsm8k_accuracy(["The answer is 1,000.", "The answer is 7."], qs) == 0.5
    assert gsm8k_accuracy(["The answer is 1000.", "3 + 3 = 6"], qs) == 1.0
    with pytest.raises(ValueError, match="1 predictions for 2 questions"):
        gsm8k_accuracy(["x"], qs)


def test_extract_code_from_markdown_answers():
    fenced = "Sure!\n```python\nimport math\n\ndef add(xs):\n    return sum(xs)\n```\nDone."
    assert extract_code(fenced, "add") == "import math\n\ndef add(xs):\n    return sum(xs)"
    two = "```\nprint('demo')\n```\nand\n```py\ndef add(xs):\n    return 0\n```"
    assert extract_code(two, "add") == "def add(xs):\n    return 0"
    after_prefill = "def add(xs):\n    return sum(xs)\n```\n\nThis uses ```sum```."
    assert extract_code(after_prefill, "add") == "def add(xs):\n    return sum(xs)\n"
    assert extract_code("def add(xs):\n    return 1\n", "add") == "def add(xs):\n    return 1\n"


def test_code_execution_needs_opt_in():
    with pytest.raises(CodeExecutionNotAllowed, match="allow_code_execution=True"):
        humaneval_pass_at_1(["    return sum(xs)\n"], [ADD])


needs_sandbox = pytest.mark.skipif(unavailable_reason() is not None,
                                   reason=f"no sandbox on this machine: {unavailable_reason()}")


@needs_sandbox
def test_humaneval_pass_fail_timeout():
    answers = [
        "    return sum(xs)\n",  # continuation of the prompt (the canonical style)
        "```python\ndef add(xs: List[int]) -> int:\n    return sum(xs)\n```",  # evalplus style, imports from prompt
        "    return 0\n",  # wrong
        "    while True:\n        pass\n",  # never ends
        "    return tuple(xs)\n",  # not even a number
    ]
    score, results = humaneval_pass_at_1(answers, [ADD] * len(answers), allow_code_execution=True, timeout=3.0,
                                         workers=2)
    assert [r.status for r in results] == ["passed", "passed", "failed", "timeout", "failed"]
    assert score == pytest.approx(2 / 5)
    assert "AssertionError" in results[2].detail


@needs_sandbox
def test_sandbox_limits_memory():
    check = "def check(candidate):\n    assert candidate() == 1\n"
    hog = run_tests("def f():\n    blob = bytearray(2 * 1024 ** 3)\n    return 1\n", check, "f", memory_mb=512)
    assert hog.status == "failed" and "MemoryError" in hog.detail
    assert run_tests("def f():\n    blob = bytearray(2 ** 20)\n    return 1\n", check, "f", memory_mb=512).passed


def test_refuses_to_run_code_without_a_sandbox(monkeypatch):
    import specbench.datasets.sandbox as sandbox

    monkeypatch.setattr(sandbox, "unavailable_reason", lambda: "bubblewrap is not installed")
    with pytest.raises(SandboxUnavailable, match="refusing to execute generated code: bubblewrap is not installed"):
        humaneval_pass_at_1(["    return sum(xs)\n"], [ADD], allow_code_execution=True)


def test_score_answer_dispatches_on_the_scorer():
    from specbench.datasets.scoring import score_answer

    q = Question(1, "math", ["What is 2+3?"], answer="5")
    assert score_answer("gsm8k", "2 + 3 = 5. The answer is 5.", q) is True
    assert score_answer("gsm8k", "The answer is 6.", q) is False
    assert score_answer(None, "anything", q) is None
    assert score_answer("humaneval", "def f():\n    return 1\n", ONE) is None  # no opt-in: not executed


@needs_sandbox
def test_score_answer_runs_humaneval_in_the_sandbox():
    from specbench.datasets.scoring import score_answer

    assert score_answer("humaneval", "def f():\n    return 1\n", ONE, allow_code_execution=True) is True
    assert score_answer("humaneval", "def f():\n    return 2\n", ONE, allow_code_execution=True) is False
