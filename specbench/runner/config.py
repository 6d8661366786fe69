"""Typed run configuration: the schemas of the Hydra config groups (``conf/``), registered in the ConfigStore."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from specbench.config import EngineConf, ModelConf, QuantConf, check_engine, require


@dataclass
class DatasetConf:
    name: str = "specbench_mini"
    path: Optional[str] = None
    categories: Optional[list] = None
    question_begin: Optional[int] = None
    question_end: Optional[int] = None
    max_new_tokens: Optional[int] = None  # None: the dataset's default
    max_turns: Optional[int] = None
    system_prompt: Optional[str] = None  # preset name (llama2) or literal text
    enable_thinking: Optional[bool] = None  # Qwen3 thinking mode
    ignore_eos: bool = False
    execute_code: bool = False  # opt in to running generated code for HumanEval pass@1 (bubblewrap sandbox, docs/datasets.md)
    synthetic_prompt_tokens: int = 128  # name=synthetic: random-token prompts, no tokenizer (shape-only timing)
    synthetic_questions: int = 8  # per task with synthetic=true
    synthetic: bool = False  # a named benchmark's tasks as random-token prompts (specbench/datasets/synthetic.py)


@dataclass
class TimingConf:
    """What is measured and how; how the model executes is the ``engine`` group (``EngineConf``)."""

    # the prefills are of every question's first turn: a new prompt length's first prefill may compile a kernel
    warmup: int = 3  # warm-up generations, then an untimed prefill of each question
    warmup_new_tokens: Optional[int] = None  # new tokens of each warm-up generation (None: the run's max_new_tokens)
    repeats: int = 1
    phase_events: bool = True  # per-phase CUDA events / perf counters in the step log
    acceptance: str = "real"  # real | replay (impose replay_tau / replay_trace on shape-only models)
    replay_tau: Optional[float] = None
    replay_trace: Optional[list] = None
    replay_inner_tau: Optional[float] = None  # HierSpec: the intermediate's own accept length
    replay_tau_by_task: Any = None  # task (or category) -> tau, over replay_tau for that task's questions
    replay_source: Optional[str] = None  # where the replayed taus come from (copied into every row)


@dataclass
class RuntimeConf:
    device: str = "cpu"  # cpu | cuda (the GPU the process sees) | cuda:auto (lease a free GPU: runner/gpu_pool.py)
    dtype: str = "float32"
    seed: int = 0
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    max_seq_len: int = 2048
    threads: Optional[int] = None  # CPU threads for torch (1 is fastest for the tiny shipped models)
    gpu_lock_dir: Optional[str] = None  # cuda:auto: the GPU lease locks (None: per user and host, see gpu_pool)
    gpu_wait_s: float = 43200.0  # cuda:auto: how long to wait for a free GPU before failing


@dataclass
class OutputConf:
    root: str = "results/runs"
    name: str = "default"  # experiment name: results go to root/name/<config hash>/
    resume: bool = True
    progress: bool = True


def register_schemas() -> None:
    from specbench.drafters import DRAFTERS  # torch and the drafters: not needed by config_hash users

    register_resolvers()
    cs = ConfigStore.instance()
    for group, node in (("model", ModelConf), ("quant", QuantConf), ("dataset", DatasetConf), ("engine", EngineConf),
                        ("timing", TimingConf), ("runtime", RuntimeConf), ("output", OutputConf)):
        cs.store(group=group, name=f"{group}_schema", node=node)
    for name, entry in DRAFTERS.items():
        cs.store(group="drafter", name=f"{name}_schema", node=entry.conf)
        # ``compare=[ngram,eagle]`` puts each chosen drafter's settings at compare.<name>, visible to --cfg job
        cs.store(group="compare", name=name, node={name: entry.conf})


def register_resolvers() -> None:
    """``${specbench_gpus:}``: the number of GPUs this process sees (at least 1), e.g. for a launcher's job count."""
    if not OmegaConf.has_resolver("specbench_gpus"):
        from specbench.runner.gpu_pool import visible_gpus

        OmegaConf.register_new_resolver("specbench_gpus", lambda: max(1, len(visible_gpus())))


