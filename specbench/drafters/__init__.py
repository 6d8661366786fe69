"""Drafters: none (autoregressive), ngram, draft_model, eagle, eagle3, layer_skip, hierspec; one registry entry each."""

from specbench.decoding.drafter import DraftContext, Drafter
from specbench.drafters import draft_model, eagle, eagle3, hierspec, layer_skip, ngram, none  # noqa: F401  (registration)
from specbench.drafters.registry import DRAFTERS, DrafterConf, build_drafter, drafter_conf

__all__ = ["DRAFTERS", "DraftContext", "Drafter", "DrafterConf", "build_drafter", "drafter_conf"]
