"""Programmatic dependent launch (PDL) for specbench's Triton kernels: whether it is on, and how to launch with it.

A kernel launched with ``launch_pdl`` may start while the kernel before it in the stream still runs: its programs
become resident as that kernel's SMs free up (at once if that kernel calls ``gdc_launch_dependents``), and each
must call ``gdc_wait`` before it reads that kernel's output or writes anything; what it does before the wait
overlaps the other kernel's tail. The int8-activation pair uses it (``act_quant_kernel`` -> ``int8_kernel``); the
W4A16 kernel does not (measured slower with it: docs/benchmarks.md, session 15). ``PDL`` is on where Triton and
the GPU offer it; ``SPECBENCH_PDL=0`` turns it off. Triton's CPU interpreter (``INTERPRETED``) runs neither that
nor inline PTX.
"""

from __future__ import annotations

import os

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
try:
    from triton.backends.nvidia.compiler import CUDAOptions
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait  # noqa: F401 - re-exported

    PDL = (not INTERPRETED and "launch_pdl" in CUDAOptions.__dataclass_fields__
           and os.environ.get("SPECBENCH_PDL", "1") != "0")
except ImportError:  # no Triton, or one without grid dependency control
    PDL = False


def launch_options() -> dict:
    """The launch keyword arguments of a kernel that calls ``gdc_wait`` (none without PDL)."""
    return {"launch_pdl": True} if PDL else {}
