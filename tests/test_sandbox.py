"""Hostile completions against the sandbox: every escape fails, every fake pass scores 0.

Each completion defines ``f`` returning the wrong answer 0 for ``check`` (``assert candidate() == 1``) and tries
one attack on the way; so a "passed" is always a fake pass. Effects are checked on the host, with a control
that shows the check would see a success.
"""

from __future__ import annotations

import os
import re
import resource
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from specbench.datasets.questions import Question
from specbench.datasets.sandbox import (
    OUTPUT_BYTES, TMP_BYTES, run_tests, unavailable_reason,
)
from specbench.datasets.scoring import humaneval_pass_at_1

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"no sandbox on this machine: {REASON}")

CHECK_ONE = "def check(candidate):\n    assert candidate() == 1\n"


def attempt(solution: str, timeout: float = 10.0):
    """Generous by default: a loaded CI machine must not turn a prompt failure into a timeout."""
    return run_tests(solution, CHECK_ONE, "f", timeout=timeout)


def reported(result, label: str) -> int:
    """The number the attack printed after ``label``."""
    return int(re.search(label + r" (\d+)", result.detail).group(1))


def host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.fixture
def victim():
    """A host process holding a secret in its environment, as the benchmark process holds its own."""
    secret = secrets.token_hex(8)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            env={"SPECBENCH_SECRET": secret})
    environ = Path(f"/proc/{proc.pid}/environ")
    deadline = time.monotonic() + 10  # a loaded host can show the new image's environment late (seen once in CI)
    while secret.encode() not in environ.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield proc, secret
    proc.kill()
    proc.wait()


def test_the_sandboxed_solution_passes_and_is_unprivileged():
    probe = "import os\ndef f():\n    print('ID', os.getuid(), os.getgid(), os.listdir('/'), flush=True)\n" \
            "    return 1\n"
    result = attempt(probe)
    assert result.passed, result.detail
    uid, gid, top = re.search(r"ID (\d+) (\d+) (\[.*\])", result.detail).groups()
    assert (uid, gid) == ("65534", "65534")
    assert set(eval(top)) == {"bin", "dev", "lib", "lib64", "proc", "tmp", "usr"}


def test_fork_exec_spawns_only_inside(tmp_path):
    code = f"""import _posixsubprocess, os, sys
def f():
    script = 'echo spawned > /tmp/ran; echo escaped > {tmp_path}/fork_exec'
    pid = _posixsubprocess.fork_exec(['/bin/sh', '-c', script], [b'/bin/sh'], True, (), None, None, -1, -1, -1, -1,
                                     -1, -1, *os.pipe(), False, False, -1, None, None, None, -1, None, False)
    os.waitpid(pid, 0)
    print('SPAWNED' if os.path.exists('/tmp/ran') else 'NOT SPAWNED', file=sys.stderr)
    return 0
"""
    result = attempt(code)
    assert result.status == "failed" and "SPAWNED" in result.detail and "NOT SPAWNED" not in result.detail
    assert not (tmp_path / "fork_exec").exists()


def test_multiprocessing_spawn_stays_inside(tmp_path):
    code = f"""import multiprocessing, os, sys
def f():
    child = multiprocessing.get_context('spawn').Process(
        target=os.system, args=('touch /tmp/ran; touch {tmp_path}/spawned',))
    child.start()
    child.join()
    print('SPAWNED' if os.path.exists('/tmp/ran') else 'NOT SPAWNED', file=sys.stderr)
    return 0
"""
    result = attempt(code)
    assert result.status == "failed" and "SPAWNED" in result.detail and "NOT SPAWNED" not in result.detail
    assert not (tmp_path / "spawned").exists()


def test_a_detached_process_dies_at_the_timeout():
    marker = f"specbench-detached-{secrets.token_hex(4)}"
    code = f"""import subprocess
def f():
    subprocess.Popen(['/bin/sh', '-c', 'sleep 30; : {marker}'], start_new_session=True)
    while True:
        pass
"""
    seen = []
    runner = threading.Thread(target=lambda: seen.append(attempt(code, timeout=5.0)))
    runner.start()
    alive_during = []
    while runner.is_alive():
        alive_during += host_processes_with(marker)
        time.sleep(0.1)
    assert seen[0].status == "timeout"
    assert alive_during, "control: the detached process was never seen running"
    time.sleep(0.2)
    assert host_processes_with(marker) == []


