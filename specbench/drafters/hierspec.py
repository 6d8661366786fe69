"""HierSpec: EAGLE-2 drafts for an intermediate model, whose accepted tokens form the target's draft.

Each round the EAGLE head drafts a tree (``inner_depth`` passes) for the intermediate model (e.g. W4A16
Llama-3-8B), which verifies it and commits a path plus its bonus token; rounds repeat until the sequence
holds at least ``min_draft`` tokens, and the target verifies that sequence in one forward. At T > 0 the
intermediate's committed tokens are samples of its own distribution, which is recorded as the draft
distribution for the target's rejection sampling. The intermediate's prefill is timed as drafter prefill.
The head is an EAGLE-1/2 head, or an EAGLE-3 head (SpecMQuant §4.4), which reads the intermediate's three
feature layers; either drives EAGLE-2's dynamic tree.

From the device (``DeviceLoop``): every round drafts, verifies, accepts and commits
on the device (``DeviceAcceptance``), and the chain's tokens and the intermediate's rows stay there. The host reads
a round's accepted count only when the rounds it has enqueued might already reach ``min_draft`` (one sync per step
when two rounds suffice), and tracks every length: the target's count (replayed, so known in advance; or greedy,
read back before the next step) tells it how much of the chain was kept, so it rolls the intermediate back and, when
the whole chain was accepted, runs the chain's last token through the intermediate, as the host loop does. Under
replayed acceptance the host does not wait for that read: it guesses that each round kept what replay imposed,
enqueues the target's verify of that chain, and reads while the verify runs (``confirm_on_device``); a round whose
tree held no path that long proves the guess wrong, and the chain is drafted on and verified again
(``Generation.reverified_steps``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specbench.config import ModelConf, QuantConf, require
from specbench.decoding.acceptance import accept
from specbench.decoding.device_loop import DeviceAcceptance, DeviceCommit, read_packet
from specbench.decoding.draft import Draft
from specbench.decoding.drafter import DraftContext, Drafter
from specbench.decoding.replay import ReplayAcceptance
from specbench.decoding.session import ModelSession
from specbench.drafters.draft_model import chain_tree, check_same_vocab, second_model
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
    device_count_on_host = True  # the rollback of the intermediate follows the target's count

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
        # from the device: the chain's longest (rounds stop at min_draft; the last adds up to inner_depth + 1 tokens)
        self.device_depth = min_draft + inner_depth
        self.device_tree_size = self.device_depth + inner_tree_size  # the intermediate runs up to a chain ahead
        self._rounds: dict[bool, _DeviceRounds] = {}  # per kind of inner acceptance: replayed or greedy

    @property
    def drafts_on_device(self) -> bool:
        """Its rounds run from the device when the intermediate's acceptance can: replayed, or greedy."""
        acceptor = self.ctx.acceptor
        return isinstance(acceptor, ReplayAcceptance) or (acceptor is accept and self.ctx.sampling.greedy)

    def reset(self):
        self.session.reset()
        self.inner.reset()
        self._known = None
        for rounds in self._rounds.values():
            rounds.step = None

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

    def _device_rounds(self) -> _DeviceRounds:
        replay = isinstance(self.ctx.acceptor, ReplayAcceptance)
        if replay not in self._rounds:
            self._rounds[replay] = _DeviceRounds(self, replay)
        return self._rounds[replay]

    def propose_on_device(self, commit, tokens):
        return self._device_rounds().propose(commit, tokens)

    def confirm_on_device(self):
        return self._device_rounds().confirm()

    def drop_device_step(self):
        if isinstance(self.ctx.acceptor, ReplayAcceptance):
            self.ctx.acceptor.steps -= len(self._device_rounds().step.rounds)  # the dropped step's: the next step's


