"""HierSpec: EAGLE-2 drafts for an intermediate model, whose accepted tokens form the target's draft.

Each round the EAGLE head drafts a tree (``inner_depth`` passes) for the intermediate model (e.g. W4A16
Llama-3-8B), which verifies it and commits a path plus its bonus token; rounds repeat until the sequence
holds at least ``min_draft`` tokens, and the target verifies that sequence in one forward. At T > 0 the
intermediate's committed tokens are samples of its own distribution, which is recorded as the draft
distribution for the target's rejection sampling. The intermediate's prefill is timed as drafter prefill.
The head is an EAGLE-1/2 head, or an EAGLE-3 head (SpecMQuant §4.4), which reads the intermediate's three
feature layers; either drives EAGLE-2's dynamic tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specbench.config import ModelConf, QuantConf, require
from specbench.decoding.draft import Draft
from specbench.decoding.drafter import DraftContext, Drafter
from specbench.decoding.session import ModelSession
from specbench.drafters.draft_model import check_same_vocab, second_model
from specbench.drafters.eagle import EagleDrafter
from specbench.drafters.eagle_head import DraftHead
from specbench.drafters.registry import DrafterConf, Parts, register


@dataclass
class HierSpecConf(DrafterConf):
    """EAGLE-2 -> intermediate model -> target; 2505.22179: d=6, d1=3, tree 30, k=10."""

    name: str = "hierspec"
    head: str = "tiny-eagle"  # the intermediate's EAGLE head: hub id, folder, or "random"
    first_level: str = "eagle"  # eagle (EAGLE-1/2 head) | eagle3 (EAGLE-3 head, SpecMQuant §4.4)
    min_draft: int = 6
    inner_depth: int = 3
    inner_tree_size: int = 30
    topk: int = 10
    model: ModelConf = field(default_factory=lambda: second_model("tiny-target"))
    quant: QuantConf = field(default_factory=QuantConf)

    def check(self, prefix="drafter"):
        for key in ("min_draft", "inner_depth", "topk"):
            require(getattr(self, key) >= 1, f"{prefix}.{key}", getattr(self, key), "an integer >= 1")
        require(self.first_level in ("eagle", "eagle3"), f"{prefix}.first_level", self.first_level, "eagle or eagle3")
        require(self.inner_tree_size >= 2, f"{prefix}.inner_tree_size", self.inner_tree_size,
                "an integer >= 2 (the root and a node)")


class HierSpecDrafter(Drafter):
    name = "hierspec"
    reads_hidden = False

    def __init__(self, ctx: DraftContext, session: ModelSession, head: DraftHead, min_draft: int,
                 inner_depth: int, inner_tree_size: int, topk: int):
        super().__init__(ctx)
        check_same_vocab(ctx.target.model.config.vocab_size, session.model.config.vocab_size, "intermediate model")
        self.session, self.min_draft = session, min_draft
        if inner_tree_size <= session.runner.scratch:  # the intermediate verifies trees of exactly this size
            session.runner.add_bucket(inner_tree_size)
        self.inner = EagleDrafter(DraftContext(session, ctx.sampling, ctx.generator), head, topk, inner_depth,
                                  inner_tree_size)
        self._known: tuple[int, torch.Tensor] | None = None  # the intermediate's output rows from a position on

    def reset(self):
        self.session.reset()
        self.inner.reset()
        self._known = None

    def observe(self, tokens, hidden, start):
        if start == 0:  # prefill the intermediate model and the head on the prompt
            self.reset()
            _, features = self.session.extend(tokens[:-1])
            self.inner.observe(tokens, features, 0)
            self._known = (len(tokens) - 2, features[-1:].clone())  # a graph's output buffer: copied

    def _sync(self, tokens: list[int]) -> None:
        """Roll the intermediate back to the committed prefix and feed the head what changed.

        The head's pairs are (feature at t, token t + 1), so the first pair to feed again is the one before the
        first changed token. Its feature comes from the rows the intermediate output this round (``_known``):
        the intermediate runs only on tokens it has not seen, usually none (the target rejected part of the
        draft); without that row it computes the row again."""
        keep = min(self.session.common_prefix(tokens), len(tokens) - 1)  # positions whose KV stays valid
        start = max(0, keep - 1)
        first, rows = self._known if self._known is not None else (0, None)
        if rows is None or not first <= start < keep <= first + rows.shape[0]:
            keep = start
        self.session.truncate(keep)
        features = rows[start - first : keep - first] if keep > start else None
        if keep < len(tokens) - 1:
            _, new = self.session.extend(tokens[keep:-1])
            features = new if features is None else torch.cat([features, new])
        self.inner.observe(tokens, features, start)
        self._known = None

    def _remember(self, start: int, rows: torch.Tensor) -> None:
        """Keep the intermediate's output rows of positions ``start`` on, after those of earlier rounds."""
        if self._known is not None and self._known[0] + self._known[1].shape[0] == start:
            self._known = (self._known[0], torch.cat([self._known[1], rows]))
        else:
            self._known = (start, rows)

    def propose(self, tokens, room):
        self._sync(tokens)
        sampling, generator = self.ctx.sampling, self.ctx.generator
        seq: list[int] = []
        probs: list[torch.Tensor] = []
        while len(seq) < min(self.min_draft, room):
            context = tokens + seq
            tree = self.inner.propose(context, self.session.runner.max_seq_len - self.session.length - 1)
            logits, hidden = self.session.verify(context[-1], tree)
            start = self.session.length
            result = self.ctx.acceptor(tree, logits, sampling, generator)
            kept = self.session.commit(result.nodes, hidden, copy=True)  # the rows outlive this replay's buffer
            self.inner.observe(context + result.tokens, kept, start)
            self._remember(start, kept)
            if not sampling.greedy:
                probs.append(sampling.probs(logits[[0] + [i + 1 for i in result.nodes]]))
            seq += result.tokens
        seq = seq[:room]
        return Draft.chain(seq, torch.cat(probs)[: len(seq)] if probs else None)


def build(conf: HierSpecConf, ctx: DraftContext, parts: Parts) -> HierSpecDrafter:
    session = parts.session(parts.model(conf.model, conf.quant))
    head = parts.head(conf.head, session.model, conf.first_level)
    return HierSpecDrafter(ctx, session, head, conf.min_draft, conf.inner_depth,
                           conf.inner_tree_size, conf.topk)


register(HierSpecConf, build)