def test_no_writes_outside_the_private_tmp(tmp_path):
    existing = tmp_path / "existing"
    existing.write_text("x")
    os.utime(existing, (1_000_000, 1_000_000))
    code = f"""import os, sqlite3, sys
def f():
    attempts = {{
        'dir_fd host': lambda: os.open('dir_fd', os.O_CREAT | os.O_WRONLY, dir_fd=os.open('{tmp_path}', os.O_RDONLY)),
        'dir_fd root': lambda: os.open('usr/pwned', os.O_CREAT | os.O_WRONLY, dir_fd=os.open('/', os.O_RDONLY)),
        'mkdir': lambda: os.mkdir('/usr/pwned'),
        'mkdir host': lambda: os.mkdir('{tmp_path}/mkdir'),
        'mknod': lambda: os.mknod('/usr/pwned-node'),
        'mkfifo': lambda: os.mkfifo('/pwned-fifo'),
        'utime': lambda: os.utime('/usr/bin/python3', (0, 0)),
        'utime host': lambda: os.utime('{existing}', (0, 0)),
        'sqlite3': lambda: sqlite3.connect('/usr/pwned.db').execute('create table t (x)'),
        'sqlite3 host': lambda: sqlite3.connect('{tmp_path}/pwned.db').execute('create table t (x)'),
    }}
    for name, act in attempts.items():
        try:
            act()
            print('ESCAPED', name, file=sys.stderr)
        except (OSError, sqlite3.Error) as err:
            print('denied', name, type(err).__name__, file=sys.stderr)
    os.mkfifo('/tmp/fifo')  # control: the private folder is writable
    print('TMP WRITABLE', file=sys.stderr)
    return 0
"""
    before = os.stat("/usr/bin/python3").st_mtime
    result = attempt(code)
    assert result.status == "failed" and "TMP WRITABLE" in result.detail and "ESCAPED" not in result.detail
    assert result.detail.count("denied") == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]
    assert existing.stat().st_mtime == 1_000_000 and os.stat("/usr/bin/python3").st_mtime == before
    assert not any(Path(p).exists() for p in ("/usr/pwned", "/usr/pwned-node", "/pwned-fifo", "/usr/pwned.db"))


def test_host_secrets_stay_unreadable(victim):
    proc, secret = victim
    code = f"""import glob, os, sys
def f():
    for path in ['/proc/{proc.pid}/environ', f'/proc/{{os.getppid()}}/environ', '/etc/shadow',
                 *glob.glob('/proc/*/environ'), *glob.glob('/proc/*/cmdline')]:
        try:
            with open(path, 'rb') as file:
                content = file.read()
            if b'SPECBENCH_SECRET' in content or b'root:' in content:
                print('FOUND', path, content, file=sys.stderr)
        except OSError as err:
            print('denied', path, type(err).__name__, file=sys.stderr)
    print('ENVIRON', sorted(os.environ), file=sys.stderr)
    return 0
"""
    assert secret.encode() in Path(f"/proc/{proc.pid}/environ").read_bytes(), "control: readable from the host"
    result = attempt(code)
    assert result.status == "failed"
    assert "FOUND" not in result.detail and secret not in result.detail
    assert f"denied /proc/{proc.pid}/environ FileNotFoundError" in result.detail
    assert "denied /etc/shadow FileNotFoundError" in result.detail
    assert "ENVIRON ['HOME', 'LANG', 'PATH', 'PWD']" in result.detail


def test_the_benchmark_process_cannot_be_signalled_or_limited(victim):
    proc, _ = victim
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    code = f"""import os, resource, signal, sys
def f():
    for name, act in {{
        'pidfd': lambda: signal.pidfd_send_signal(os.pidfd_open({proc.pid}), signal.SIGKILL),
        'kill': lambda: os.kill({proc.pid}, signal.SIGKILL),
        'prlimit': lambda: resource.prlimit({os.getpid()}, resource.RLIMIT_NOFILE, (3, 3)),
        'prlimit victim': lambda: resource.prlimit({proc.pid}, resource.RLIMIT_NOFILE, (3, 3)),
    }}.items():
        try:
            act()
            print('DONE', name, file=sys.stderr)
        except OSError as err:
            print('denied', name, type(err).__name__, file=sys.stderr)
    os.kill(-1, signal.SIGKILL)  # everything this user may signal
    return 0
"""
    result = attempt(code)
    assert result.status == "failed"
    assert proc.poll() is None
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == limits
    assert "Max open files            3" not in Path(f"/proc/{proc.pid}/limits").read_text()