@dataclass
class _Step:
    """A step's rounds: while the host enqueues them, then (``sizes`` all read) what the next step rolls back from.
    Its chain, the target's draft, is ``_DeviceRounds.chain``'s first ``sum(sizes)`` tokens; the rounds' kept rows,
    cut to ``sizes``, are the intermediate's output rows at slots base … base + m - 1."""

    base: int  # the target's (and the intermediate's) length when the step started
    pairs: DeviceCommit | None  # what the next round's head reads
    scalars: torch.Tensor  # the next round's (root, start)
    tokens: list[int]
    rounds: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)  # kept tokens and rows, padded
    sizes: list[int] = field(default_factory=list)  # tokens each round kept, as read
    guesses: list[int] = field(default_factory=list)  # the rounds not yet read: the most tokens each can have kept


class _DeviceRounds:
    """HierSpec's rounds enqueued from the device: the intermediate's acceptance and commit there, lengths on the
    host. The host reads accepted counts only once the rounds enqueued might reach ``min_draft``."""

    def __init__(self, drafter: HierSpecDrafter, replay: bool):
        self.drafter, self.session, self.inner, self.replay = drafter, drafter.session, drafter.inner, replay
        self.acceptance = DeviceAcceptance(self.session, self.inner.depth, self.replay)
        runner = self.session.runner
        self.pinned, self.device = runner.cuda_graphs, runner.device
        rounds = drafter.min_draft  # each round keeps at least one token
        self.wants = [torch.zeros(1, dtype=torch.long, pin_memory=self.pinned) for _ in range(rounds)]
        self.packets: list[torch.Tensor | None] = [None] * rounds
        self.staged = torch.zeros(3, dtype=torch.long, pin_memory=self.pinned)
        self.copied = torch.cuda.Event() if self.pinned else None  # recorded after the last round's packet copy
        # the target's draft tree of every step: the chain's tokens written into row 0, parents and no-NaN fixed
        self.chain = chain_tree(torch.zeros(drafter.device_depth, dtype=torch.long, device=self.device))
        self.one = torch.ones((), dtype=torch.long, device=self.device)
        self.step: _Step | None = None  # the step being drafted, or the last one

    def _on_device(self, pinned: torch.Tensor) -> torch.Tensor:
        return pinned.to(self.device, non_blocking=self.pinned)

    def _resume(self, commit: DeviceCommit | None, tokens: list[int]):
        """The intermediate rolled back to the target's commit: the step's start (the target's length), the head's
        unread pairs as a ``DeviceCommit`` (None after the prompt) and the first verify's (root, start)."""
        if commit is None:  # after the prompt: the intermediate holds it, the head has read it
            self.session.settle()
            base = self.session.length
            self.staged.numpy()[:] = (tokens[-1], base, 0)
            return base, None, self._on_device(self.staged)[:2]
        last = self.step
        m = sum(last.sizes)
        seq = self.chain[0, :m]
        kept = min(commit.host_count, m)  # a chain: the replayed count, unless the chain is shorter; or the count
        new = last.base + kept + 1  # the target's length after its commit; the bonus token is the next root
        rows = torch.cat([kept_rows[:k] for (_, kept_rows), k in zip(last.rounds, last.sizes)])
        if kept == m:  # the whole chain kept: its last token has not been through the intermediate
            _, row = self.session.runner.chain_on_device(seq[m - 1 :], self.one, commit.scalars[1] - 1,
                                                         self.session.layers)
            rows = torch.cat([rows, row[None]])
        # the head's pairs (row at p, token at p + 1) from the last round's first one (the intermediate's length
        # before it: the head has not read its pairs), or from the one the target changed
        first = min(last.base + m - last.sizes[-1], new - 1)
        n, width = new - first, self.inner.depth + 2  # at most a round's tokens and the catch-up one
        ids = torch.cat([seq[first - last.base : kept], commit.scalars[:1], seq.new_zeros(width - n)])
        features = torch.cat([rows[first - last.base : new - last.base], rows.new_zeros(width - n, rows.shape[1])])
        self.staged.numpy()[:] = (n - 1, first, new)
        staged = self._on_device(self.staged)
        pairs = DeviceCommit(ids, features, staged[0], staged[1], torch.cat([commit.scalars[:1], staged[2:]]))
        return new, pairs, pairs.scalars

    def propose(self, commit: DeviceCommit | None, tokens: list[int]) -> torch.Tensor:
        """The chain [3, m] the target verifies; ``commit``: the target's last commit (None after the prompt). Under
        replayed acceptance its size is a guess, read in ``confirm`` once the target's verify is enqueued."""
        base, pairs, scalars = self._resume(commit, tokens)
        self.step = _Step(base, pairs, scalars, tokens)
        return self._draft(guess=self.replay)

    def confirm(self) -> torch.Tensor | None:
        """None when the rounds kept what the chain was written for; else the chain of what they kept, drafted on to
        ``min_draft`` if they fell short (a round's tree held no path as long as replay imposed)."""
        step = self.step
        if not step.guesses:
            return None
        guesses, read = step.guesses, self._read(len(step.sizes), len(step.rounds))
        step.sizes += read
        step.guesses = []
        return None if read == guesses else self._draft(guess=False)

    def _draft(self, guess: bool) -> torch.Tensor:
        """Enqueue rounds until those enqueued can hold ``min_draft`` tokens and write their chain: with ``guess``, as
        long as each round can have kept (replay imposes it, unless the tree holds no such path); else as read."""
        step, min_draft = self.step, self.drafter.min_draft
        while True:
            while sum(step.sizes) + sum(step.guesses) < min_draft:
                self._round()
            if guess:
                return self._write_chain(step.sizes + step.guesses)
            step.sizes += self._read(len(step.sizes), len(step.rounds))
            step.guesses = []
            if sum(step.sizes) >= min_draft:
                return self._write_chain(step.sizes)

    def _round(self) -> None:
        """Enqueue one round: the head drafts, the intermediate verifies, accepts and commits, the count is copied."""
        step, depth, j = self.step, self.inner.depth, len(self.step.rounds)
        wanted = self.drafter.ctx.acceptor.length() - 1 if self.replay else depth
        want = self.wants[j]
        want.numpy()[0] = wanted  # copied in by the acceptance, before the host writes it again (next step)
        tree = self.inner.propose_on_device(step.pairs, step.tokens)
        best, hidden = self.session.runner.tree_on_device(None, tree[:2], step.scalars, self.session.layers,
                                                          best_only=True)
        step.pairs, packet = self.acceptance(best, hidden, tree, step.scalars,
                                             want if self.pinned else want.to(self.device))
        if self.packets[j] is None:  # the inner trees have one size
            self.packets[j] = torch.empty(packet.shape, dtype=packet.dtype, pin_memory=self.pinned)
        self.packets[j].copy_(packet, non_blocking=self.pinned)
        if self.pinned:
            self.copied.record()  # the read waits for this, not for the copies below
        step.rounds.append((step.pairs.tokens.clone(), step.pairs.kept.clone()))  # the next round reuses its outputs
        step.scalars = step.pairs.scalars
        step.guesses.append(min(wanted, depth) + 1)

    def _write_chain(self, sizes: list[int]) -> torch.Tensor:
        """The target's draft: the first ``sizes[j]`` kept tokens of each round, written by one kernel."""
        tree = self.chain[:, : sum(sizes)]
        torch.cat([kept_tokens[:k] for (kept_tokens, _), k in zip(self.step.rounds, sizes)], out=tree[0])
        return tree

    def _read(self, first: int, end: int) -> list[int]:
        """The tokens kept by rounds ``first`` … ``end - 1`` (each: its accepted nodes and its bonus token)."""
        if self.pinned:
            self.copied.synchronize()
        return [read_packet(self.packets[j].tolist(), self.inner.depth)[0] + 1 for j in range(first, end)]


def build(conf: HierSpecConf, ctx: DraftContext, parts: Parts) -> HierSpecDrafter:
    session = parts.session(parts.model(conf.model, conf.quant))
    head = parts.head(conf.head, session.model, conf.first_level)
    return HierSpecDrafter(ctx, session, head, conf.min_draft, conf.inner_depth,
                           conf.inner_tree_size, conf.topk)


register(HierSpecConf, build)
