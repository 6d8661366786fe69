"""Acceptance replay for shape-only (random-weight) models: real draft and verify costs, imposed acceptance.

Random weights give real timings but meaningless acceptance, so timing-only runs impose the accept length of
every step — a fixed mean τ spread evenly over steps, or a per-step trace of accept lengths (bonus token
included, as τ is counted). The accepted path follows the deepest branch (the first child on ties); when the
draft is shallower than the imposed length, the step accepts the whole path, so the achieved τ can fall short
of the imposed one — compare the rows' ``tau`` with ``timing.replay_tau``. Rows from such runs
carry ``acceptance_source = replay``.
"""

from __future__ import annotations

import torch

from specbench.decoding.acceptance import Acceptance
from specbench.decoding.draft import Draft


class ReplayAcceptance:
    def __init__(self, tau: float | None = None, trace: list[int] | None = None):
        if (tau is None) == (trace is None):
            raise ValueError("acceptance replay needs exactly one of timing.replay_tau or timing.replay_trace")
        if tau is not None and tau < 1:
            raise ValueError(f"timing.replay_tau={tau} < 1: tau counts the bonus token, so it is at least 1")
        if trace is not None and (not trace or min(trace) < 1):
            raise ValueError("timing.replay_trace must be a non-empty list of accept lengths >= 1")
        self.tau, self.trace = tau, trace
        self.steps = 0

    def length(self) -> int:
        """The accept length imposed on the next step."""
        k = self.steps
        self.steps += 1
        if self.trace is not None:
            return self.trace[k % len(self.trace)]
        return max(1, round((k + 1) * self.tau) - round(k * self.tau))

    def __call__(self, draft: Draft, logits: torch.Tensor, params=None, generator=None) -> Acceptance:
        want = self.length() - 1
        kids = draft.children
        height = [0] * (len(draft) + 1)  # longest path below each row (root = row 0, node i = row i + 1)
        for i in reversed(range(len(draft))):
            parent_row = draft.parents[i] + 1
            height[parent_row] = max(height[parent_row], height[i + 1] + 1)
        nodes, row = [], 0
        while len(nodes) < want and kids[row]:
            nodes.append(max(kids[row], key=lambda c: height[c + 1]))  # deepest branch, first on ties
            row = nodes[-1] + 1
        bonus = int(logits[row].argmax())
        return Acceptance(nodes, [draft.tokens[i] for i in nodes] + [bonus])


def per_task_replay(timing, dataset: str):
    """A function of a question's category giving its replayed acceptance: ``timing.replay_tau_by_task`` names a
    tau per task (or per category) of ``dataset``; other questions take ``replay_tau`` / ``replay_trace``. Each task
    keeps its own step counter, so each spreads its own tau evenly over its steps."""
    from specbench.datasets.synthetic import task_of

    by_task = dict(timing.get("replay_tau_by_task") or {})
    rules: dict[str, ReplayAcceptance] = {}

    def rule(category: str) -> ReplayAcceptance:
        key = category if category in by_task else task_of(dataset, category)
        if key not in by_task:
            key = None
        if key not in rules:
            rules[key] = (ReplayAcceptance(tau=float(by_task[key])) if key is not None
                          else ReplayAcceptance(timing.replay_tau, timing.replay_trace))
        return rules[key]

    return rule
