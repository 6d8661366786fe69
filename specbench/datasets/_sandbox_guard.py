"""Run ``program.py`` from the current folder under resource limits and an audit hook (child side of the sandbox).

Usage: ``python -I -B _sandbox_guard.py MEMORY_MB CPU_SECONDS``. The hook blocks network, process creation,
native-library loading, file removal/renaming, and writes outside the current folder. A blocked call writes
a ``SPECBENCH-FORBIDDEN <event>`` line to stderr (so the parent sees it even if the program catches the error)
and raises ``PermissionError``. This is a best-effort guard, not an isolation boundary.
"""

import os
import resource
import sys

BLOCKED = frozenset({
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.startfile", "os.kill", "os.killpg", "ctypes.dlopen", "os.remove", "os.rmdir", "os.rename",
    "shutil.rmtree", "os.truncate", "os.chmod", "os.chown", "os.link", "os.symlink",
})
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
HERE = os.getcwd()


def _writes_outside(args) -> bool:
    path, mode, flags = args
    if not isinstance(path, (str, bytes, os.PathLike)):
        return False
    writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & WRITE_FLAGS)
    target = os.path.abspath(os.fsdecode(path))
    return writing and os.path.commonpath([target, HERE]) != HERE


def _hook(event, args):
    if event in BLOCKED or event.startswith("socket.") or (event == "open" and _writes_outside(args)):
        os.write(2, f"\nSPECBENCH-FORBIDDEN {event}\n".encode())
        raise PermissionError(f"{event} is not allowed in the sandbox")


def main() -> None:
    memory = int(sys.argv[1]) << 20
    cpu = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))
    with open("program.py", encoding="utf-8") as f:
        code = compile(f.read(), "program.py", "exec")
    sys.addaudithook(_hook)
    exec(code, {"__name__": "__sandbox__"})


if __name__ == "__main__":
    main()
