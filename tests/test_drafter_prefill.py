"""Every drafter's prompt processing runs inside the timed ``drafter_prefill`` phase, none in its first draft.

Each drafter-owned forward (draft model, intermediate model, EAGLE head; the target's kept layers for layer skip)
is counted in rows, attributed to the phase and step ``generate`` was in when it ran.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager

import pytest

from specbench.decoding.drafter import Drafter
from specbench.decoding.generate import generate
from specbench.decoding.phases import PhaseTimer
from tests.drafter_stack import SETTINGS, Stack

PROMPT = [(7 * i + 3) % 60 + 2 for i in range(120)]  # long beside any drafter's per-step work


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return Stack(tmp_path_factory.mktemp("prefill"), num_hidden_layers=2)


class PhaseLog(PhaseTimer):
    """A CPU phase timer that remembers which phase (and step) is running."""

    def __init__(self):
        super().__init__("cpu")
        self.current: tuple[int, str] | None = None

    @contextmanager
    def phase(self, name):
        self.current = (self.step, name)
        with super().phase(name):
            yield
        self.current = None


def count_rows(module, log: PhaseLog, rows: Counter, only_layers: bool = False) -> None:
    """Count the token rows of every forward of ``module`` under the running phase (``only_layers``: forwards
    over a subset of layers only, i.e. layer skip's drafts on the target)."""
    forward = module.forward

    def counted(input_ids, *args, **kwargs):
        layers = args[3] if len(args) > 3 else kwargs.get("layers")
        if not only_layers or layers is not None:
            rows[log.current] += input_ids.shape[-1]
        return forward(input_ids, *args, **kwargs)

    module.forward = counted


def drafter_modules(drafter) -> list:
    """The models a drafter runs besides the target: its own model and / or its EAGLE head."""
    if hasattr(drafter, "inner"):  # HierSpec: the intermediate model and its head
        return [drafter.session.model, drafter.inner.head]
    return [drafter.head] if hasattr(drafter, "head") else [drafter.session.model]


@pytest.mark.parametrize("name", ["draft_model", "eagle", "eagle3", "hierspec", "hierspec3"])
def test_the_prompt_is_processed_in_the_drafter_prefill(stack, name):
    drafter = stack.drafter(name)
    log, rows = PhaseLog(), Counter()
    for module in drafter_modules(drafter):
        count_rows(module, log, rows)
    gen = generate(stack.session, drafter, PROMPT, max_new_tokens=4, timer=log)
    # every model of the drafter took the prompt (draft model: all but the root) in the timed prefill phase
    need = {"draft_model": len(PROMPT), "hierspec": 2 * len(PROMPT)}.get(name.rstrip("3"), len(PROMPT))
    assert rows[(-1, "drafter_prefill")] >= need, rows
    assert gen.phase_ms[-1]["drafter_prefill"] > 0
    # the first draft only does per-step work: far less than the prompt
    assert 0 < rows[(0, "draft")] < len(PROMPT) // 2, rows
    assert all(phase != "target_prefill" for (_, phase) in rows)


def test_layer_skip_has_nothing_to_prefill(stack):
    """Layer skip drafts over the target's own KV cache, which the target's prefill fills."""
    drafter = stack.drafter("layer_skip")
    log, rows = PhaseLog(), Counter()
    count_rows(stack.target, log, rows, only_layers=True)
    generate(stack.session, drafter, PROMPT, max_new_tokens=4, timer=log)
    assert rows[(-1, "drafter_prefill")] == 0
    assert rows[(0, "draft")] == SETTINGS["layer_skip"]["num_tokens"]  # one row per drafted token, no prompt


def test_ngram_keeps_no_state_to_prefill(stack):
    """The n-gram lookup reads the committed tokens each step: its observe is the interface's no-op."""
    drafter = stack.drafter("ngram")
    assert type(drafter).observe is Drafter.observe and type(drafter).reset is Drafter.reset
    tokens = PROMPT + [PROMPT[0]]
    assert drafter.propose(tokens, 10).tokens == drafter.propose(list(tokens), 10).tokens != []