def test_no_network():
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    port = server.getsockname()[1]
    code = f"""import socket, sys
def f():
    for host in ['127.0.0.1', 'pypi.org', '1.1.1.1']:
        try:
            socket.create_connection((host, {port} if host == '127.0.0.1' else 443), timeout=1)
            print('CONNECTED', host, file=sys.stderr)
        except OSError as err:
            print('denied', host, type(err).__name__, file=sys.stderr)
    return 0
"""
    result = attempt(code)
    assert result.status == "failed" and "CONNECTED" not in result.detail
    assert result.detail.count("denied") == 3
    with pytest.raises(BlockingIOError):
        server.accept()
    server.close()


def test_an_output_flood_is_cut_at_the_bound():
    result = attempt("import sys\ndef f():\n    while True:\n        sys.stdout.write('x' * 65536)\n")
    assert result.status == "failed" and f"more than {OUTPUT_BYTES} bytes" in result.detail  # cut, not timed out


def test_a_disk_flood_stops_at_the_tmp_cap():
    code = """import os, sys
def f():
    written = 0
    for folder in ['/tmp', '/dev/shm', '/dev', '/']:
        for n in range(1000):
            try:
                with open(f'{folder}/fill{n}', 'wb') as file:
                    for _ in range(8):
                        written += file.write(b'x' * (1 << 20))
            except OSError:
                break
    print('WROTE', written, file=sys.stderr)
    return 0
"""
    result = attempt(code)
    assert result.status == "failed"
    assert TMP_BYTES // 2 < reported(result, "WROTE") <= TMP_BYTES


def test_process_count_is_capped():
    code = """import os, sys, time
def f():
    children = 0
    while children < 1000:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(5)
            os._exit(0)
        children += 1
    print('CHILDREN', children, file=sys.stderr)
    return 0
"""
    result = attempt(code)
    assert result.status == "failed"
    assert reported(result, "CHILDREN") < 64


FAKES = {
    "sys.exit(0) at import": "import sys\nsys.exit(0)\ndef f():\n    return 0\n",
    "sys.exit(0) in the call": "import sys\ndef f():\n    sys.exit(0)\n",
    "os._exit(0) in the call": "import os\ndef f():\n    os._exit(0)\n",
    "atexit + os._exit(0)": "import atexit, os\natexit.register(os._exit, 0)\ndef f():\n    return 0\n",
    "kill the checker": "import os, signal\ndef f():\n    os.kill(os.getppid(), signal.SIGKILL)\n",
    "guess a token": "import os\ndef f():\n    os.write(1, b'0' * 32 + b'\\n')\n    print('0' * 32)\n    return 0\n",
    "always-equal": "class Yes:\n    def __eq__(self, other):\n        return True\ndef f():\n    return Yes()\n",
    "int subclass": "class One(int):\n    def __eq__(self, other):\n        return True\ndef f():\n    return One(0)\n",
    "patch the builtins": "import builtins\nbuiltins.AssertionError = StopIteration\ndef f():\n    return 0\n",
}


@pytest.mark.parametrize("code", FAKES.values(), ids=FAKES.keys())
def test_fake_passes_fail(code):
    result = attempt(code)
    assert result.status == "failed", result.detail


def test_the_checker_and_its_token_are_out_of_reach():
    code = """import ctypes, os, sys
def f():
    checker = os.getppid()
    for path in ['mem', 'environ', 'maps', 'fd/0', 'fd/1']:
        try:
            open(f'/proc/{checker}/{path}', 'rb').read(64)
            print('READ', path, file=sys.stderr)
        except OSError as err:
            print('denied', path, type(err).__name__, file=sys.stderr)
    try:
        open(f'/proc/{checker}/fd/1', 'w').write('0' * 32 + '\\n')
    except OSError:
        print('denied writing', file=sys.stderr)
    if ctypes.CDLL(None).ptrace(16, checker, 0, 0) != 0:  # PTRACE_ATTACH
        print('denied ptrace', file=sys.stderr)
    print('OWN', len(open('/proc/self/environ', 'rb').read()) > 0, file=sys.stderr)  # control: its own entries
    return 0
"""
    result = attempt(code)
    assert result.status == "failed" and "READ" not in result.detail and "OWN True" in result.detail
    assert result.detail.count("denied") == 7


def test_fake_passes_score_zero_through_humaneval():
    question = Question("HumanEval/x", "humaneval", ['def f():\n    """One."""\n'], entry_point="f", test=CHECK_ONE)
    answers = ["def f():\n    return 1\n", *FAKES.values()]
    score, results = humaneval_pass_at_1(answers, [question] * len(answers), allow_code_execution=True, timeout=10.0,
                                         workers=2)
    assert [r.passed for r in results] == [True] + [False] * len(FAKES)
    assert score == pytest.approx(1 / len(answers))

