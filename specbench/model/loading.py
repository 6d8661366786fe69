"""Build a native model from a hub id, a local checkpoint directory, or a config alone (shape-only).

Weights are materialised one module group at a time (embeddings, each decoder layer, final norm, LM head), so
a quantizer can swap a layer's linears before the next layer is allocated and a 70B model quantized at load
time never needs its 16-bit weights on the GPU all at once. A checkpoint's separate q/k/v and gate/up tensors
are concatenated into the model's stacked linears as they are read (``transformer.stack_parts``).
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
from specbench.model.rope import rope_inv_freq
from specbench.model.transformer import Transformer, stack_parts

FLOAT_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)  # a cached buffer in older Llama checkpoints, recomputed from config
WEIGHT_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt", "*.jinja"]
TOKENIZER_PATTERNS = ["*.json", "tokenizer*", "*.model", "*.txt", "*.jinja"]


class ModelSourceError(ValueError):
    """The model id or path cannot be resolved, or its weights are missing."""


class GroupQuantizer(Protocol):
    """Called on each module group after its 16-bit tensors are in place.

    ``extra`` holds the checkpoint tensors of the group that filled no dense parameter (e.g. GPTQ's
    ``qweight``/``qzeros``/``scales``, or int8/fp8 ``weight`` codes); ``missing`` the dense parameter names
    left unfilled, under the checkpoint's names (``self_attn.q_proj.weight``, not the stacked ``qkv``). The
    quantizer swaps linears in place, pops the tensors it reads from ``extra`` and returns the names from
    ``missing`` it has now provided; whatever is left in ``extra`` stops the load.
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
        self.unread = set(weight_map)

    def tensors(self, prefix: str) -> dict[str, torch.Tensor]:
        """All tensors whose key starts with ``prefix``, keyed by the rest of the name."""
        from safetensors import safe_open

        by_file: dict[str, list[str]] = {}
        for key, file in self.weight_map.items():
            if key.startswith(prefix):
                by_file.setdefault(file, []).append(key)
                self.unread.discard(key)
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


def fill_random(group: nn.Module, generator: torch.Generator, gain: float | None = None) -> None:
    """Shape-only weights: norms 1, biases 0, everything else N(0, 0.02), or with ``gain`` N(0, gain² / fan_in)."""
    for name, param in group.named_parameters():
        if name.endswith("norm.weight") or name == "weight" and param.dim() == 1:
            param.data.fill_(1.0)
        elif name.endswith("bias"):
            param.data.zero_()
        else:
            std = 0.02 if gain is None else gain / param.shape[-1] ** 0.5
            param.data.normal_(0.0, std, generator=generator)


def _fill_from_checkpoint(group: nn.Module, tensors: dict[str, torch.Tensor]) -> set[str]:
    """Copy matching 16/32-bit tensors into ``group``; remove them from ``tensors``; return the names not filled
    (a stacked linear's by its parts' checkpoint names).

    Integer and fp8 tensors stay in ``tensors``: they are quantized codes, for the quantizer to read."""
    try:
        stacks = stack_parts(group, tensors)
    except ValueError as err:
        raise ModelSourceError(str(err)) from err
    missing = set()
    for name, param in group.named_parameters():
        if name in tensors and tensors[name].dtype in FLOAT_DTYPES:
            source = tensors.pop(name)
            if source.shape != param.shape:
                raise ModelSourceError(f"checkpoint tensor {name} has shape {tuple(source.shape)}, expected {tuple(param.shape)}")
            param.data.copy_(source)
        else:
            linear, _, suffix = name.rpartition(".")
            missing |= {f"{p}.{suffix}" for p in stacks[linear]} if linear in stacks else {name}
    return missing


