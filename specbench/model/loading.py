"""Build a native model from a hub id, a local checkpoint directory, or a config alone (shape-only).

Weights are materialised one module group at a time (embeddings, each decoder layer, final norm, LM head), so
a quantizer can swap a layer's linears before the next layer is allocated and a 70B model quantized at load
time never needs its 16-bit weights on the GPU all at once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator, Protocol

import torch
from torch import nn

from specbench.model.config import ModelConfig
from specbench.model.registry import known_model, shipped_path
from specbench.model.transformer import Transformer, rope_inv_freq

WEIGHT_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt", "*.jinja"]
TOKENIZER_PATTERNS = ["*.json", "tokenizer*", "*.model", "*.txt", "*.jinja"]


class ModelSourceError(ValueError):
    """The model id or path cannot be resolved, or its weights are missing."""


class GroupQuantizer(Protocol):
    """Called on each module group after its 16-bit tensors are in place.

    ``extra`` holds the checkpoint tensors of the group that matched no dense parameter (e.g. GPTQ's
    ``qweight``/``qzeros``/``scales``); ``missing`` the dense parameter names the checkpoint lacked. The
    quantizer swaps linears in place and returns the names from ``missing`` it has now provided.
    """

    def __call__(self, group: nn.Module, prefix: str, extra: dict[str, torch.Tensor], missing: set[str]) -> set[str]: ...


def resolve_checkpoint(source: str, patterns: list[str] = WEIGHT_PATTERNS) -> Path:
    """Return a local directory holding ``source``'s config, weights and tokenizer (downloading a hub id).

    ``patterns`` limits what a download fetches (``TOKENIZER_PATTERNS``: no weights)."""
    path = shipped_path(source) or Path(os.path.expanduser(source))
    known = known_model(source)
    if known is not None and not path.exists():
        source = known.hub_id
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelSourceError(f"{path} has no config.json; point model.source at a Hugging Face checkpoint folder")
        return path
    if source.startswith((".", "/", "~")) or source.count("/") != 1:
        raise ModelSourceError(
            f"model source {source!r} is neither an existing folder nor a hub id of the form 'org/name'"
        )
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(source, allow_patterns=patterns))
    except Exception as err:  # network, auth, or not-found errors all end here
        raise ModelSourceError(
            f"could not fetch {source!r} from the Hugging Face Hub ({type(err).__name__}: {err}). Download it "
            "first (`hf download ID --local-dir DIR`) and pass the local folder, log in for gated models, or set "
            "model.shape_only=true to time the architecture with random weights."
        ) from err


def load_hf_config(source: str) -> dict:
    """The ``config.json`` of a shipped model name, local folder or hub id (shipped configs need no download)."""
    known = known_model(source)
    if known is not None and not Path(source).exists():
        return known.shipped_config()
    if shipped_path(source) is not None:
        source = str(shipped_path(source))
    return json.loads((resolve_checkpoint(source) / "config.json").read_text())


class CheckpointReader:
    """Lazy access to the tensors of a (possibly sharded) safetensors checkpoint, by key prefix."""

    def __init__(self, directory: Path):
        index = directory / "model.safetensors.index.json"
        if index.is_file():
            weight_map = json.loads(index.read_text())["weight_map"]
        else:
            files = sorted(directory.glob("*.safetensors"))
            if not files:
                raise ModelSourceError(
                    f"{directory} holds no *.safetensors weights; convert .bin checkpoints with "
                    "transformers' save_pretrained(safe_serialization=True) or use model.shape_only=true"
                )
            from safetensors import safe_open

            weight_map = {}
            for f in files:
                with safe_open(f, "pt") as handle:
                    weight_map.update(dict.fromkeys(handle.keys(), f.name))
        self.directory = directory
        self.weight_map = weight_map

    def tensors(self, prefix: str) -> dict[str, torch.Tensor]:
        """All tensors whose key starts with ``prefix``, keyed by the rest of the name."""
        from safetensors import safe_open

        by_file: dict[str, list[str]] = {}
        for key, file in self.weight_map.items():
            if key.startswith(prefix):
                by_file.setdefault(file, []).append(key)
        out = {}
        for file, keys in by_file.items():
            with safe_open(self.directory / file, "pt") as handle:
                for key in keys:
                    out[key[len(prefix) :]] = handle.get_tensor(key)
        return out


def module_groups(model: Transformer) -> Iterator[tuple[str, nn.Module]]:
    yield "model.embed_tokens.", model.model.embed_tokens
    for i, layer in enumerate(model.model.layers):
        yield f"model.layers.{i}.", layer
    yield "model.norm.", model.model.norm
    if not model.config.tie_word_embeddings:
        yield "lm_head.", model.lm_head


def fill_random(group: nn.Module, generator: torch.Generator) -> None:
    """Shape-only weights: norms 1, biases 0, everything else N(0, 0.02)."""
    for name, param in group.named_parameters():
        if name.endswith("norm.weight") or name == "weight" and param.dim() == 1:
            param.data.fill_(1.0)
        elif name.endswith("bias"):
            param.data.zero_()
        else:
            param.data.normal_(0.0, 0.02, generator=generator)


def _fill_from_checkpoint(group: nn.Module, tensors: dict[str, torch.Tensor]) -> set[str]:
    """Copy matching tensors into ``group``; remove them from ``tensors``; return the names not found."""
    missing = set()
    for name, param in group.named_parameters():
        if name in tensors:
            source = tensors.pop(name)
            if source.shape != param.shape:
                raise ModelSourceError(f"checkpoint tensor {name} has shape {tuple(source.shape)}, expected {tuple(param.shape)}")
            param.data.copy_(source)
        else:
            missing.add(name)
    return missing


def build_model(
    config: ModelConfig,
    *,
    checkpoint: Path | None = None,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
    quantizer: GroupQuantizer | None = None,
) -> Transformer:
    """Materialise a model group by group: from ``checkpoint`` or, when it is None, random (shape-only)."""
    device = torch.device(device)
    with torch.device("meta"):
        model = Transformer(config)
    reader = CheckpointReader(checkpoint) if checkpoint is not None else None
    generator = torch.Generator(device=device).manual_seed(seed)
    for prefix, group in module_groups(model):
        group.to_empty(device=device)
        group.to(dtype)
        if reader is None:
            fill_random(group, generator)
            extra, missing = {}, set()
        else:
            extra = reader.tensors(prefix)
            missing = _fill_from_checkpoint(group, extra)
        if quantizer is not None:
            missing -= quantizer(group, prefix, extra, missing)
        if missing:
            raise ModelSourceError(f"checkpoint {checkpoint} lacks {sorted(prefix + m for m in missing)}")
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
        if quantizer is not None:
            quantizer(model.lm_head, "lm_head.", {}, set())
    model.inv_freq = rope_inv_freq(config).to(device)
    return model.eval().requires_grad_(False)


def load_model(
    source: str,
    *,
    shape_only: bool = False,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
    quantizer: GroupQuantizer | None = None,
    overrides: dict | None = None,
) -> Transformer:
    """Load ``source`` (shipped name, hub id or folder); ``shape_only`` uses its config with random weights."""
    hf_config = load_hf_config(source)
    config = ModelConfig.from_hf(hf_config, **(overrides or {}))
    if shape_only:
        return build_model(config, device=device, dtype=dtype, seed=seed, quantizer=quantizer)
    if overrides and "num_hidden_layers" in overrides:
        raise ModelSourceError("num_hidden_layers can only be overridden with model.shape_only=true")
    return build_model(config, checkpoint=resolve_checkpoint(source), device=device, dtype=dtype, seed=seed, quantizer=quantizer)
