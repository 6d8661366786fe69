"""Checks that run before any model is built, so a run that cannot work stops at once with the fix.

* settings: quantization scheme and backend, model sources (shipped names need no download);
* the device: a CUDA run, or a CUDA-only kernel backend, on a machine without a GPU (naming the experiment's CPU
  smoke variant), a kernel package that is not installed;
* memory: a lower bound on what the run's models and KV caches need (weights at the scheme's bits, caches of
  ``runtime.max_seq_len`` + 128 slots), from the model configs, against the device's free memory;
* the dataset file: readable JSON lines, not empty, every row in the dataset's format (e.g. ``turns``).
"""

from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from specbench.errors import ConfigError, DatasetFileError, DeviceError

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
SCRATCH_SLOTS = 128  # decoding.forward's padding slots behind max_seq_len in every KV cache
GiB = 2**30


def preflight(cfg: DictConfig, experiment: str | None = None, target_loaded: bool = False) -> None:
    """Raise a ``SpecbenchError`` naming the setting and the fix for the first check ``cfg`` fails.

    Starts no CUDA: with ``runtime.device=cuda:auto`` (a GPU leased afterwards) the memory check is left to
    ``check_memory`` once the lease is held. ``target_loaded``: the process already holds ``cfg``'s target."""
    models = run_models(cfg)
    for _, quant_key, _, quant in models:
        check_quant(quant_key, quant)
    check_device(cfg, [quant for *_, quant in models], experiment)
    if cfg.runtime.device != "cuda:auto":
        check_memory(cfg, target_loaded=target_loaded)
    if cfg.dataset.name != "synthetic":
        check_dataset(cfg.dataset)
    if cfg.dataset.execute_code:  # refuse now, not at the first answer scored
        from specbench.datasets.sandbox import require_sandbox

        require_sandbox()


def run_models(cfg: DictConfig) -> list[tuple[str, str, DictConfig, DictConfig]]:
    """(model setting, quant setting, model node, quant node) of the target and of each method's draft model."""
    from specbench.runner.run import method_configs

    dense = OmegaConf.create({"scheme": "none", "backend": "reference"})
    return [("model", "quant", cfg.model, cfg.quant)] + [
        (f"drafter({m.drafter.name}).model", f"drafter({m.drafter.name}).quant", m.drafter.model,
         m.drafter.get("quant") or dense) for m in method_configs(cfg) if m.drafter.get("model") is not None]


def check_quant(key: str, quant: DictConfig) -> None:
    from specbench.quantization.backends import AUTO, BACKENDS, combinations
    from specbench.quantization.schemes import DENSE, SCHEMES

    if quant.scheme not in ("none", "auto", *DENSE, *SCHEMES):
        raise ConfigError(f"{key}.scheme={quant.scheme} is not a quantization scheme; use one of: none, auto, "
                          f"{', '.join([*DENSE, *SCHEMES])} (docs/quantization.md)")
    if quant.scheme in SCHEMES and quant.backend != AUTO:  # auto is resolved per weight, at load
        backend = BACKENDS.get(quant.backend)
        if backend is None or quant.scheme not in backend.schemes:
            raise ConfigError(f"{key}.backend={quant.backend} cannot run {quant.scheme}; backends that can: "
                              f"{combinations()}")


def check_device(cfg: DictConfig, quants: list[DictConfig], experiment: str | None) -> None:
    import importlib.util

    from specbench.quantization.backends import BACKENDS

    cuda = str(cfg.runtime.device).startswith("cuda")
    backends = [BACKENDS[q.backend] for q in quants if q.scheme not in ("none", "bf16", "fp16") and q.backend in BACKENDS]
    needs_gpu = [f"quant.backend={b.name}" for b in backends if b.cuda_only]
    if (cuda or needs_gpu) and not gpu_present():
        why = f"runtime.device={cfg.runtime.device}" if cuda else " and ".join(dict.fromkeys(needs_gpu))
        raise DeviceError(f"{'+experiment=' + experiment if experiment else 'this run'} needs a CUDA GPU ({why}) "
                          f"and torch sees none. {cpu_alternative(experiment, cuda)}")
    for b in backends:
        if b.package and importlib.util.find_spec(b.package) is None:
            raise DeviceError(f"quant.backend={b.name} needs the package {b.package}: pip install -e \".[{b.extra}]\" "
                              "(make install-gpu), or choose another quant.backend")


def gpu_present() -> bool:
    """Whether this process sees a GPU, asked without starting CUDA (a ``cuda:auto`` lease narrows
    ``CUDA_VISIBLE_DEVICES`` afterwards, which only works before CUDA starts)."""
    from specbench.runner.gpu_pool import visible_gpus

    return bool(visible_gpus())


def cpu_alternative(experiment: str | None, cuda: bool) -> str:
    """What to run on a CPU instead: the experiment's smoke variant, or the CPU settings."""
    if experiment and (CONF_DIR / "experiment" / "smoke" / f"{experiment}.yaml").is_file():
        return f"On a CPU, run its smoke variant: python -m specbench -m +experiment=smoke/{experiment}"
    if experiment and experiment.startswith("smoke/"):
        return "Smoke variants run on a CPU: check the overrides that asked for CUDA."
    return ("On a CPU use runtime=cpu" if cuda else "On a CPU use quant.backend=reference") + \
        " (the quantized kernels' timings need a GPU; reference only checks numerics)."


