"""Run untrusted Python (model-written code) in a subprocess with time, memory and capability limits."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

GUARD = Path(__file__).with_name("_sandbox_guard.py")
FORBIDDEN_MARK = "SPECBENCH-FORBIDDEN"


class CodeExecutionNotAllowed(RuntimeError):
    """Raised when code execution is needed but the caller did not opt in."""


@dataclass
class ExecResult:
    """``status`` is one of ``passed``, ``failed``, ``timeout``, ``forbidden``; ``detail`` is the stderr tail."""

    status: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def run_program(program: str, *, timeout: float = 3.0, memory_mb: int = 1024) -> ExecResult:
    """Execute ``program`` in a fresh interpreter (``python -I -B``) inside a temporary folder.

    Limits: wall-clock ``timeout`` (the process is killed), CPU time, address space ``memory_mb``, files up to
    16 MiB. An audit hook blocks sockets, subprocesses, ``os.system``, ``ctypes`` loading, deletions and writes
    outside the folder. The environment is emptied. Best effort: run untrusted models in a container too.
    """
    with tempfile.TemporaryDirectory(prefix="specbench-exec-") as folder:
        Path(folder, "program.py").write_text(program, encoding="utf-8")
        cmd = [sys.executable, "-I", "-B", str(GUARD), str(memory_mb), str(int(timeout) + 1)]
        env = {"PATH": "/usr/bin:/bin", "HOME": folder, "LANG": "C.UTF-8"}
        try:
            done = subprocess.run(cmd, cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            return ExecResult("timeout", f"killed after {timeout:g} s")
    tail = done.stderr[-2000:]
    if FORBIDDEN_MARK in done.stderr:
        return ExecResult("forbidden", tail)
    return ExecResult("passed" if done.returncode == 0 else "failed", tail)
