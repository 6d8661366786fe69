"""Tiny target + drafters of every kind, built through the engine from checkpoints with random weights."""

from __future__ import annotations

import torch

from specbench.config import EngineConf, ModelConf
from specbench.decoding.sampling import SamplingParams
from specbench.engine import Engine
from tests.conftest import tiny_hf_model, write_eagle3_head, write_eagle_head

MAX_SEQ = 256
# small settings of each drafter for these tiny models
SETTINGS = {"ngram": {"min_n": 1, "max_n": 3, "num_tokens": 4}, "draft_model": {"num_tokens": 4},
            "eagle": {"topk": 3, "depth": 3, "tree_size": 10}, "layer_skip": {"keep_fraction": 0.5, "num_tokens": 3},
            "hierspec": {"min_draft": 4, "inner_depth": 2, "inner_tree_size": 6, "topk": 3}}
SETTINGS["eagle3"], SETTINGS["hierspec3"] = SETTINGS["eagle"], SETTINGS["hierspec"]
SETTINGS["ngram_repeat"] = {**SETTINGS["ngram"], "on_miss": "repeat"}
KIND = {"hierspec3": "hierspec", "ngram_repeat": "ngram"}  # test variants -> the drafter they configure


class Stack:
    """A target with a draft model (other weights), an intermediate (the target's weights) and EAGLE heads.

    ``hierspec3`` is HierSpec with an EAGLE-3 first level, ``ngram_repeat`` n-gram drafting that repeats the last
    token where no n-gram recurs.
    """

    def __init__(self, tmp_path, *, lm_scale: float = 8.0, device: str = "cpu", **config):
        """``device="cuda"``: the models run there with CUDA graphs (float32)."""
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
        self.engine = Engine(EngineConf(cuda_graphs=device == "cuda", gemv=False), device=device, max_seq_len=MAX_SEQ)
        self.target = self.engine.model(ModelConf(source=str(tmp_path / "target")))
        self.session = self.engine.session(self.target)

    def drafter(self, name: str, sampling: SamplingParams = SamplingParams(), generator=None, strong: bool = False,
                **settings):
        """``strong``: the draft model / intermediate is a copy of the target; ``settings`` override defaults."""
        second = "target" if strong else "draft"
        head = {"eagle3": "eagle3", "hierspec3": "eagle3" if strong else "eagle3_draft"}.get(name, "eagle")
        conf = {"name": KIND.get(name, name), "head": str(self.path / head),
                "model": {"source": str(self.path / second)}, **SETTINGS.get(name, {}), **settings}
        if name == "hierspec3":
            conf["first_level"] = "eagle3"
        return self.engine.drafter(conf, self.session, sampling, generator)


DRAFTERS = ["ngram", "ngram_repeat", "draft_model", "eagle", "eagle3", "layer_skip", "hierspec", "hierspec3"]
