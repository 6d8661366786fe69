"""Tiny target + drafters of every kind, built from configs with random weights, for the lossless tests."""

from __future__ import annotations

import torch

from specbench.decoding.forward import ForwardRunner
from specbench.decoding.sampling import SamplingParams
from specbench.decoding.session import ModelSession
from specbench.drafters import DraftContext, build_drafter
from specbench.drafters.eagle3_head import load_eagle3_head
from specbench.drafters.eagle_head import load_eagle_head
from specbench.model import load_model
from tests.conftest import tiny_hf_model, write_eagle3_head, write_eagle_head

MAX_SEQ = 256


class Stack:
    """A target with a draft model (other weights), an intermediate (the target's weights) and EAGLE heads.

    ``hierspec3`` is HierSpec with an EAGLE-3 first level.
    """

    def __init__(self, tmp_path, *, lm_scale: float = 8.0, **config):
        self.hf = tiny_hf_model("llama", **config)
        with torch.no_grad():
            self.hf.lm_head.weight.mul_(lm_scale)  # peakier logits: repetitive text, decisive argmaxes
        self.hf.save_pretrained(tmp_path / "target")
        draft = tiny_hf_model("llama", seed=7, **dict(config, num_hidden_layers=1))
        with torch.no_grad():
            draft.lm_head.weight.mul_(lm_scale)
        draft.save_pretrained(tmp_path / "draft")
        write_eagle_head(tmp_path / "eagle", self.hf)
        for name, model in (("eagle3", self.hf), ("eagle3_draft", draft)):  # EAGLE-3 heads for target and draft
            layers = model.config.num_hidden_layers
            write_eagle3_head(tmp_path / name, model, [min(1, layers - 1), layers // 2, layers - 1])
        self.path = tmp_path
        self.target = load_model(str(tmp_path / "target"), dtype=torch.float32)
        self.session = ModelSession(ForwardRunner(self.target, MAX_SEQ))
        self.draft_model = load_model(str(tmp_path / "draft"), dtype=torch.float32)
        self.intermediate = load_model(str(tmp_path / "target"), dtype=torch.float32)

    def drafter(self, name: str, sampling: SamplingParams = SamplingParams(), generator=None, strong: bool = False,
                **settings):
        """``strong``: the draft model / intermediate is a copy of the target; ``settings`` override defaults."""
        ctx = DraftContext(self.session, sampling, generator)
        second = self.intermediate if strong else self.draft_model
        if name == "none":
            return build_drafter("none", ctx)
        if name == "ngram":
            return build_drafter("ngram", ctx, **{"min_n": 1, "max_n": 3, "num_tokens": 4, **settings})
        if name == "draft_model":
            return build_drafter("draft_model", ctx, session=ModelSession(ForwardRunner(second, MAX_SEQ)),
                                 **{"num_tokens": 4, **settings})
        if name == "eagle":
            head = load_eagle_head(str(self.path / "eagle"), self.target)
            return build_drafter("eagle", ctx, head=head, **{"topk": 3, "depth": 3, "tree_size": 10, **settings})
        if name == "layer_skip":
            return build_drafter("layer_skip", ctx, **{"keep_fraction": 0.5, "num_tokens": 3, **settings})
        if name == "eagle3":
            head = load_eagle3_head(str(self.path / "eagle3"), self.target)
            return build_drafter("eagle3", ctx, head=head, **{"topk": 3, "depth": 3, "tree_size": 10, **settings})
        if name in ("hierspec", "hierspec3"):
            session = ModelSession(ForwardRunner(second, MAX_SEQ))
            if name == "hierspec":
                head = load_eagle_head(str(self.path / "eagle"), second)
            else:
                head = load_eagle3_head(str(self.path / ("eagle3" if strong else "eagle3_draft")), second)
            return build_drafter("hierspec", ctx, session=session, head=head,
                                 **{"min_draft": 4, "inner_depth": 2, "inner_tree_size": 6, "topk": 3, **settings})
        raise KeyError(name)


DRAFTERS = ["ngram", "draft_model", "eagle", "eagle3", "layer_skip", "hierspec", "hierspec3"]
