"""Helpers shared by the GPU benchmarks."""

from __future__ import annotations

import gc

import torch


def free(device: str) -> None:
    """Drop unreferenced tensors and return cached GPU memory between measurements."""
    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
