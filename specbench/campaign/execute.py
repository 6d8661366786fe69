"""Run the campaign's plan under a time budget, one ``python -m specbench`` process per run.

Runs go to ``<root>/runs/<experiment>/<config hash>/``; ``<root>/campaign.json`` records each run's status
(``done``, ``cut`` by the budget, ``failed``) and ``<root>/logs/`` its output. A run is started only while at least
``MIN_START_S`` of the budget is left and is stopped when the budget ends; the runner rewrites its parquet after every
question, so the next chunk (the same command) resumes a cut run at its first unmeasured question. Done runs are
skipped; failed runs are skipped until ``retry_failed``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from specbench.campaign.plan import KEYS, TARGETS, Run, runs

MIN_START_S = 30.0
DONE, CUT, FAILED = "done", "cut", "failed"


@dataclass(frozen=True)
class Profile:
    """Where and at what size a campaign runs: the GPU's folder name, settings added to every run, and a
    substitution of cells and methods (tiny shapes for a CPU smoke campaign)."""

    gpu: str
    questions: int
    overrides: tuple[str, ...] = ()
    substitute: dict = field(default_factory=dict)  # "group=name" prefix -> replacement override


TINY = {"experiment/cell=": "experiment/cell=tiny_replay", "experiment/method=l3_70b_ar": "experiment/method=tiny_ar",
        "experiment/method=l3_70b_sp6": "experiment/method=tiny_sp", "experiment/method=l3_8b_sp6":
        "experiment/method=tiny_sp", "experiment/method=l3_70b_eg2": "experiment/method=tiny_eg2",
        "experiment/method=l3_8b_eg2": "experiment/method=tiny_eg2", "experiment/method=l3_70b_hierspec":
        "experiment/method=tiny_hierspec", "+experiment/method=q3_quasar": "+experiment/method=tiny_quasar"}
PROFILES = {
    "h200": Profile("h200", questions=2),
    "smoke": Profile("smoke", questions=1, overrides=(f"{KEYS['runtime']}=cpu", f"{KEYS['new_tokens']}=4",
                                                      f"{KEYS['max_seq_len']}=2048", "timing.warmup=0",
                                                      "output.progress=false"), substitute=TINY),
}


def overrides(run: Run, profile: Profile, root: Path, questions: int, extra: tuple[str, ...] = ()) -> list[str]:
    """The full override list of ``run`` under ``profile``, writing under ``root``."""
    out = []
    for item in run.overrides:
        prefix = next((p for p in profile.substitute if item.startswith(p)), None)
        out.append(profile.substitute[prefix] if prefix else item)
    every = run.taus.get("*")
    by_task = {task: tau.value for task, tau in run.taus.items() if task != "*"}
    out += [f"{KEYS['synthetic']}=true", f"{KEYS['questions']}={questions}",
            f"{KEYS['tau_source']}='{run.source()}'", f"{KEYS['root']}={root / 'runs'}"]
    if every is not None and every.value > 1:
        out.append(f"{KEYS['tau']}={every.value:g}")
    if by_task:
        out.append(KEYS["tau_by_task"] + "={" + ",".join(f"{t}:{v:g}" for t, v in by_task.items()) + "}")
    return [*out, *profile.overrides, *extra]


def estimate_s(run: Run, questions: int) -> float:
    """Rough GPU seconds of ``run`` on an H200 (see ``TARGETS``): build + warm-up, then every method's tokens."""
    setup, tok_s = TARGETS[run.target]
    return setup + run.methods * run.tasks * questions * run.new_tokens / tok_s


def default_root(results: Path, gpu: str, today: str) -> Path:
    """The newest campaign folder of this GPU with unfinished runs, else ``results/<gpu>/<today>``."""
    for folder in sorted((results / gpu).glob("*/campaign.json"), reverse=True):
        ledger = json.loads(folder.read_text())
        if any(entry.get("status") != DONE for entry in ledger["runs"].values()) or \
                len(ledger["runs"]) < len(runs()):
            return folder.parent
    return results / gpu / today


def select(plan: list[Run], only: list[str] | None) -> list[Run]:
    return [r for r in plan if not only or any(fnmatchcase(r.id, pattern) for pattern in only)]


class Ledger:
    """``campaign.json``: the status, attempts and wall time of every run started so far."""

    def __init__(self, root: Path):
        self.path = root / "campaign.json"
        self.runs = json.loads(self.path.read_text())["runs"] if self.path.exists() else {}

    def status(self, run_id: str) -> str | None:
        return self.runs.get(run_id, {}).get("status")

    def record(self, run: Run, status: str, wall_s: float, log: Path, command: list[str]) -> None:
        entry = self.runs.setdefault(run.id, {"attempts": 0, "wall_s": 0.0})
        entry.update(status=status, attempts=entry["attempts"] + 1, wall_s=round(entry["wall_s"] + wall_s, 1),
                     log=str(log), overrides=command, tau_source=run.source())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"runs": self.runs}, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)


def launch(command: list[str], log: Path, timeout_s: float) -> tuple[str, float]:
    """Run one ``python -m specbench`` process (its own process group), stopped after ``timeout_s``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("a") as out:
        proc = subprocess.Popen([sys.executable, "-m", "specbench", *command], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return CUT, time.monotonic() - start
    return (DONE if code == 0 else FAILED), time.monotonic() - start


def execute(plan: list[Run], profile: Profile, root: Path, budget_s: float, questions: int,
            extra: tuple[str, ...] = (), retry_failed: bool = False, say=print) -> dict[str, int]:
    """Run what is left of ``plan`` within ``budget_s``; returns how many runs ended in each status this chunk
    (``pending`` counts the runs left for the next one)."""
    ledger = Ledger(root)
    start = time.monotonic()
    counts = {DONE: 0, CUT: 0, FAILED: 0, "pending": 0}
    for run in plan:
        status = ledger.status(run.id)
        if status == DONE or (status == FAILED and not retry_failed):
            continue
        left = budget_s - (time.monotonic() - start)
        if left < MIN_START_S or counts[CUT]:  # the budget is spent: the rest is the next chunk's
            counts["pending"] += 1
            continue
        command = [*overrides(run, profile, root, questions, extra), f"hydra.run.dir={root / 'logs' / run.id}"]
        log = root / "logs" / f"{run.id}.log"
        say(f"{run.id}: starting ({left:.0f} s of budget left, estimate {estimate_s(run, questions):.0f} s)")
        status, wall = launch(command, log, left)
        ledger.record(run, status, wall, log, command)
        counts[status] += 1
        say(f"{run.id}: {status} after {wall:.0f} s" + (f" (log: {log})" if status != DONE else ""))
        if status == CUT:
            counts["pending"] += 1
    return counts
