"""Run model-written code isolated by the operating system: bubblewrap namespaces, rlimits, a pass token.

Each run starts ``bwrap`` (as ``nobody`` when the harness is root) with new user, PID, network, mount, IPC, UTS
and cgroup namespaces: inside, the uid is 65534 with no capabilities, ``/usr`` is read-only, ``/tmp`` is a
private tmpfs capped in size, and nothing else of the host exists. The checker and candidate processes of
``_sandbox_child`` run there. A run passes only when the checker's stdout is the per-run random token, which it
writes after ``check(...)`` returns; the exit status is never trusted. See docs/datasets.md for the threat model.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

CHILD_SOURCE = Path(__file__).with_name("_sandbox_child.py")
PYTHON = "/usr/bin/python3"  # the distribution's interpreter: readable by the unprivileged sandbox user
NOBODY = 65534
TMP_BYTES = 64 << 20
FILE_BYTES = 16 << 20
OUTPUT_BYTES = 1 << 20
MAX_PROCESSES = 64
MAX_OPEN_FILES = 64


class CodeExecutionNotAllowed(RuntimeError):
    """Raised when code execution is needed but the caller did not opt in."""


class SandboxUnavailable(RuntimeError):
    """Raised instead of running code when the sandbox cannot be built on this machine."""


@dataclass
class ExecResult:
    """``status`` is one of ``passed``, ``failed``, ``timeout``; ``detail`` is the tail of the diagnostics."""

    status: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def bwrap_command(program: list[str]) -> list[str]:
    """The bubblewrap command line that runs ``program`` (argv inside the sandbox)."""
    return [
        "bwrap", "--unshare-all", "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY),
        "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv", "--setenv", "LANG", "C.UTF-8",
        "--setenv", "HOME", "/tmp", "--setenv", "PATH", "/usr/bin",
        "--ro-bind", "/usr", "/usr", "--ro-bind-try", "/lib", "/lib", "--ro-bind-try", "/lib64", "/lib64",
        "--ro-bind-try", "/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
        "--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--chdir", "/tmp", "--remount-ro", "/",
        *program,
    ]


def _start(program: list[str]) -> subprocess.Popen:
    """Start bubblewrap in its own process group; as ``nobody`` on the host when the harness is root, so that
    the sandbox user maps to an unprivileged host user too."""
    drop = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if os.geteuid() == 0 else {}
    return subprocess.Popen(bwrap_command(program), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd="/", env={"PATH": "/usr/bin:/bin"},
                            start_new_session=True, **drop)


@functools.cache
def unavailable_reason() -> str | None:
    """Why the sandbox cannot run here (no bubblewrap, no interpreter, no user namespaces), or None."""
    if shutil.which("bwrap", path="/usr/bin:/bin") is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if not os.access(PYTHON, os.X_OK):
        return f"{PYTHON} (the interpreter the sandbox runs) is missing"
    probe = _start([PYTHON, "-I", "-S", "-c", "pass"])
    try:
        _, err = probe.communicate(b"", timeout=30)
    except subprocess.TimeoutExpired:
        _kill(probe)
        return "bubblewrap did not start a trivial program within 30 s"
    if probe.returncode != 0:
        return (f"bubblewrap cannot create the sandbox ({err.decode(errors='replace').strip()}); it needs "
                "unprivileged user namespaces (sysctl user.max_user_namespaces > 0, and "
                "kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0 where "
                "those exist)")
    return None


def require_sandbox() -> None:
    """Raise ``SandboxUnavailable`` with the reason when code cannot be run isolated; never run it unisolated."""
    reason = unavailable_reason()
    if reason is not None:
        raise SandboxUnavailable(f"refusing to execute generated code: {reason}")


def run_tests(solution: str, tests: str, entry_point: str, *, timeout: float = 3.0, memory_mb: int = 1024
              ) -> ExecResult:
    """Run ``tests`` (trusted code defining ``check(candidate)``) against ``entry_point`` of ``solution``
    (untrusted code) in a fresh sandbox.

    The solution runs in its own process; ``check`` receives a function that calls it and returns plain values.
    Limits: wall-clock ``timeout`` (everything is killed), CPU seconds, ``memory_mb`` of address space per
    process, 64 processes, 16 MiB per file, 64 MiB in ``/tmp``, 64 open files, 1 MiB of output.
    """
    require_sandbox()
    token = secrets.token_hex(16)
    limits = {"RLIMIT_CPU": int(timeout) + 1, "RLIMIT_AS": memory_mb << 20, "RLIMIT_NPROC": MAX_PROCESSES,
              "RLIMIT_FSIZE": FILE_BYTES, "RLIMIT_NOFILE": MAX_OPEN_FILES, "RLIMIT_CORE": 0}
    source = CHILD_SOURCE.read_text(encoding="utf-8")
    request = {"token": token, "limits": limits, "source": source, "tests": tests, "solution": solution,
               "entry_point": entry_point}
    proc = _start([PYTHON, "-I", "-S", "-c", source, "checker"])
    out, err, ended = _exchange(proc, json.dumps(request).encode(), timeout)
    detail = err[-4000:].decode(errors="replace")
    if ended == "timeout":
        return ExecResult("timeout", f"killed after {timeout:g} s\n{detail}")
    if ended == "overflow":
        return ExecResult("failed", f"killed: more than {OUTPUT_BYTES} bytes of output\n{detail}")
    return ExecResult("passed" if out == f"{token}\n".encode() else "failed", detail)


def _exchange(proc: subprocess.Popen, request: bytes, timeout: float) -> tuple[bytes, bytes, str]:
    """Send ``request`` on stdin and read stdout and stderr until both close, the deadline, or the output
    bound; returns ``(stdout, stderr, how)`` with ``how`` one of ``exited``, ``timeout``, ``overflow``."""
    deadline = time.monotonic() + timeout
    chunks = {proc.stdout: [], proc.stderr: []}
    total = 0
    how = "exited"
    with selectors.DefaultSelector() as selector:
        os.set_blocking(proc.stdin.fileno(), False)
        selector.register(proc.stdin, selectors.EVENT_WRITE)
        selector.register(proc.stdout, selectors.EVENT_READ)
        selector.register(proc.stderr, selectors.EVENT_READ)
        pending = memoryview(request)
        while selector.get_map() and how == "exited":
            left = deadline - time.monotonic()
            events = selector.select(left) if left > 0 else []
            if not events:
                how = "timeout"
            for key, _ in events:
                if key.fileobj is proc.stdin:
                    try:
                        pending = pending[os.write(proc.stdin.fileno(), pending):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                data = os.read(key.fileobj.fileno(), 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                chunks[key.fileobj].append(data)
                total += len(data)
                if total > OUTPUT_BYTES:
                    how = "overflow"
    if how == "exited":
        try:
            proc.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            how = "timeout"
    if how != "exited":
        _kill(proc)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    return b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr]), how


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL bubblewrap's process group; ``--die-with-parent`` then ends the namespace's init, and with it
    every process in the sandbox, detached or not."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
