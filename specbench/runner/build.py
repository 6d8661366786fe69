"""What a run needs besides its engine: the tokenizer and the sampling settings."""

from __future__ import annotations

from omegaconf import DictConfig

from specbench.decoding.sampling import SamplingParams
from specbench.model.loading import TOKENIZER_PATTERNS, ModelSourceError, resolve_checkpoint
from specbench.model.registry import shipped_path


def load_tokenizer(model_cfg: DictConfig):
    """The tokenizer of ``model.tokenizer`` (default: the model's own); shipped configs fetch it from the hub."""
    from transformers import AutoTokenizer

    source = model_cfg.tokenizer or model_cfg.source
    try:
        return AutoTokenizer.from_pretrained(str(shipped_path(source) or resolve_checkpoint(source, TOKENIZER_PATTERNS)))
    except ModelSourceError as err:
        raise ModelSourceError(f"{err}\nA shape-only run still needs a tokenizer for real prompts: set "
                               "model.tokenizer to a local folder, or use dataset=synthetic.") from err


def sampling_params(runtime: DictConfig) -> SamplingParams:
    return SamplingParams(runtime.temperature, runtime.top_p, runtime.top_k)
