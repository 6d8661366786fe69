"""A separate, smaller causal LM with the target's tokenizer drafts a sequence (2505.22179's SP(γ))."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """``session`` holds the draft model; its cache is rolled back to the committed prefix every step."""

    name = "draft_model"
    reads_hidden = False

    def __init__(self, ctx: DraftContext, session: ModelSession, num_tokens: int):
        super().__init__(ctx)
        check_same_vocab(ctx.target.model.config.vocab_size, session.model.config.vocab_size)
        self.session, self.num_tokens = session, num_tokens

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


def build(conf: DraftModelConf, ctx: DraftContext, parts: Parts) -> DraftModelDrafter:
    return DraftModelDrafter(ctx, parts.session(parts.model(conf.model, conf.quant)), conf.num_tokens)


register(DraftModelConf, build)
