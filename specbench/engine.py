"""The one way to assemble the decoding stack: typed configs → model → ``ForwardRunner`` → ``ModelSession`` →
``DraftContext`` → drafter. The runner, every benchmark, the probes and the tests build through ``Engine``."""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn

from specbench.config import ConfigValueError, EngineConf, ModelConf, QuantConf, check_engine
from specbench.decoding.acceptance import accept
from specbench.decoding.forward import DEFAULT_BUCKETS, ForwardRunner
from specbench.decoding.sampling import SamplingParams
from specbench.decoding.session import ModelSession
from specbench.drafters import DraftContext, Drafter, DrafterConf, build_drafter, drafter_conf
from specbench.drafters.eagle3_head import load_eagle3_head, random_eagle3_head
from specbench.drafters.eagle_head import DraftHead, load_eagle_head, random_eagle_head
from specbench.model import Transformer, gemv, load_hf_config, load_model
from specbench.quantization import build_quantizer

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16}


def torch_dtype(name: str | torch.dtype) -> torch.dtype:
    if isinstance(name, torch.dtype):
        return name
    if name not in DTYPES:
        raise ConfigValueError(f"runtime.dtype={name!r} is not allowed: use one of {sorted(DTYPES)}")
    return DTYPES[name]


def _plain(node) -> dict:
    """A config node (``DictConfig``, dataclass or dict) as a plain dict."""
    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)
    return dataclasses.asdict(node) if dataclasses.is_dataclass(node) else dict(node)


HEADS = {"eagle": (random_eagle_head, load_eagle_head), "eagle3": (random_eagle3_head, load_eagle3_head)}


class Engine:
    """Builds models, their sessions, EAGLE heads and drafters on one device, dtype and execution setting.

    Every call loads afresh: a model holds one KV cache, so two sessions never share a model object.
    """

    def __init__(self, execution: EngineConf | DictConfig | None = None, *, device: str = "cpu",
                 dtype: str | torch.dtype = "float32", seed: int = 0, max_seq_len: int = 2048,
                 buckets=DEFAULT_BUCKETS):
        self.execution = execution if execution is not None else EngineConf()
        check_engine(self.execution)
        self.device, self.dtype, self.seed, self.max_seq_len = device, dtype, seed, max_seq_len
        self.buckets = tuple(buckets)

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Engine:
        """The engine of a run config (``engine`` and ``runtime`` groups)."""
        rt = cfg.runtime
        return cls(cfg.engine, device=rt.device, dtype=rt.dtype, seed=rt.seed, max_seq_len=rt.max_seq_len)

    def model(self, model: ModelConf | DictConfig, quant: QuantConf | DictConfig | None = None) -> Transformer:
        """Load (or, shape-only, randomly initialise) ``model`` and quantize it as ``quant`` says."""
        quant = QuantConf(**_plain(quant)) if quant is not None else QuantConf()
        model = ModelConf(**_plain(model))
        quantizer = None
        if quant.scheme != "none":
            options = {"group_size": quant.group_size, "quantize_lm_head": quant.quantize_lm_head,
                       "rotated": quant.rotated}
            if quant.symmetric is not None:
                options["sym"] = quant.symmetric
            quantizer = build_quantizer(quant.scheme, quant.backend, load_hf_config(model.source), **options)
        built = load_model(model.source, shape_only=model.shape_only, device=self.device,
                           dtype=torch_dtype(self.dtype), seed=self.seed, quantizer=quantizer,
                           overrides=dict(model.overrides), linear=self.linear())
        built.rotated = bool(quant.rotated)
        built.source, built.shape_only = model.source, model.shape_only
        return built

    def linear(self) -> type[nn.Linear]:
        """The class of a model's dense linears: on a GPU with ``engine.gemv``, one-row calls by the Triton GEMV."""
        if not (self.execution.gemv and torch.device(self.device).type == "cuda"):
            return nn.Linear
        if not gemv.available():
            raise RuntimeError("engine.gemv=true needs a CUDA GPU and triton: pip install -e '.[gpu]', "
                               "or set engine.gemv=false")
        return gemv.GemvLinear

    def session(self, model: Transformer, max_seq_len: int | None = None) -> ModelSession:
        """``model`` behind a ``ForwardRunner`` with this engine's execution settings, in a fresh session."""
        return ModelSession(self.runner(model, max_seq_len))

    def runner(self, module, max_seq_len: int | None = None) -> ForwardRunner:
        """A ``ForwardRunner`` (KV cache, buckets, graphs, compile) over ``module``, a model or an EAGLE head."""
        ex = self.execution
        return ForwardRunner(module, max_seq_len or self.max_seq_len, cuda_graphs=ex.cuda_graphs,
                             buckets=self.buckets, compile=ex.compile, compile_mode=ex.compile_mode,
                             compile_scope=ex.compile_scope)

    def head(self, source: str, model: Transformer, kind: str = "eagle") -> DraftHead:
        """The ``kind`` (eagle: EAGLE-1/2, eagle3) head ``source`` for ``model``; ``"random"``: right shapes,
        random weights (shape-only timing)."""
        random, load = HEADS[kind]
        if source == "random":
            return random(model, self.seed)
        return load(source, model, target_rotated=model.rotated)

    def drafter(self, conf: DrafterConf | DictConfig | dict, target: ModelSession,
                sampling: SamplingParams = SamplingParams(), generator: torch.Generator | None = None,
                acceptor: Callable = accept, *, model: Transformer | None = None,
                head: DraftHead | None = None) -> Drafter:
        """The drafter ``conf`` describes, drafting for ``target``.

        ``model`` / ``head``: the drafter's own model and EAGLE head already built (a benchmark that measures their
        size first) instead of building them from ``conf``.
        """
        parts = self if model is None and head is None else Prebuilt(self, model, head)
        target.model.feature_layers = ()  # the target's plain output unless this drafter's head asks for more
        conf = drafter_conf(conf, target_shape_only=getattr(target.model, "shape_only", False))
        return build_drafter(conf, DraftContext(target, sampling, generator, acceptor), parts)


class Prebuilt:
    """An engine's parts with a drafter model and/or head given instead of built."""

    def __init__(self, engine: Engine, model: Transformer | None, head: DraftHead | None):
        self.engine, self.given_model, self.given_head = engine, model, head

    def model(self, model: ModelConf, quant: QuantConf) -> Transformer:
        return self.given_model if self.given_model is not None else self.engine.model(model, quant)

    def session(self, model: Transformer) -> ModelSession:
        return self.engine.session(model)

    def head(self, source: str, model: Transformer, kind: str = "eagle") -> DraftHead:
        return self.given_head if self.given_head is not None else self.engine.head(source, model, kind)
