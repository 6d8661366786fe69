"""The bytes a forward reads (``model.footprint``), against the published parameter counts of real configs."""

from __future__ import annotations

import torch

from specbench.model import ModelConfig, Transformer, load_hf_config
from specbench.model.footprint import forward_bytes


def meta_model(name: str) -> tuple[Transformer, dict]:
    """A shipped config's model on the meta device (float32, no memory) and its parameter counts."""
    config = ModelConfig.from_hf(load_hf_config(name))
    with torch.device("meta"):
        return Transformer(config), config.parameter_count()


def buffer_bytes(model: Transformer) -> int:
    return sum(b.numel() * b.element_size() for b in model.buffers())


def test_a_forward_reads_every_weight_but_the_embedding_table():
    model, count = meta_model("llama-3-8b-instruct")  # an untied lm_head: 128256 x 4096 of its own
    assert forward_bytes(model) == 4 * (count["total"] - count["embedding"]) + buffer_bytes(model)
    assert count["lm_head"] == count["embedding"] > 0


def test_a_tied_lm_head_reads_the_embedding_table_once():
    model, count = meta_model("llama-3.2-1b-instruct")
    assert model.lm_head.weight is model.model.embed_tokens.weight and count["lm_head"] == 0
    assert forward_bytes(model) == 4 * count["total"] + buffer_bytes(model)


def test_layers_a_forward_skips_are_not_read():
    model, count = meta_model("llama-3-8b-instruct")
    skipped = [model.model.layers[i] for i in (1, 5, 30)]
    assert forward_bytes(model) - forward_bytes(model, skipped) == 3 * 4 * count["per_layer"]


def test_a_forward_runners_graph_reads_the_weights_of_the_layers_it_runs():
    from specbench.config import EngineConf, ModelConf
    from specbench.decoding.forward import ForwardRunner
    from specbench.engine import Engine

    model = Engine(EngineConf(), device="cpu").model(ModelConf("tiny-target", shape_only=True))
    runner = ForwardRunner(model, 64)  # the graphs are captured on their first call, so none runs here
    whole, pruned = runner._graph((8, False), None, lambda: None), runner._graph((8, False), [0, 2], lambda: None)
    layers = model.model.layers
    assert len(layers) > 3 and whole.label == pruned.label == "tiny-target[8]"
    assert whole.reads == forward_bytes(model) > pruned.reads == forward_bytes(model, [layers[1], *layers[3:]])
