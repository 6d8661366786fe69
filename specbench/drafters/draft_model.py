"""A separate, smaller causal LM with the target's tokenizer drafts a sequence (2505.22179's SP(γ))."""

from __future__ import annotations

from specbench.decoding.draft import Draft
from specbench.decoding.session import ModelSession
from specbench.drafters.autoregressive import draft_chain
from specbench.drafters.base import DraftContext, Drafter, register


class TokenizerMismatchError(ValueError):
    """Draft and target do not share a vocabulary."""


def check_same_vocab(target_vocab: int, draft_vocab: int, what: str = "draft model") -> None:
    if target_vocab != draft_vocab:
        raise TokenizerMismatchError(
            f"the {what} has a vocabulary of {draft_vocab} tokens but the target has {target_vocab}; "
            "speculative decoding needs one tokenizer: pick a drafter from the target's model family"
        )


@register("draft_model")
class DraftModelDrafter(Drafter):
    """``session`` holds the draft model; its cache is rolled back to the committed prefix every step."""

    def __init__(self, ctx: DraftContext, session: ModelSession, num_tokens: int = 6):
        super().__init__(ctx)
        check_same_vocab(ctx.target.model.config.vocab_size, session.model.config.vocab_size)
        if num_tokens < 1:
            raise ValueError("draft_model.num_tokens must be >= 1")
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

    def describe(self):
        return {"drafter": self.name, "draft_num_tokens": self.num_tokens,
                "draft_model": getattr(self.session.model, "source", None)}
