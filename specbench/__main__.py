"""``python -m specbench [overrides]``: the Hydra entry point (config tree in ``conf/``)."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from specbench.runner.config import register_schemas

CONF = str(Path(__file__).resolve().parent.parent / "conf")
register_schemas()

# hydra/launcher=NAME -> (the Hydra plugin its config builds on, the optional extra that installs it)
LAUNCHER_EXTRAS = {
    "gpus": ("hydra_plugins.hydra_joblib_launcher", "multigpu"),
    "local": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
    "slurm": ("hydra_plugins.hydra_submitit_launcher", "slurm"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # no hydra_plugins package at all
        return False


def missing_launcher(argv: list[str]) -> str | None:
    """The error for a ``hydra/launcher=...`` override whose plugin is not installed, else None."""
    for arg in argv:
        if arg.startswith("hydra/launcher="):
            name = arg.split("=", 1)[1]
            plugin, extra = LAUNCHER_EXTRAS.get(name, (None, None))
            if plugin is not None and not _installed(plugin):
                return (f"hydra/launcher={name} needs the optional extra '{extra}' "
                        f"(it provides {plugin.split('.')[-1]}): pip install -e \".[{extra}]\"")
    return None


@hydra.main(version_base="1.3", config_path=CONF, config_name="config")
def main(cfg: DictConfig) -> None:
    from specbench.errors import reported, saved_questions

    def saved() -> str:
        from specbench.runner.run import method_configs, run_dir

        return saved_questions([run_dir(m) for m in method_configs(cfg)])

    with reported(saved):
        measure(cfg)


def measure(cfg: DictConfig, experiment: str | None = None) -> None:
    """Check the settings (``runner.preflight``), run the job, print its summary. ``experiment``: the
    ``+experiment=`` choice, read from Hydra when the job runs under ``hydra.main``."""
    from specbench.runner.gpu_pool import resolve_device
    from specbench.runner.loaded import LOADED
    from specbench.runner.preflight import check_memory, preflight

    if experiment is None:
        from hydra.core.hydra_config import HydraConfig

        experiment = HydraConfig.get().runtime.choices.get("experiment")
    leasing = cfg.runtime.device == "cuda:auto"
    # a target kept from an earlier job of this process is freed unless this job builds the same one; it is keyed by
    # its resolved device, so with cuda:auto the comparison (and the memory check) waits for the lease
    kept = False if leasing else LOADED.keep_only(cfg)
    preflight(cfg, experiment=experiment, target_loaded=kept)  # starts no CUDA
    # runtime.device=cuda:auto leases a free GPU first, before any import can start CUDA on another one
    cfg.runtime.device = resolve_device(cfg.runtime)
    if leasing:
        kept = LOADED.keep_only(cfg)
        check_memory(cfg, target_loaded=kept)

    from specbench.runner.run import run
    from specbench.runner.summary import print_summary, summarize

    logging.getLogger("specbench").info("run folders under %s/%s", cfg.output.root, cfg.output.name)
    try:
        folders = run(cfg)
    finally:
        release_memory()  # a parallel launcher's worker runs its next job in the same process
    print_summary(summarize(folders))


def release_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


if __name__ == "__main__":
    from specbench.errors import EXIT_USAGE, take_debug_flag

    sys.argv = [sys.argv[0], *take_debug_flag(sys.argv[1:])]
    if {"--help", "-h"} & set(sys.argv[1:]):
        from specbench.cli_help import render

        print(render(), end="")
        sys.exit(0)
    error = missing_launcher(sys.argv[1:])
    if error:
        print(f"specbench: error: {error}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    main()
