"""A separate, smaller causal LM with the target's tokenizer drafts a sequence (2505.22179's SP(γ))."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import torch

from specbench.config import ModelConf, QuantConf, require
from specbench.decoding.draft import Draft
from specbench.decoding.drafter import DraftContext, Drafter
from specbench.decoding.session import ModelSession
from specbench.drafters.autoregressive import draft_chain
from specbench.drafters.registry import DrafterConf, Parts, register


class TokenizerMismatchError(ValueError):
    """Draft and target do not share a vocabulary."""


def check_same_vocab(target_vocab: int, draft_vocab: int, what: str = "draft model") -> None:
    if target_vocab != draft_vocab:
        raise TokenizerMismatchError(
            f"the {what} has a vocabulary of {draft_vocab} tokens but the target has {target_vocab}; "
            "speculative decoding needs one tokenizer: pick a drafter from the target's model family"
        )


def chain_shape(num_tokens) -> tuple[int, tuple[str, ...], int, int]:
    """A drafter that runs one forward per drafted token of a chain (draft model, layer skip)."""
    return int(num_tokens) + 1, ("sequence",), int(num_tokens), 1


def second_model(source: str) -> ModelConf:
    """A drafter's own model (default ``source``), shape-only exactly when the target is."""
    return ModelConf(source=source, shape_only="${model.shape_only}")


def chain_tree(chain: torch.Tensor) -> torch.Tensor:
    """The draft tree [3, m] of a chain of tokens on the device: tokens, parents (each its predecessor), no NaN."""
    return torch.cat([chain[None], _chain_rows(chain.numel(), chain.device)])


@lru_cache(maxsize=None)
def _chain_rows(m: int, device: torch.device) -> torch.Tensor:
    return torch.stack([torch.arange(-1, m - 1), torch.zeros(m, dtype=torch.long)]).to(device)


@dataclass
class DraftModelConf(DrafterConf):
    """2505.22179's SP(6): a smaller model of the target's family drafts ``num_tokens`` tokens."""

    name: str = "draft_model"
    num_tokens: int = 6
    model: ModelConf = field(default_factory=lambda: second_model("tiny-draft"))
    quant: QuantConf = field(default_factory=QuantConf)

    def check(self, prefix="drafter"):
        require(self.num_tokens >= 1, f"{prefix}.num_tokens", self.num_tokens, "an integer >= 1")

    def step_shape(self):
        return chain_shape(self.num_tokens)


class DraftModelDrafter(Drafter):
    """``session`` holds the draft model; its cache is rolled back to the committed prefix every step.

    From the device (``DeviceLoop``, greedy drafts): each token is the argmax of the last, fed back without a host
    read (``ForwardRunner.chain_on_device``). The host tracks the lengths: the target's count (replayed: known in
    advance; greedy: read before the next step) says where the draft model's cache is cut, and when the whole chain
    was kept its last token is fed with the target's bonus token, as ``propose`` does.
    """

    name = "draft_model"
    reads_hidden = False
    device_count_on_host = True

    def __init__(self, ctx: DraftContext, session: ModelSession, num_tokens: int):
        super().__init__(ctx)
        check_same_vocab(ctx.target.model.config.vocab_size, session.model.config.vocab_size)
        self.session, self.num_tokens = session, num_tokens
        self.device_depth = num_tokens
        self.device_tree_size = num_tokens + 2  # the chain, and the two tokens fed after a whole chain is kept
        self._last: tuple[int, torch.Tensor] | None = None  # the target's length at the last step's start, its chain
        self._counts: dict[int, torch.Tensor] = {}  # tokens fed first: 1, or 2 after a whole chain

    @property
    def drafts_on_device(self) -> bool:
        return self.ctx.sampling.greedy

    def reset(self):
        self.session.reset()

    def observe(self, tokens, hidden, start):
        if start == 0:  # the drafter's prefill: everything but the root, timed as drafter prefill
            self.session.reset()
            if len(tokens) > 1:
                self.session.extend(tokens[:-1])

    def propose(self, tokens, room):
        n = min(self.num_tokens, room)
        if n < 1:
            return Draft.empty()
        valid = min(self.session.common_prefix(tokens), len(tokens) - 1)
        self.session.truncate(valid)
        return draft_chain(self.session, tokens[valid:], n, self.ctx.sampling, self.ctx.generator)

    def propose_on_device(self, commit, tokens):
        runner, n, device = self.session.runner, self.num_tokens, self.session.device
        if commit is None:  # after the prompt: the draft model holds all of it but the root
            self.session.settle()
            base = self.session.length
            feed, start = torch.tensor([tokens[-1], 0, base], device=device).split([2, 1])
            fed = 1
        else:
            last_base, chain = self._last
            kept = min(commit.host_count, n)  # a chain: the replayed count unless the chain is shorter; or the count
            base = last_base + kept + 1  # the target's length after its commit, where the bonus token goes
            fed = 2 if kept == n else 1  # a whole chain kept: its last token has not been through the draft model
            root = commit.scalars[:1]
            feed = torch.cat([chain[n - 1 :], root]) if fed == 2 else torch.cat([root, root])  # one padding row
            start = commit.scalars[1:] - (fed - 1)
        if fed not in self._counts:
            self._counts[fed] = torch.tensor(fed, device=device)
        best, _ = runner.chain_on_device(feed, self._counts[fed], start[0], self.session.layers, best_only=True)
        drafted = [best.view(1)]
        positions = start + fed + torch.arange(n - 1, device=device)  # the drafted tokens' slots but the last's
        for i in range(n - 1):
            best, _ = runner.chain_on_device(drafted[-1], self._counts[1], positions[i], self.session.layers,
                                             best_only=True)
            drafted.append(best.view(1).clone())  # each pass replays one graph, which rewrites its output buffer
        chain = torch.cat(drafted)
        self._last = (base, chain)
        return chain_tree(chain)


def build(conf: DraftModelConf, ctx: DraftContext, parts: Parts) -> DraftModelDrafter:
    return DraftModelDrafter(ctx, parts.session(parts.model(conf.model, conf.quant)), conf.num_tokens)


register(DraftModelConf, build)