def model_config(key: str, model: DictConfig):
    """The ``ModelConfig`` of ``model.source`` with its overrides (shipped configs and local folders: no download)."""
    from specbench.model import load_hf_config
    from specbench.model.config import ModelConfig
    from specbench.model.loading import ModelSourceError

    try:
        hf = load_hf_config(model.source)
    except ModelSourceError as err:
        raise ConfigError(f"{key}.source={model.source}: {err}") from None
    return ModelConfig.from_hf(hf, **OmegaConf.to_container(model.overrides)), hf


def weight_bits(quant: DictConfig, hf: dict, dtype_bits: int) -> int:
    """Bits per linear weight: the scheme's, a quantized checkpoint's (at least 4), else the dtype's."""
    from specbench.quantization.schemes import SCHEMES

    if quant.scheme in SCHEMES:
        return SCHEMES[quant.scheme].bits
    if quant.scheme == "auto" and hf.get("quantization_config"):
        return 4
    return dtype_bits


def needed_bytes(config, hf: dict, quant: DictConfig, dtype_bytes: int, max_seq_len: int) -> tuple[int, int]:
    """(weights, KV cache) bytes of one model: a lower bound (no activations, graphs or kernel workspaces)."""
    c = config
    attention = c.hidden_size * c.head_dim * (2 * c.num_attention_heads + 2 * c.num_key_value_heads)
    linears = c.num_hidden_layers * (attention + 3 * c.hidden_size * c.intermediate_size)
    embeddings = c.vocab_size * c.hidden_size * (1 if c.tie_word_embeddings else 2)
    weights = linears * weight_bits(quant, hf, 8 * dtype_bytes) // 8 + embeddings * dtype_bytes
    cache = 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * (max_seq_len + SCRATCH_SLOTS) * dtype_bytes
    return weights, cache


def free_memory(device: str) -> int:
    """Free bytes on ``device``: CUDA's free memory, or the host's available memory for a CPU run."""
    if device.startswith("cuda"):
        return torch.cuda.mem_get_info(torch.device(device))[0]
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import os

    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(cfg: DictConfig, free: int | None = None, target_loaded: bool = False) -> None:
    """Raise when the models' weights and KV caches alone exceed the free memory (``free``: of the run's device);
    ``target_loaded``: the target is already in memory (kept from the previous job), so only the drafters need room."""
    from specbench.engine import torch_dtype

    dtype_bytes = torch.empty((), dtype=torch_dtype(cfg.runtime.dtype)).element_size()
    parts = {key: needed_bytes(*model_config(key, model), quant, dtype_bytes, cfg.runtime.max_seq_len)
             for key, _, model, quant in run_models(cfg)}
    sizes = [w + k for w, k in parts.values()]
    total = (0 if target_loaded else sizes[0]) + max(sizes[1:], default=0)  # the target, one draft model at a time
    free = free_memory(str(cfg.runtime.device)) if free is None else free
    if total <= free:
        return
    detail = ", ".join(f"{key.removesuffix('.model')} {w / GiB:.1f} GiB weights + {k / GiB:.1f} GiB KV cache"
                       for key, (w, k) in parts.items())
    kept = "; the target is already loaded" if target_loaded else ""
    raise DeviceError(
        f"this run needs at least {total / GiB:.1f} GiB more ({detail}{kept}; runtime.dtype={cfg.runtime.dtype}, "
        f"runtime.max_seq_len={cfg.runtime.max_seq_len}) but {cfg.runtime.device} has {free / GiB:.1f} GiB free. "
        "To fit: lower runtime.max_seq_len, quantize the weights (quant=w4a16 or w8a8_int8), use runtime.dtype="
        "bfloat16, measure fewer methods per job (compare=[]), or use a larger device.")


def check_dataset(dataset: DictConfig) -> None:
    """The dataset file (when it is local) reads as JSON lines, is not empty and has the dataset's fields."""
    from specbench.datasets import get_dataset
    from specbench.datasets.download import DatasetUnavailableError
    from specbench.datasets.questions import read_rows
    from specbench.datasets.registry import dataset_file

    spec = get_dataset(dataset.name)
    where = f"dataset.path={dataset.path}" if dataset.path else f"dataset={dataset.name}"
    try:
        path = dataset_file(dataset.name, path=dataset.path, download=False)
    except FileNotFoundError:
        raise DatasetFileError(f"{where}: no such file; point dataset.path at a JSON-lines file") from None
    except DatasetUnavailableError:
        return  # not cached yet: the run downloads and verifies it
    try:
        rows = read_rows(path)
    except (ValueError, UnicodeDecodeError) as err:
        raise DatasetFileError(f"{where}: {err}; each line must be one JSON object") from None
    if not rows:
        raise DatasetFileError(f"{where}: {path} is empty; it needs one JSON object per line, each a question")
    for i, row in enumerate(rows):
        try:
            spec.convert(row, i)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            field = f"the field {err.args[0]!r}" if isinstance(err, KeyError) else f"a valid row ({err})"
            example = ' e.g. {"question_id": 1, "category": "writing", "turns": ["..."]}' \
                if spec.convert.__name__ == "from_spec_bench" else ""
            raise DatasetFileError(f"{where}: question {i + 1} of {path} lacks {field}, which dataset "
                                   f"{dataset.name} needs;{example}") from None
