"""The environment recorded with every result: GPU, driver, library versions, git commit, source hash, host."""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import os
import platform
import socket
import subprocess
from functools import lru_cache
from pathlib import Path

import torch


def package_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


PACKAGE = Path(__file__).resolve().parents[1]
SOURCES = ((PACKAGE, "*.py"), (PACKAGE.parent / "conf", "*.yaml"))  # the code and the Hydra configs it composes


@lru_cache(maxsize=None)
def source_hash() -> str:
    """12 hex digits over the package's Python files and the configs: the code that measured a row, also where the
    commit does not say it (a working tree with changes, a copy whose ``.git`` lags)."""
    digest = hashlib.sha256()
    for root, pattern in SOURCES:
        for path in sorted(root.rglob(pattern)) if root.is_dir() else ():
            digest.update(str(path.relative_to(root.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def ptxas_version() -> str | None:
    """The version of the ptxas that assembles Triton's kernels (``TRITON_PTXAS_PATH`` or Triton's own): before CUDA
    13.3 it may write the registers of wgmmas still in flight (docs/quantization.md)."""
    try:
        from triton import knobs

        return knobs.nvidia.ptxas.version
    except (ImportError, AttributeError, OSError, RuntimeError, subprocess.SubprocessError):  # no Triton, or no ptxas
        return None


def _gpu_uuid(device: torch.device) -> str | None:
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return f"GPU-{uuid}" if uuid is not None else None


@lru_cache(maxsize=None)
def environment(device: str) -> dict:
    from specbench.runner.gpu_pool import current_lease

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    if cuda and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    lease = current_lease()
    return {
        "env.gpu": torch.cuda.get_device_name(dev) if cuda else None,
        "env.gpu_count": torch.cuda.device_count() if cuda else 0,  # the GPUs the process sees
        "env.gpu_index": dev.index if cuda else None,  # its CUDA index in the process
        "env.gpu_uuid": _gpu_uuid(dev) if cuda else None,
        "env.gpu_lease": lease.gpu if cuda and lease is not None else None,  # runtime.device=cuda:auto: the GPU leased
        "env.cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "env.driver": _driver() if cuda else None,
        "env.cuda": torch.version.cuda,
        "env.torch": torch.__version__,
        "env.transformers": package_version("transformers"),
        "env.triton": package_version("triton"),
        "env.ptxas": ptxas_version() if cuda else None,
        "env.gemlite": package_version("gemlite"),
        "env.specbench": package_version("specbench"),
        "env.python": platform.python_version(),
        "env.git_sha": _git_sha(),
        "env.source_hash": source_hash(),
        "env.host": socket.gethostname(),
        "env.cpu": platform.processor() or platform.machine(),
        "env.date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
