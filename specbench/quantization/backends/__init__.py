"""Kernel backend registry: each backend packs a ``QuantizedWeight`` into a module computing ``x @ W.T``."""

from __future__ import annotations

import importlib
import importlib.util

import torch
from torch import nn

from specbench.quantization.qweight import QuantizedWeight
from specbench.quantization.schemes import UnsupportedBackendError


class Backend:
    """A kernel family. ``build`` returns a module mapping [M, K] inputs to [M, N] outputs in the input dtype."""

    name = ""
    schemes: tuple[str, ...] = ()
    cuda_only = True
    package: str | None = None  # optional dependency, imported lazily
    extra: str | None = None  # pip extra that installs it
    install_note = ""  # what else the install needs (e.g. a build matching torch)

    def limits(self, qw: QuantizedWeight, dtype: torch.dtype) -> str | None:
        """Why this backend cannot run ``qw`` with ``dtype`` activations (layout limits), or None."""
        return None

    def build(self, qw: QuantizedWeight, dtype: torch.dtype) -> nn.Module:
        raise NotImplementedError

    def describe(self, qw: QuantizedWeight) -> dict[str, str]:
        raise NotImplementedError

    def requirement(self) -> str:
        where = "CUDA" if self.cuda_only else "any device"
        return where + (f", needs `pip install specbench[{self.extra}]`" if self.extra else "")


BACKENDS: dict[str, Backend] = {}
AUTO = "auto"  # quant.backend=auto: chosen per scheme and GPU by ``resolve``


def register(cls: type[Backend]) -> type[Backend]:
    BACKENDS[cls.name] = cls()
    return cls


def combinations() -> str:
    return "; ".join(f"{b.name}: {', '.join(b.schemes)} ({b.requirement()})" for b in BACKENDS.values())


def get_backend(name: str, scheme: str) -> Backend | None:
    """The backend ``name`` if it implements ``scheme`` at all (device and layout are checked in ``build``);
    None for "auto", which is resolved per weight."""
    if name == AUTO:
        return None
    backend = BACKENDS.get(name)
    if backend is None or scheme not in backend.schemes:
        what = f"unknown backend {name!r}" if backend is None else f"backend {name!r} does not implement {scheme}"
        raise UnsupportedBackendError(f"{what}; combinations that can run: {combinations()}, or {AUTO!r}")
    return backend


def _installed(package: str) -> bool:
    try:  # a dotted name imports its parents, which may be missing or fail to load
        return importlib.util.find_spec(package) is not None
    except (ImportError, OSError):
        return False


def _runnable(backend: Backend, qw: QuantizedWeight, dtype: torch.dtype) -> bool:
    if backend.cuda_only and qw.device.type != "cuda":
        return False
    if backend.package is not None and not _installed(backend.package):
        return False
    return backend.limits(qw, dtype) is None


def resolve(name: str, qw: QuantizedWeight, dtype: torch.dtype) -> tuple[str, str]:
    """(backend name, how it was chosen): ``name`` itself, or for "auto" the first backend of the GPU's committed
    order for the scheme that is installed and can run this weight; off a GPU, the reference oracle."""
    if name != AUTO:
        return name, "given"
    if qw.device.type != "cuda":
        return "reference", f"auto (weights on {qw.device})"
    from specbench.quantization import kernel_table

    gpu = kernel_table.gpu_key(qw.device)
    order, source = kernel_table.backend_order(gpu, qw.scheme.name)
    for candidate in order:
        backend = BACKENDS.get(candidate)
        if backend is not None and qw.scheme.name in backend.schemes and _runnable(backend, qw, dtype):
            return candidate, f"auto ({source}, {gpu or torch.cuda.get_device_name(qw.device)})"
    raise UnsupportedBackendError(
        f"quant.backend=auto: none of {', '.join(order)} can run {qw.scheme.name} (group {qw.group_size}, "
        f"{dtype}) here; install one ({combinations()}) or set quant.backend=reference")


def build_kernel(backend: Backend, qw: QuantizedWeight, dtype: torch.dtype) -> nn.Module:
    """Check device, optional package and layout, then pack ``qw`` for ``backend``."""
    scheme = qw.scheme.name
    reason = None
    if backend.cuda_only and qw.device.type != "cuda":
        reason = f"it needs the weights on a CUDA device (got {qw.device}; build the model with device='cuda')"
    elif backend.package is not None:
        try:
            importlib.import_module(backend.package)
        except (ImportError, OSError) as err:  # OSError: its compiled library does not load with this torch
            reason = (f"{backend.package} is not installed or does not load ({str(err)[:200]}); "
                      f"`pip install specbench[{backend.extra}]`{backend.install_note}")
    reason = reason or backend.limits(qw, dtype)
    if reason:
        raise UnsupportedBackendError(
            f"{scheme} (group {qw.group_size}) cannot run on backend {backend.name!r}: {reason}. "
            f"Combinations that can run: {combinations()}"
        )
    return backend.build(qw, dtype)


for _module in ("reference", "torch_ops", "gemlite", "marlin", "triton", "fbgemm"):
    importlib.import_module(f"specbench.quantization.backends.{_module}")
