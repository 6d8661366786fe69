"""Run the campaign's plan under a time budget, in worker processes that run many runs each.

A worker (``campaign.worker``) runs the pending runs in plan order in one process, so consecutive runs on one target
build it once (``runner.loaded``). Runs go to ``<root>/runs/<experiment>/<config hash>/``; ``<root>/campaign.json``
records each run's status (``running`` while a worker measures it, then ``done``, ``cut`` by the budget or
``failed``) and ``<root>/logs/<run id>.log`` its output. A worker is started only while at least ``MIN_START_S`` of
the budget is left and is stopped when the budget ends; the runner rewrites its parquet after every question, so
the next chunk (the same command) resumes a cut run at its first unmeasured question. A worker that dies (a crash
the run could not report) leaves its run ``failed`` and the chunk goes on with a new worker. Done runs are skipped;
failed runs are skipped until ``retry_failed``.
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
DONE, CUT, FAILED, RUNNING = "done", "cut", "failed", "running"


@dataclass(frozen=True)
class Profile:
    """Where and at what size a campaign runs: the GPU's folder name, synthetic prompts per task (``questions``;
    ``many_task_questions`` for runs over five or more tasks, e.g. Spec-Bench's six), a cap on the tokens generated
    per prompt (``max_new_tokens``), settings added to every run, and a substitution of cells and methods (tiny
    shapes for a CPU smoke campaign)."""

    gpu: str
    questions: int
    many_task_questions: int | None = None
    max_new_tokens: int | None = None
    overrides: tuple[str, ...] = ()
    substitute: dict = field(default_factory=dict)  # "group=name" prefix -> replacement override

    def questions_for(self, run: Run, questions: int | None = None) -> int:
        """Prompts per task of ``run``: ``questions`` when given (``--questions``), else the profile's."""
        if questions is not None:
            return questions
        return self.many_task_questions if run.tasks >= 5 and self.many_task_questions else self.questions

    def new_tokens(self, run: Run) -> int:
        """Tokens ``run`` generates per prompt: its experiment's ``max_new_tokens``, capped by the profile's."""
        return min(run.new_tokens, self.max_new_tokens or run.new_tokens)


TINY = {"experiment/cell=": "experiment/cell=tiny_replay", "experiment/method=l3_70b_ar": "experiment/method=tiny_ar",
        "experiment/method=l3_70b_sp6": "experiment/method=tiny_sp", "experiment/method=l3_8b_sp6":
        "experiment/method=tiny_sp", "experiment/method=l3_70b_eg2": "experiment/method=tiny_eg2",
        "experiment/method=l3_8b_eg2": "experiment/method=tiny_eg2", "experiment/method=l3_70b_hierspec":
        "experiment/method=tiny_hierspec", "+experiment/method=q3_quasar": "+experiment/method=tiny_quasar"}
# h200: one warm-up of 128 new tokens per method (it captures every graph a replayed run uses; the worker's earlier
# runs on the same target have warmed the GPU); 256 timed tokens per prompt (a shape-only step's time hardly
# depends on the context length: docs/analysis.md, "The shape-only campaign"); one prompt per task on Spec-Bench's
# six tasks, two on single-task runs
PROFILES = {
    "h200": Profile("h200", questions=2, many_task_questions=1, max_new_tokens=256,
                    overrides=("timing.warmup=1", "timing.warmup_new_tokens=128")),
    "smoke": Profile("smoke", questions=1, max_new_tokens=4, overrides=(f"{KEYS['runtime']}=cpu",
                                                      f"{KEYS['max_seq_len']}=2048", "timing.warmup=0",
                                                      "output.progress=false"), substitute=TINY),
}


def overrides(run: Run, profile: Profile, root: Path, questions: int | None = None,
              extra: tuple[str, ...] = ()) -> list[str]:
    """The full override list of ``run`` under ``profile``, writing under ``root`` (``questions``: prompts per task,
    default the profile's)."""
    questions = profile.questions_for(run, questions)
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
    if profile.new_tokens(run) < run.new_tokens:
        out.append(f"{KEYS['new_tokens']}={profile.new_tokens(run)}")
    return [*out, *profile.overrides, *extra]


