"""Schemas of what a model is (``model``, ``quant``) and how it runs (``engine``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from omegaconf import MISSING


@dataclass
class ModelConf:
    source: str = MISSING  # short name (see specbench.model.registry), hub id or local folder
    shape_only: bool = False  # random weights from the config: real timings, meaningless acceptance
    tokenizer: Optional[str] = None  # defaults to ``source``
    overrides: dict = field(default_factory=dict)  # ModelConfig fields, e.g. {num_hidden_layers: 2}


@dataclass
class QuantConf:
    scheme: str = "none"  # none | auto (checkpoint's) | fp16 | bf16 | w8a8_int8 | w8a8_fp8 | w4a16 | w4a8 | w4a8_fp8
    backend: str = "reference"  # reference | torch | gemlite | marlin | triton | auto (per scheme and GPU)
    rotated: bool = False  # rotation folded into the weights (SpecMQuant -Rot / QQQ checkpoints)
    group_size: Optional[int] = None
    symmetric: Optional[bool] = None
    quantize_lm_head: bool = False


@dataclass
class EngineConf:
    """How every model of a run executes; what is measured lives in ``timing``."""

    cuda_graphs: bool = True
    compile: bool = False  # torch.compile each graph bucket's forward (fuses norms, RoPE, small kernels)
    compile_mode: Optional[str] = None  # torch.compile mode, e.g. max-autotune-no-cudagraphs (Triton GEMMs timed)
    compile_scope: Optional[str] = None  # null: each bucket's whole forward; layer: a layer's halves, shared by all
    fuse_projections: bool = True  # true only: q/k/v and gate/up are always stacked (key kept for older configs)
    gemv: bool = True  # on a GPU, 16-bit linears are built to run one-row calls (decode) by the Triton GEMV, not cuBLAS
    device_loop: bool = True  # on a GPU, greedy/replayed AR, EAGLE, n-gram, HierSpec and draft-model steps are enqueued from the device (DeviceLoop)
