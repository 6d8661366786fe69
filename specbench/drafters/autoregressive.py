"""Sequence drafting by a causal LM one token at a time (shared by the draft-model and layer-skip drafters)."""

from __future__ import annotations

from typing import Sequence

import torch

from specbench.decoding.draft import Draft
from specbench.decoding.sampling import SamplingParams, sample
from specbench.decoding.session import ModelSession


def draft_chain(session: ModelSession, feed: list[int], num_tokens: int, sampling: SamplingParams,
                generator: torch.Generator | None, layers: Sequence[int] | None = None) -> Draft:
    """Append ``feed`` to ``session`` and draft ``num_tokens`` tokens after it.

    Greedy settings draft argmax tokens (deterministic proposals); otherwise each token is sampled from the
    drafter's own filtered distribution, which the draft records for rejection sampling.
    """
    logits, _ = session.extend(feed, layers)
    tokens, probs = [], []
    for i in range(num_tokens):
        if sampling.greedy:
            tokens.append(int(logits.argmax()))
        else:
            q = sampling.probs(logits)
            probs.append(q)
            tokens.append(int(sample(q, generator)))
        if i + 1 < num_tokens:
            logits, _ = session.extend(tokens[-1:], layers)
    return Draft.chain(tokens, torch.stack(probs) if probs else None)
