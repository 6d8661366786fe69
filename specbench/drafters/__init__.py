"""Drafters: none (autoregressive), ngram, draft_model, eagle, eagle3, layer_skip, hierspec."""

from specbench.drafters import draft_model, eagle, eagle3, hierspec, layer_skip, ngram  # noqa: F401  (registration)
from specbench.drafters.base import DRAFTERS, DraftContext, Drafter, build_drafter

__all__ = ["DRAFTERS", "DraftContext", "Drafter", "build_drafter"]
