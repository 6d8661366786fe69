"""Accepting a draft against the target's logits: greedy matching, or lossless speculative sampling.

For T > 0 the walk down the tree is the recursive rejection scheme of SpecInfer / EAGLE: at each node the
children are tried in order; a child sampled from a draft distribution q is accepted with probability
min(1, p(x)/q(x)) and on rejection the target distribution becomes norm(max(p - q, 0)); a child proposed
deterministically (q a point mass, siblings distinct) is accepted with probability p(x) and on rejection
p(x) is zeroed and p renormalised. When no child is accepted the bonus token is drawn from what is left of
p. Either way the committed tokens are distributed exactly as the target's sampling distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench.decoding.draft import Draft
from specbench.decoding.sampling import SamplingParams, sample


@dataclass
class Acceptance:
    nodes: list[int]  # accepted draft nodes, root to leaf
    tokens: list[int]  # their tokens followed by the bonus token

    @property
    def accepted(self) -> int:
        return len(self.nodes)


def accept_greedy(draft: Draft, logits: torch.Tensor) -> Acceptance:
    """Follow the child whose token is the target's argmax; ``logits`` [len(draft)+1, V], row 0 the root."""
    best = logits.argmax(-1).tolist()
    kids = draft.children
    nodes, row = [], 0
    while True:
        match = next((c for c in kids[row] if draft.tokens[c] == best[row]), None)
        if match is None:
            return Acceptance(nodes, [draft.tokens[i] for i in nodes] + [best[row]])
        nodes.append(match)
        row = match + 1


def accept_sampled(
    draft: Draft,
    logits: torch.Tensor,
    params: SamplingParams,
    generator: torch.Generator | None = None,
    *,
    correct_residual: bool = True,
) -> Acceptance:
    """Lossless speculative sampling over a tree. ``correct_residual=False`` breaks it (tests only)."""
    target = params.probs(logits)
    kids = draft.children
    nodes, row = [], 0
    while True:
        p = target[row].clone()
        chosen = None
        for child in kids[row]:
            x = draft.tokens[child]
            q = None if draft.probs is None else draft.probs[child]
            u = torch.rand((), generator=generator, device=p.device)
            ratio = p[x] if q is None else torch.clamp(p[x] / q[x], max=1.0)
            if u < ratio:
                chosen = child
                break
            if correct_residual:  # p is this row's own copy; the updates below never touch ``target``
                if q is None:
                    p[x] = 0
                else:
                    p = torch.clamp(p - q, min=0)
                total = p.sum()
                if total <= 0:  # p was fully covered by rejected proposals; cannot happen in exact arithmetic
                    p = target[row].clone()
                else:
                    p = p / total
        if chosen is None:
            bonus = int(sample(p, generator))
            return Acceptance(nodes, [draft.tokens[i] for i in nodes] + [bonus])
        nodes.append(chosen)
        row = chosen + 1


def accept(draft: Draft, logits: torch.Tensor, params: SamplingParams, generator=None) -> Acceptance:
    if params.greedy:
        return accept_greedy(draft, logits)
    return accept_sampled(draft, logits, params, generator)
