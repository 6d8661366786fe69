"""GPU leases on one host: ``runtime.device=cuda:auto`` takes the first GPU that no other specbench process holds,
so parallel jobs (``hydra/launcher=gpus``, or several shells) get one GPU each and never share one.

A lease is an exclusive ``fcntl.flock`` on ``<lock dir>/gpu-<id>.lock``, held for the life of the process: the
kernel drops it when the process exits, crashes or is killed, so a dead job never keeps a GPU. ``<id>`` is the GPU's
entry in ``CUDA_VISIBLE_DEVICES`` (its index when that is unset), so processes that were given different subsets of
a host's GPUs still agree on which physical GPU a lock names. When every GPU is held the lease waits (polling) and
fails after ``runtime.gpu_wait_s`` with a message naming the holders.

Before CUDA starts in the process, the leased GPU is made the only one it sees (``CUDA_VISIBLE_DEVICES`` narrowed to
it), so ``cuda``, ``cuda:0``, the current device and every library's default all mean the leased GPU. If CUDA has
already started, the lease sets the current device instead (``bind``).

The default lock dir is per user and host: ``$XDG_RUNTIME_DIR/specbench/gpu-locks/<host>`` (or
``~/.cache/specbench/gpu-locks/<host>``), scoped to the SLURM job inside one (SLURM hands out GPUs itself, and
renumbers them from 0 in every job). Processes of different users or lock dirs do not see each other's leases.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from specbench.runner.locks import holder, try_lock

log = logging.getLogger("specbench")

AUTO = "cuda:auto"
DEFAULT_WAIT_S = 43200.0


class NoFreeGPU(TimeoutError):
    """Every GPU stayed leased by other processes for the whole wait."""


@dataclass(frozen=True)
class Lease:
    index: int  # the GPU's CUDA index among those the process saw when it leased
    gpu: str  # its id in the lock name: the CUDA_VISIBLE_DEVICES entry, or the index
    path: Path  # the lock file
    fd: int  # the open, locked file (closing it ends the lease)
    narrowed: bool = False  # CUDA_VISIBLE_DEVICES was narrowed to this GPU (then it is cuda:0 in this process)


_lease: Lease | None = None  # this process's lease, kept until the process ends


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as ids: ``CUDA_VISIBLE_DEVICES``'s entries, else ``0..device_count-1``.

    Does not start CUDA (torch counts devices through NVML before CUDA is initialised)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        ids = []
        for entry in env.split(","):
            entry = entry.strip()
            if not entry or entry.startswith("-"):  # CUDA ignores everything from the first invalid entry on
                break
            ids.append(entry)
        return ids
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def default_lock_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK):
        root = Path(runtime) / "specbench" / "gpu-locks"
    else:
        root = Path.home() / ".cache" / "specbench" / "gpu-locks"
    scope = socket.gethostname()
    if os.environ.get("SLURM_JOB_ID"):
        scope += f"-slurm{os.environ['SLURM_JOB_ID']}"
    return root / scope


def _lock_name(gpu: str) -> str:
    return "gpu-" + re.sub(r"[^A-Za-z0-9_.-]", "_", gpu) + ".lock"


def acquire_gpu(gpus: int | Sequence[int | str], lock_dir: str | Path, timeout_s: float = DEFAULT_WAIT_S,
                poll_s: float = 0.5) -> Lease:
    """Lock the first free GPU of ``gpus`` (a count, or ids) under ``lock_dir``; wait up to ``timeout_s``.

    The lock lasts until the returned lease's file is closed or the process ends. Raises ``NoFreeGPU``."""
    ids = [str(g) for g in (range(gpus) if isinstance(gpus, int) else gpus)]
    if not ids:
        raise RuntimeError("runtime.device=cuda:auto: this process sees no GPU (check CUDA_VISIBLE_DEVICES and "
                           "nvidia-smi, or run with runtime=cpu)")
    lock_dir = Path(lock_dir).expanduser()
    deadline = time.monotonic() + timeout_s
    waiting = False
    while True:
        for index, gpu in enumerate(ids):
            path = lock_dir / _lock_name(gpu)
            fd = try_lock(path)
            if fd is not None:
                if waiting:
                    log.info("GPU %s is free now", gpu)
                return Lease(index, gpu, path, fd)
        holders = "; ".join(f"GPU {g}: {holder(lock_dir / _lock_name(g))}" for g in ids)
        if time.monotonic() >= deadline:
            raise NoFreeGPU(
                f"runtime.device=cuda:auto: all {len(ids)} GPU(s) this process sees stayed leased for "
                f"{timeout_s:g} s ({holders}; locks in {lock_dir}). Wait for those jobs, raise runtime.gpu_wait_s, "
                f"or start fewer parallel jobs than GPUs (hydra.launcher.n_jobs)")
        if not waiting:
            log.info("all %d GPU(s) are leased (%s); waiting up to %g s for one", len(ids), holders, timeout_s)
            waiting = True
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))


def lease_gpu(lock_dir: str | Path | None = None, timeout_s: float = DEFAULT_WAIT_S) -> Lease:
    """This process's GPU lease, taken on the first call (later calls return the same lease).

    If CUDA has not started yet, ``CUDA_VISIBLE_DEVICES`` is narrowed to the leased GPU."""
    global _lease
    if _lease is not None:
        return _lease
    import torch

    ids = visible_gpus()
    lease = acquire_gpu(ids, lock_dir or default_lock_dir(), timeout_s)
    if not torch.cuda.is_initialized():
        os.environ["CUDA_VISIBLE_DEVICES"] = lease.gpu
        lease = Lease(lease.index, lease.gpu, lease.path, lease.fd, narrowed=True)
    log.info("leased GPU %s of %s (%s)", lease.gpu, ",".join(ids), lease.path)
    _lease = lease
    return lease


def current_lease() -> Lease | None:
    return _lease


def resolve_device(runtime) -> str:
    """``runtime.device``, with ``cuda:auto`` leased (``lease_gpu``) and answered as ``cuda``: the leased GPU."""
    if runtime.device != AUTO:
        return runtime.device
    wait = runtime.get("gpu_wait_s")
    lease_gpu(runtime.get("gpu_lock_dir"), DEFAULT_WAIT_S if wait is None else float(wait))
    return "cuda"


def bind(lease: Lease) -> int:
    """Make the leased GPU the current CUDA device; return its CUDA index in this process."""
    import torch

    index = lease.index
    if lease.narrowed:
        torch.cuda.init()
        index = 0
        if torch.cuda.device_count() > 1:  # CUDA had read CUDA_VISIBLE_DEVICES before the lease narrowed it
            log.warning("CUDA started before the GPU lease narrowed CUDA_VISIBLE_DEVICES; using cuda:%d", lease.index)
            index = lease.index
    torch.cuda.set_device(index)
    return index
