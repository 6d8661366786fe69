"""HierSpec keeps the intermediate's output rows of a round, so after the target's verdict the EAGLE head is fed
again without running the intermediate on tokens it has already seen."""

from __future__ import annotations

import pytest

from specbench.decoding.generate import generate
from tests.drafter_stack import Stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return Stack(tmp_path_factory.mktemp("hierspec"), num_hidden_layers=2)


def drafts_and_extends(stack, monkeypatch, remember: bool, strong: bool):
    """Every draft HierSpec proposes on one prompt, and how many tokens the intermediate was extended by."""
    drafter = stack.drafter("hierspec", strong=strong, min_draft=5)
    if not remember:  # the rows are never kept: every sync computes the first changed pair's feature again
        monkeypatch.setattr(drafter, "_remember", lambda start, rows: None)
    drafts, extended, propose, extend = [], [], drafter.propose, drafter.session.extend

    def recorded(tokens, room):
        draft = propose(tokens, room)
        drafts.append(draft.tokens)
        return draft

    def counted(ids, *args, **kwargs):
        extended.append(len(ids))
        return extend(ids, *args, **kwargs)

    monkeypatch.setattr(drafter, "propose", recorded)
    monkeypatch.setattr(drafter.session, "extend", counted)
    generate(stack.session, drafter, [(5 * i + 2) % 50 + 3 for i in range(12)], max_new_tokens=40)
    monkeypatch.undo()
    return drafts, extended


@pytest.mark.parametrize("strong", [False, True])  # True: the intermediate is the target, every draft is accepted
def test_kept_rows_give_the_drafts_of_recomputed_ones_with_fewer_intermediate_tokens(stack, monkeypatch, strong):
    kept_drafts, kept = drafts_and_extends(stack, monkeypatch, remember=True, strong=strong)
    again_drafts, again = drafts_and_extends(stack, monkeypatch, remember=False, strong=strong)
    assert kept_drafts == again_drafts and len(kept_drafts) > 3
    assert kept[0] == again[0]  # the prompt
    # one token fewer per later draft (both take the first one's row from the prompt): only tokens the
    # intermediate has not seen run, none after a rejection
    assert sum(again[1:]) - sum(kept[1:]) == len(kept_drafts) - 1, (kept, again)
    assert all(n == 1 for n in kept[1:]) and (bool(kept[1:]) == strong)
