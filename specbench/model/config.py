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
    attention_bias: bool = False
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
            attention_bias=cfg.get("attention_bias", model_type == "qwen2"),
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
        norms = 2 * h + (2 * self.head_dim if self.qk_norm else 0)
        per_layer = attn + 3 * h * self.intermediate_size + norms
        embed = self.vocab_size * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        total = per_layer * self.num_hidden_layers + embed + head + h
        return {"per_layer": per_layer, "embedding": embed, "lm_head": head, "total": total}
