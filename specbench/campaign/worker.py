"""``python -m specbench.campaign.worker JOB``: one campaign process, started by ``campaign.execute``.

It measures the job file's runs in order, in this process, so consecutive runs on one target build it once
(``runner.loaded``). Each run's output goes to ``<root>/logs/<run id>.log``; the ledger marks it ``running`` before
and ``done`` or ``failed`` after; after a failed run the worker stops, and ``campaign.execute`` starts a fresh one
for the rest. No run starts with less than ``MIN_START_S`` of the job's budget left.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import time
import traceback
from pathlib import Path

from hydra import compose, initialize_config_dir

from specbench.campaign.execute import DONE, FAILED, MIN_START_S, PROFILES, Ledger, overrides
from specbench.campaign.plan import CONF, Run, runs

FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"


def measure_run(run: Run, command: list[str], log: Path) -> str:
    """Compose ``run``'s config from ``command`` and measure it as ``python -m specbench`` would; its status."""
    from specbench.__main__ import measure, release_memory

    log.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log)
    handler.setFormatter(logging.Formatter(FORMAT))
    root_logger = logging.getLogger()
    root_logger.addHandler(handler)
    try:
        with log.open("a") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            print(f"campaign run {run.id}: python -m specbench {' '.join(command)}", flush=True)
            try:
                measure(compose("config", overrides=command), experiment=run.experiment)
                return DONE
            except Exception:  # the run failed; the next one may not (another target, another method)
                traceback.print_exc()
                release_memory()
                return FAILED
    finally:
        root_logger.removeHandler(handler)
        handler.close()


def main(argv: list[str] | None = None) -> int:
    from specbench.runner.config import register_schemas

    job = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    start, budget = time.monotonic(), float(job["budget_s"])
    profile, root = PROFILES[job["profile"]], Path(job["root"])
    plan = {run.id: run for run in runs()}
    logging.getLogger().setLevel(logging.INFO)
    register_schemas()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for run_id in job["runs"]:
            if budget - (time.monotonic() - start) < MIN_START_S:
                break
            run = plan[run_id]
            command = overrides(run, profile, root, job["questions"], tuple(job["extra"]))
            log = root / "logs" / f"{run.id}.log"
            Ledger(root).start(run, log, command)
            began = time.monotonic()
            status = measure_run(run, command, log)
            Ledger(root).finish(run.id, status, time.monotonic() - began)
            print(f"{run.id}: {status} after {time.monotonic() - began:.0f} s", flush=True)
            if status == FAILED:  # the rest in a fresh process: a CUDA error leaves this one unusable
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
