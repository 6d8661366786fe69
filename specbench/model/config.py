"""Model configuration read from a Hugging Face ``config.json``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

SUPPORTED_ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
}


class UnsupportedModelError(ValueError):
    """A checkpoint whose architecture or settings the native decoder cannot run."""


# Fields that change the computation, with the values the native decoder implements (None: absent or null).
# Biases, sliding window (Mistral), rope scaling, head_dim, q/k norm and tied embeddings are read in ``from_hf``.
IMPLEMENTED_VALUES = {
    "hidden_act": ("silu", None),
    "partial_rotary_factor": (1, 1.0, None),
    "use_sliding_window": (False, None),  # Qwen2/Qwen3: sliding window on the upper layers only
}


def _refuse_unimplemented(cfg: dict[str, Any], model_type: str) -> None:
    """Raise naming the first config field whose value the native decoder would silently ignore."""
    values = {**(cfg.get("rope_parameters") or {}), **cfg}
    for name, allowed in IMPLEMENTED_VALUES.items():
        if values.get(name) not in allowed:
            raise UnsupportedModelError(
                f"config field {name}={values[name]!r} is not implemented by specbench's decoder (it supports "
                f"{name} in {[v for v in allowed if v is not None]} or absent); the logits would differ from "
                "transformers'. Use a checkpoint without it."
            )
    kinds = set(cfg.get("layer_types") or ["full_attention"])
    if kinds != {"full_attention"} and not (model_type == "mistral" and kinds == {"sliding_attention"}):
        raise UnsupportedModelError(f"config field layer_types={sorted(kinds)} is not implemented (only "
                                    "'full_attention' layers, or Mistral's sliding window on every layer)")


@dataclass(frozen=True)
class ModelConfig:
    """The subset of a Hugging Face decoder config that shapes the native model."""

    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None
    max_position_embeddings: int = 8192
    attention_bias: bool = False  # biases on q/k/v
    o_proj_bias: bool = False
    mlp_bias: bool = False
    sliding_window: int | None = None  # a query sees only keys fewer than this many positions back
    qk_norm: bool = False
    tie_word_embeddings: bool = False
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    torch_dtype: str | None = None
    quantization_config: dict[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def from_hf(cls, cfg: dict[str, Any], **overrides: Any) -> "ModelConfig":
        """Build from the dict of a ``config.json``; ``overrides`` replace fields (e.g. fewer layers)."""
        model_type = cfg.get("model_type")
        if model_type not in SUPPORTED_ARCHITECTURES:
            raise UnsupportedModelError(
                f"model_type {model_type!r} is not supported by specbench's decoder; supported: "
                f"{sorted(SUPPORTED_ARCHITECTURES)}. Use a Llama / Mistral / Qwen2 / Qwen3 checkpoint."
            )
        rope_scaling = cfg.get("rope_scaling") or None
        rope_params = cfg.get("rope_parameters") or {}
        if rope_scaling is None and rope_params.get("rope_type", "default") != "default":
            rope_scaling = dict(rope_params)
        if rope_scaling is not None:
            kind = rope_scaling.get("rope_type", rope_scaling.get("type"))
            if kind not in ("default", "llama3", "linear"):
                raise UnsupportedModelError(
                    f"rope_scaling type {kind!r} is not supported; supported: default, linear, llama3"
                )
        _refuse_unimplemented(cfg, model_type)
        heads = cfg["num_attention_heads"]
        eos = cfg.get("eos_token_id")
        eos_ids = tuple(eos) if isinstance(eos, list) else (() if eos is None else (eos,))
        values = dict(
            model_type=model_type,
            vocab_size=cfg["vocab_size"],
            hidden_size=cfg["hidden_size"],
            intermediate_size=cfg["intermediate_size"],
            num_hidden_layers=cfg["num_hidden_layers"],
            num_attention_heads=heads,
            num_key_value_heads=cfg.get("num_key_value_heads") or heads,
            head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads,
            rms_norm_eps=cfg.get("rms_norm_eps", 1e-6),
            rope_theta=cfg.get("rope_theta", rope_params.get("rope_theta", 10000.0)),
            rope_scaling=rope_scaling,
            max_position_embeddings=cfg.get("max_position_embeddings", 8192),
            attention_bias=model_type == "qwen2" or bool(cfg.get("attention_bias")) and model_type != "mistral",
            o_proj_bias=model_type in ("llama", "qwen3") and bool(cfg.get("attention_bias")),
            mlp_bias=model_type == "llama" and bool(cfg.get("mlp_bias")),
            sliding_window=cfg.get("sliding_window") if model_type == "mistral" else None,
            qk_norm=model_type == "qwen3",
            tie_word_embeddings=cfg.get("tie_word_embeddings", False),
            bos_token_id=cfg.get("bos_token_id"),
            eos_token_ids=eos_ids,
            torch_dtype=cfg.get("torch_dtype") or cfg.get("dtype"),
            quantization_config=cfg.get("quantization_config"),
        )
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown model config override(s) {sorted(unknown)}")
        values.update(overrides)
        return cls(**values)

    def replace(self, **changes: Any) -> "ModelConfig":
        return dataclasses.replace(self, **changes)

    def parameter_count(self) -> dict[str, int]:
        """Parameters per decoder layer, in the embeddings and in the LM head (norms included)."""
        h, kv = self.hidden_size, self.num_key_value_heads * self.head_dim
        q = self.num_attention_heads * self.head_dim
        attn = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            attn += q + 2 * kv
        if self.o_proj_bias:
            attn += h
        mlp = 3 * h * self.intermediate_size + (2 * self.intermediate_size + h if self.mlp_bias else 0)
        norms = 2 * h + (2 * self.head_dim if self.qk_norm else 0)
        per_layer = attn + mlp + norms
        embed = self.vocab_size * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        total = per_layer * self.num_hidden_layers + embed + head + h
        return {"per_layer": per_layer, "embedding": embed, "lm_head": head, "total": total}
