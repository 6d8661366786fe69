"""Tiny models built from configs, written in the published checkpoint layouts; nothing touches the Hub."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The tests run tiny models: one thread avoids oversubscribing CI's two cores (10-100x faster small ops).
torch.set_num_threads(1)

CONF = Path(__file__).resolve().parents[1] / "conf"
TINY = dict(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512)


def tiny_hf_config(model_type: str = "llama", **changes):
    """A transformers config for a tiny model of ``model_type`` (llama, llama3, qwen2, qwen3, mistral)."""
    from transformers import LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config

    values = dict(TINY, **changes)
    if model_type == "llama3":
        values.setdefault("rope_theta", 500000.0)
        values.setdefault("rope_scaling", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                           "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
        return LlamaConfig(**values)
    cls = {"llama": LlamaConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config, "mistral": MistralConfig}[model_type]
    if model_type == "qwen3":
        values.setdefault("head_dim", 32)
    return cls(**values)


def tiny_hf_model(model_type: str = "llama", seed: int = 0, **changes):
    """A transformers causal LM with random weights (fp32), norms and biases randomised too."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_hf_config(model_type, **changes), attn_implementation="eager")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "bias" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


@pytest.fixture
def save_hf(tmp_path):
    """Save a transformers model as sharded safetensors; return the folder."""

    def save(model, name="ckpt"):
        path = tmp_path / name
        model.save_pretrained(path, max_shard_size="50KB")
        return path

    return save


def write_eagle_head(path, hf_model, seed: int = 0, scale: float = 0.05, rotation: bool = False):
    """Write an EAGLE-1 head for ``hf_model`` in the published layout (config.json + safetensors)."""
    import json

    from safetensors.torch import save_file

    path.mkdir(parents=True, exist_ok=True)
    cfg = hf_model.config.to_dict()
    cfg.update(num_hidden_layers=1, bias=True)
    (path / "config.json").write_text(json.dumps(cfg))
    g = torch.Generator().manual_seed(seed)
    h = hf_model.config.hidden_size
    weights = {
        k.removeprefix("model."): v.clone()
        for k, v in hf_model.state_dict().items()
        if k.startswith("model.layers.0.") and "input_layernorm" not in k
    }
    # fc starts as "pass the feature through" plus noise, so the head roughly predicts the next state
    weights["fc.weight"] = torch.cat([scale * torch.randn(h, h, generator=g), torch.eye(h)], dim=1)
    weights["fc.bias"] = torch.zeros(h)
    if rotation:
        q, _ = torch.linalg.qr(torch.randn(h, h, generator=g))
        weights["rms_norm_rotation.weight"] = q
        weights["lm_head.weight"] = hf_model.lm_head.weight.detach().clone()
    save_file({k: v.contiguous() for k, v in weights.items()}, path / "model.safetensors")
    return path


def write_eagle3_head(path, hf_model, layers, seed: int = 0, scale: float = 0.05, draft_fraction: float = 0.75,
                      own_embeddings: bool = False, fmt: str = "safetensors"):
    """Write an EAGLE-3 head for ``hf_model`` in the published layout: ``config.json`` with ``draft_vocab_size``
    and ``eagle_aux_hidden_state_layer_ids`` = ``layers``, ``fc``, ``midlayer.*``, ``norm``, ``lm_head`` over a
    random sorted subset of the vocabulary, ``d2t`` (offsets) and ``t2d``; ``fmt`` "bin" writes pytorch_model.bin.

    Random weights with some of the target's: ``fc`` passes the high layer's state through, the attention reads
    the embedding half with the target's first-layer projections, the MLP, final norm and LM head are the
    target's, so drafts are sometimes right.
    """
    import json

    from safetensors.torch import save_file

    path.mkdir(parents=True, exist_ok=True)
    c = hf_model.config
    h, vocab = c.hidden_size, c.vocab_size
    g = torch.Generator().manual_seed(seed)
    keep = torch.randperm(vocab, generator=g)[: int(draft_fraction * vocab)].sort().values
    cfg = c.to_dict()
    cfg.update(num_hidden_layers=1, draft_vocab_size=keep.numel(), eagle_aux_hidden_state_layer_ids=list(layers),
               architectures=["LlamaForCausalLMEagle3"])
    (path / "config.json").write_text(json.dumps(cfg))
    sd = {k: v.detach() for k, v in hf_model.state_dict().items()}
    first, last = "model.layers.0.", f"model.layers.{c.num_hidden_layers - 1}."

    def noise(*shape):
        return scale * torch.randn(*shape, generator=g)

    weights = {"fc.weight": torch.cat([noise(h, h), noise(h, h), torch.eye(h)], dim=1),
               "midlayer.input_layernorm.weight": 1 + noise(h), "midlayer.hidden_norm.weight": 1 + noise(h),
               "midlayer.post_attention_layernorm.weight": sd[last + "post_attention_layernorm.weight"],
               "midlayer.self_attn.o_proj.weight": sd[first + "self_attn.o_proj.weight"],
               "norm.weight": sd["model.norm.weight"], "lm_head.weight": sd["lm_head.weight"][keep],
               "d2t": keep - torch.arange(keep.numel()),
               "t2d": torch.zeros(vocab, dtype=torch.bool).index_fill(0, keep, True)}
    for name in ("q_proj", "k_proj", "v_proj"):
        w = sd[first + f"self_attn.{name}.weight"]
        weights[f"midlayer.self_attn.{name}.weight"] = torch.cat([w, noise(*w.shape)], dim=1)
    for name in ("gate_proj", "up_proj", "down_proj"):
        weights[f"midlayer.mlp.{name}.weight"] = sd[last + f"mlp.{name}.weight"]
    if own_embeddings:
        weights["embed_tokens.weight"] = sd["model.embed_tokens.weight"]
    weights = {k: v.clone().contiguous() for k, v in weights.items()}
    if fmt == "bin":
        torch.save(weights, path / "pytorch_model.bin")
    else:
        save_file(weights, path / "model.safetensors")
    return path
@pytest.fixture(scope="module")
def hydra_compose():
    """``make(*overrides)``: the composed run config of ``conf/`` (cached per module)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from specbench.runner.config import register_schemas

    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cache = {}

        def make(*overrides, hydra_cfg=False):
            key = (overrides, hydra_cfg)
            if key not in cache:
                cache[key] = compose("config", overrides=list(overrides), return_hydra_config=hydra_cfg)
            return cache[key]

        yield make
    GlobalHydra.instance().clear()


def run_in_interpreter(script: str) -> str:
    """Run ``script`` in a subprocess under Triton's interpreter: what it printed, or its exit code and the end of
    its error output when it failed (the calling test compares with what the script prints on success)."""
    triton = pytest.importorskip("triton")
    if tuple(int(v) for v in triton.__version__.split(".")[:2]) < (3, 9):
        # 3.6's rounds tl.fma twice, and on the GPU machines' image it stops on "only 0-dimensional arrays can be
        # converted to Python scalars" in the W4A16 and W4A8 kernels
        pytest.skip(f"the interpreter tests need Triton >= 3.9 (the CPU suite's), not {triton.__version__}")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900,
                          cwd=root)
    return proc.stdout.strip() if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr[-3000:]}"