def _check_consumed(checkpoint: Path, prefix: str, missing: set[str], extra: dict[str, torch.Tensor]) -> None:
    """Raise unless every parameter of the group was filled and every checkpoint tensor of it was used."""
    wrong_dtype = sorted(f"{prefix}{m} ({extra[m].dtype})" for m in missing
                         if m in extra and extra[m].dtype not in FLOAT_DTYPES)
    if wrong_dtype:
        raise ModelSourceError(
            f"checkpoint tensors {wrong_dtype} hold quantized codes where float weights are expected; if the "
            "checkpoint is quantized, give its config.json the quantization_config it was written with and set "
            "quant=auto"
        )
    if missing:  # of a stacked linear, the parts absent (the others are then left unused)
        absent = [m for m in missing if m not in extra] or missing
        raise ModelSourceError(f"checkpoint {checkpoint} lacks {sorted(prefix + m for m in absent)}")
    unused = sorted(prefix + k for k in extra if not k.endswith(IGNORED_SUFFIXES))
    if unused:
        raise ModelSourceError(
            f"checkpoint {checkpoint} has tensors the model does not use: {unused}; its config.json does not "
            "describe them (a bias or layer the decoder does not build, or a quantization format left undetected)"
        )


def _check_all_read(reader: CheckpointReader, model: Transformer) -> None:
    """Raise if tensors outside every module group were never read (a tied head's copy must equal the embeddings)."""
    if model.config.tie_word_embeddings and "lm_head.weight" in reader.unread:
        head = reader.tensors("lm_head.")
        if set(head) != {"weight"} or not torch.equal(head["weight"].to(model.model.embed_tokens.weight),
                                                       model.model.embed_tokens.weight):
            raise ModelSourceError("tie_word_embeddings is true but the checkpoint's lm_head differs from "
                                   "embed_tokens; set tie_word_embeddings=false in its config.json")
    unused = sorted(k for k in reader.unread if not k.endswith(IGNORED_SUFFIXES))
    if unused:
        raise ModelSourceError(f"checkpoint {reader.directory} has tensors the model does not use: {unused}")


def build_model(
    config: ModelConfig,
    *,
    checkpoint: Path | None = None,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
    quantizer: GroupQuantizer | None = None,
    linear: type[nn.Linear] = nn.Linear,
) -> Transformer:
    """Materialise a model group by group: from ``checkpoint`` or, when it is None, random (shape-only).

    ``linear``: the class of the dense linears (the kernel of 16-bit matmuls, e.g. ``gemv.GemvLinear``)."""
    device = torch.device(device)
    with torch.device("meta"):
        model = Transformer(config, linear)
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
        _check_consumed(checkpoint, prefix, missing, extra)
    if reader is not None:
        _check_all_read(reader, model)
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
        if quantizer is not None:
            quantizer(model.lm_head, "lm_head.", {}, set())
    model.inv_freq = rope_inv_freq(config).to(device)
    return model.eval().requires_grad_(False)


def _refuse_quantized(source: str, hf_config: dict) -> None:
    """A quantized checkpoint loaded without a quantizer would read its codes as float weights: stop."""
    from specbench.quantization.checkpoint import detect

    reader = detect(hf_config)
    if reader is not None:
        raise ModelSourceError(
            f"{source} is a {reader.method} checkpoint ({', '.join(reader.schemes)}); loading it as dense weights "
            "would read its quantized codes as floats. Set quant=auto to load it as it is (or give load_model a "
            "quantizer from build_quantizer('auto', ...))"
        )


def load_model(
    source: str,
    *,
    shape_only: bool = False,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
    quantizer: GroupQuantizer | None = None,
    overrides: dict | None = None,
    linear: type[nn.Linear] = nn.Linear,
) -> Transformer:
    """Load ``source`` (shipped name, hub id or folder); ``shape_only`` uses its config with random weights;
    ``linear`` as in ``build_model``."""
    hf_config = load_hf_config(source)
    config = ModelConfig.from_hf(hf_config, **(overrides or {}))
    if quantizer is None and not shape_only:
        _refuse_quantized(source, hf_config)
    if shape_only:
        return build_model(config, device=device, dtype=dtype, seed=seed, quantizer=quantizer, linear=linear)
    if overrides and "num_hidden_layers" in overrides:
        raise ModelSourceError("num_hidden_layers can only be overridden with model.shape_only=true")
    return build_model(config, checkpoint=resolve_checkpoint(source), device=device, dtype=dtype, seed=seed,
                       quantizer=quantizer, linear=linear)
