"""The native decoder, its static KV cache, configs and checkpoint loading."""

from specbench.model.config import ModelConfig, UnsupportedModelError
from specbench.model.kv_cache import StaticKVCache, causal_mask, tree_mask
from specbench.model.loading import ModelSourceError, build_model, load_hf_config, load_model, resolve_checkpoint
from specbench.model.transformer import Transformer

__all__ = [
    "ModelConfig", "UnsupportedModelError", "StaticKVCache", "causal_mask", "tree_mask", "ModelSourceError",
    "build_model", "load_hf_config", "load_model", "resolve_checkpoint", "Transformer",
]