def flatten(cfg: DictConfig | dict, prefix: str = "") -> dict[str, Any]:
    """``{"model.source": ..., "drafter.name": ...}``; lists and dicts at the leaves become JSON text."""
    data = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "."))
        elif isinstance(value, (list, dict)):
            out[name] = json.dumps(value, sort_keys=True)
        else:
            out[name] = value
    return out


# not part of a measurement's identity: where results go, Hydra's settings, how a GPU is leased, where a replayed
# tau comes from (its value is part of the identity)
IDENTITY_EXCLUDES = ("output.", "hydra.", "runtime.gpu_lock_dir", "runtime.gpu_wait_s", "timing.replay_source")
# keys hashed under the name they had when earlier results were measured, so those run folders keep their hash
UNSET_UNHASHED = ("drafter.label", "drafter.head", "drafter.model", "drafter.quant", "timing.warmup_new_tokens",
                  "drafter.on_miss", "timing.compile_scope")
HASHED_AS = {f"engine.{key}": f"timing.{key}" for key in EngineConf.__dataclass_fields__}


def config_hash(cfg: DictConfig) -> str:
    """A short hash of everything that defines the measurement (output settings excluded).

    ``runtime.device=cuda:auto`` hashes as ``cuda``: which GPU of a host a job leased is not part of its identity
    (``env.gpu`` records the model, ``env.gpu_lease`` the GPU), so a resumed job or a shared AR baseline finds its
    folder whichever GPU it runs on.
    """
    flat = {HASHED_AS.get(k, k): v for k, v in flatten(cfg).items() if not k.startswith(IDENTITY_EXCLUDES)}
    for key in UNSET_UNHASHED:  # unset, these hash as before drafters had a schema
        if key in flat and flat[key] is None:
            del flat[key]
    if flat.get("runtime.device") == "cuda:auto":
        flat["runtime.device"] = "cuda"
    return hashlib.sha256(json.dumps(flat, sort_keys=True, default=str).encode()).hexdigest()[:12]


def check_settings(cfg: DictConfig) -> None:
    """Refuse out-of-range dataset, engine, timing and runtime settings before anything is loaded
    (``ConfigValueError``)."""
    check_engine(cfg.engine)
    d, t, r = cfg.dataset, cfg.timing, cfg.runtime
    for key in ("max_new_tokens", "max_turns"):
        require(d[key] is None or d[key] >= 1, f"dataset.{key}", d[key], "an integer >= 1, or null for the default")
    for key in ("question_begin", "question_end"):
        require(d[key] is None or d[key] >= 0, f"dataset.{key}", d[key], "an integer >= 0, or null")
    for key in ("synthetic_prompt_tokens", "synthetic_questions"):
        require(d[key] >= 1, f"dataset.{key}", d[key], "an integer >= 1")
    require(t.warmup >= 0, "timing.warmup", t.warmup, "an integer >= 0")
    require(t.warmup_new_tokens is None or t.warmup_new_tokens >= 1, "timing.warmup_new_tokens",
            t.warmup_new_tokens, "an integer >= 1, or null for the run's max_new_tokens")
    require(t.repeats >= 1, "timing.repeats", t.repeats, "an integer >= 1")
    require(t.acceptance in ("real", "replay"), "timing.acceptance", t.acceptance, "'real' or 'replay'")
    require(r.max_seq_len >= 1, "runtime.max_seq_len", r.max_seq_len, "an integer >= 1")
    require(r.temperature >= 0, "runtime.temperature", r.temperature, "a number >= 0 (0: greedy)")
    require(0 < r.top_p <= 1, "runtime.top_p", r.top_p, "a number in (0, 1]")
    require(r.top_k >= 0, "runtime.top_k", r.top_k, "an integer >= 0 (0: off)")
