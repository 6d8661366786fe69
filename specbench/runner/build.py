"""Build what a run needs from its config: target, tokenizer, sessions and drafters."""

from __future__ import annotations

import torch
from omegaconf import DictConfig, OmegaConf

from specbench.decoding.acceptance import accept
from specbench.decoding.forward import ForwardRunner
from specbench.decoding.sampling import SamplingParams
from specbench.decoding.session import ModelSession
from specbench.drafters import DraftContext, build_drafter
from specbench.drafters.eagle3_head import load_eagle3_head, random_eagle3_head
from specbench.drafters.eagle_head import load_eagle_head, random_eagle_head
from specbench.model import Transformer, load_hf_config, load_model
from specbench.model.loading import TOKENIZER_PATTERNS, ModelSourceError, resolve_checkpoint
from specbench.model.registry import shipped_path
from specbench.quantization import build_quantizer

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16}


def torch_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"runtime.dtype={name!r} is not one of {sorted(DTYPES)}")
    return DTYPES[name]


def build_model(model_cfg: DictConfig, quant_cfg: DictConfig, runtime: DictConfig) -> Transformer:
    """Load (or, shape-only, randomly initialise) a model and quantize it as ``quant_cfg`` says."""
    hf_config = load_hf_config(model_cfg.source)
    quantizer = None
    if quant_cfg.scheme != "none":
        options = {"group_size": quant_cfg.group_size, "quantize_lm_head": quant_cfg.quantize_lm_head,
                   "rotated": quant_cfg.rotated}
        if quant_cfg.symmetric is not None:
            options["sym"] = quant_cfg.symmetric
        quantizer = build_quantizer(quant_cfg.scheme, quant_cfg.backend, hf_config, **options)
    model = load_model(model_cfg.source, shape_only=model_cfg.shape_only, device=runtime.device,
                       dtype=torch_dtype(runtime.dtype), seed=runtime.seed, quantizer=quantizer,
                       overrides=OmegaConf.to_container(model_cfg.overrides))
    model.rotated = bool(quant_cfg.rotated)
    model.source = model_cfg.source
    return model


def load_tokenizer(model_cfg: DictConfig):
    """The tokenizer of ``model.tokenizer`` (default: the model's own); shipped configs fetch it from the hub."""
    from transformers import AutoTokenizer

    source = model_cfg.tokenizer or model_cfg.source
    try:
        return AutoTokenizer.from_pretrained(str(shipped_path(source) or resolve_checkpoint(source, TOKENIZER_PATTERNS)))
    except ModelSourceError as err:
        raise ModelSourceError(f"{err}\nA shape-only run still needs a tokenizer for real prompts: set "
                               "model.tokenizer to a local folder, or use dataset=synthetic.") from err


def session_for(model: Transformer, cfg: DictConfig) -> ModelSession:
    if cfg.timing.fuse_projections:
        model.fuse_projections()
    if cfg.timing.gemv and next(model.parameters()).is_cuda:
        model.use_gemv()
    return ModelSession(ForwardRunner(model, cfg.runtime.max_seq_len, cuda_graphs=cfg.timing.cuda_graphs,
                                      compile=cfg.timing.compile, compile_mode=cfg.timing.compile_mode))


def sampling_params(runtime: DictConfig) -> SamplingParams:
    return SamplingParams(runtime.temperature, runtime.top_p, runtime.top_k)


def _head(drafter_cfg: DictConfig, model: Transformer, seed: int, eagle3: bool):
    if drafter_cfg.head == "random":  # shape-only timing: a head of the right shapes with random weights
        return (random_eagle3_head if eagle3 else random_eagle_head)(model, seed)
    return (load_eagle3_head if eagle3 else load_eagle_head)(drafter_cfg.head, model, target_rotated=model.rotated)


def make_drafter(drafter_cfg: DictConfig, target: ModelSession, cfg: DictConfig, generator: torch.Generator,
                 acceptor=accept):
    """Build the drafter ``drafter_cfg`` (a node of conf/drafter/) against ``target``."""
    ctx = DraftContext(target, sampling_params(cfg.runtime), generator, acceptor)
    settings = {k: v for k, v in OmegaConf.to_container(drafter_cfg, resolve=True).items()
                if k not in ("name", "model", "quant", "head", "first_level", "label")}
    name = drafter_cfg.name
    if name == "hierspec" and drafter_cfg.get("first_level", "eagle") not in ("eagle", "eagle3"):
        raise ValueError(f"drafter.first_level={drafter_cfg.first_level!r}: use eagle or eagle3")
    if name in ("draft_model", "hierspec"):
        second = build_model(drafter_cfg.model, drafter_cfg.get("quant") or OmegaConf.create({"scheme": "none",
                             "backend": "reference", "rotated": False}), cfg.runtime)
        settings["session"] = session_for(second, cfg)
        if name == "hierspec":
            settings["head"] = _head(drafter_cfg, second, cfg.runtime.seed, drafter_cfg.get("first_level") == "eagle3")
    elif name in ("eagle", "eagle3"):
        settings["head"] = _head(drafter_cfg, target.model, cfg.runtime.seed, name == "eagle3")
    return build_drafter(name, ctx, **settings)