def estimate_s(run: Run, questions: int, new_tokens: int, built: bool = False) -> float:
    """Rough GPU seconds of ``run`` on an H200 (see ``TARGETS``): the build (unless the previous run ``built`` the
    same target), its fixed cost, then every method's ``new_tokens`` per prompt."""
    setup, tok_s, per_run = TARGETS[run.target]
    return (0 if built else setup) + per_run + run.methods * run.tasks * questions * new_tokens / tok_s


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

    def start(self, run: Run, log: Path, command: list[str]) -> None:
        """``run`` is being measured now (a new attempt)."""
        entry = self.runs.setdefault(run.id, {"attempts": 0, "wall_s": 0.0})
        entry.update(status=RUNNING, attempts=entry["attempts"] + 1, log=str(log), overrides=command,
                     tau_source=run.source())
        self._write()

    def finish(self, run_id: str, status: str, wall_s: float = 0.0) -> None:
        entry = self.runs[run_id]
        entry.update(status=status, wall_s=round(entry["wall_s"] + wall_s, 1))
        self._write()

    def running(self) -> list[str]:
        return [run_id for run_id, entry in self.runs.items() if entry.get("status") == RUNNING]

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"runs": self.runs}, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)


def profile_name(profile: Profile) -> str:
    return next(name for name, known in PROFILES.items() if known == profile)


def launch(job: Path, log: Path, timeout_s: float) -> bool:
    """Run one worker on the job file ``job`` (its own process group); False when it was stopped at ``timeout_s``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        proc = subprocess.Popen([sys.executable, "-m", "specbench.campaign.worker", str(job)], stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return False
    return True


def execute(plan: list[Run], profile: Profile, root: Path, budget_s: float, questions: int | None = None,
            extra: tuple[str, ...] = (), retry_failed: bool = False, say=print) -> dict[str, int]:
    """Run what is left of ``plan`` within ``budget_s``; returns how many runs ended in each status this chunk,
    ``pending``: the runs left for the next one, ``failed_left``: the failed ones (retried with ``retry_failed``)."""
    start = time.monotonic()
    counts = {DONE: 0, CUT: 0, FAILED: 0, "pending": 0, "failed_left": 0}
    tried: set[str] = set()
    while True:
        ledger = Ledger(root)
        todo = [run for run in plan if run.id not in tried and ledger.status(run.id) != DONE
                and (ledger.status(run.id) != FAILED or retry_failed)]
        left = budget_s - (time.monotonic() - start)
        if not todo or left < MIN_START_S or counts[CUT]:
            break
        before = {run.id: ledger.runs.get(run.id, {}).get("attempts", 0) for run in todo}
        job = root / "logs" / "worker.json"
        job.parent.mkdir(parents=True, exist_ok=True)
        job.write_text(json.dumps({"profile": profile_name(profile), "root": str(root), "questions": questions,
                                   "extra": list(extra), "budget_s": left, "runs": [run.id for run in todo]}, indent=1))
        say(f"worker: {len(todo)} runs to go, {left:.0f} s of budget left")
        finished = launch(job, root / "logs" / "workers.log", left)
        ledger = Ledger(root)
        for run_id in ledger.running():  # the run the worker was measuring when it was stopped or died
            ledger.finish(run_id, FAILED if finished else CUT)
        attempted = [run.id for run in todo if ledger.runs.get(run.id, {}).get("attempts", 0) > before[run.id]]
        for run_id in attempted:
            tried.add(run_id)
            counts[ledger.status(run_id)] += 1
            if ledger.status(run_id) != DONE:
                say(f"{run_id}: {ledger.status(run_id)} (log: {ledger.runs[run_id]['log']})")
        if not attempted:  # the worker failed before its first run: another one would too
            say(f"the worker ran nothing; see {root / 'logs' / 'workers.log'}")
            break
    ledger = Ledger(root)
    counts["pending"] = sum(ledger.status(r.id) != DONE and (retry_failed or ledger.status(r.id) != FAILED)
                            for r in plan)
    counts["failed_left"] = sum(ledger.status(r.id) == FAILED for r in plan)
    return counts
