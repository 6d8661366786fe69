"""The target a process keeps loaded between jobs, so that consecutive jobs on one target build it once.

A Hydra multirun over drafters or tree sizes, or a campaign chunk, runs many jobs in one process on the same target.
What builds the target keys it: the ``engine`` group, the model, the quantization, and the runtime's device, dtype,
seed, length and threads (not the sampling settings). One target is kept at a time; a job with another key frees it
first. The session (KV cache, buckets, CUDA graphs) is kept too: ``generate`` resets the cache and sets the target's
feature layers for each drafter, so a job measures what it would measure in a fresh process, minus the build.
"""

from __future__ import annotations

import gc
import logging
import time

import torch
from omegaconf import DictConfig, OmegaConf

from specbench.engine import Engine

BUILD_KEYS = ("device", "dtype", "seed", "max_seq_len", "threads")
log = logging.getLogger("specbench")


def target_key(cfg: DictConfig) -> dict:
    """Everything that builds ``cfg``'s target and its session, as plain values."""
    key = {name: OmegaConf.to_container(cfg[name], resolve=True) for name in ("engine", "model", "quant")}
    key["runtime"] = {name: cfg.runtime.get(name) for name in BUILD_KEYS}
    return key


class LoadedTarget:
    """The engine, target model and session of the last job, reused while the next job's ``target_key`` matches."""

    def __init__(self):
        self.key, self.parts, self.builds = None, None, 0

    def get(self, cfg: DictConfig) -> tuple[Engine, object, object]:
        """(engine, target, session) for ``cfg``: the kept ones when they match, else freshly built."""
        key = target_key(cfg)
        if key == self.key:
            log.info("target %s (quant %s) already loaded in this process: reused", cfg.model.source, cfg.quant.scheme)
            return self.parts
        self.release()
        start = time.perf_counter()
        engine = Engine.from_config(cfg)
        target = engine.model(cfg.model, cfg.quant)
        self.parts, self.key = (engine, target, engine.session(target)), key
        self.builds += 1
        log.info("target %s (quant %s) built in %.1f s", cfg.model.source, cfg.quant.scheme, time.perf_counter() - start)
        return self.parts

    def keep_only(self, cfg: DictConfig) -> bool:
        """Free the kept target unless ``cfg`` builds the same one; True when ``cfg``'s target is kept."""
        if self.key is not None and target_key(cfg) == self.key:
            return True
        self.release()
        return False

    def release(self) -> None:
        """Free the kept target (and its GPU memory)."""
        self.key, self.parts = None, None
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()


LOADED = LoadedTarget()
