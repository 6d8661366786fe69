"""The code that runs inside the sandbox: a trusted checker process and an untrusted candidate process.

Both run as ``python -I -S -c <this file> checker|candidate``. The checker reads one JSON message from stdin
(the pass token, the limits, the tests, the solution), closes stdin, makes itself non-dumpable (so the candidate,
the same user, can neither ptrace it nor read its memory or fds through /proc), sets the resource limits and
starts the candidate. The candidate runs the model's solution and answers calls to its entry point over a pipe;
the tests run in the checker and see only plain values decoded from the candidate's replies. The checker writes
the token to its stdout only after ``check(candidate)`` returns; the candidate never holds the token or that fd.
"""

import json
import os
import struct
import sys
import traceback

PR_SET_DUMPABLE = 4
MAX_MESSAGE = 64 << 20
HEADER = struct.Struct(">Q")
SCALARS = (type(None), bool, int, float, str)
SEQUENCES = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}
BUILDERS = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


class CandidateError(Exception):
    """The candidate raised, exited, or answered with something that is not a plain value."""


def encode(value):
    """A JSON tree for a plain value: scalars as themselves, containers tagged; exact types only, so a
    subclass with its own ``__eq__`` cannot cross."""
    kind = type(value)
    if kind in SCALARS:
        return value
    if kind in SEQUENCES:
        return {SEQUENCES[kind]: [encode(v) for v in value]}
    if kind is dict:
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if kind is bytes:
        return {"bytes": value.hex()}
    if kind is complex:
        return {"complex": [value.real, value.imag]}
    raise TypeError(f"a {kind.__name__} cannot leave the sandbox (only plain values can)")


def decode(tree):
    """Inverse of ``encode``."""
    if not isinstance(tree, dict):
        return tree
    (tag, body), = tree.items()
    if tag in BUILDERS:
        return BUILDERS[tag](decode(v) for v in body)
    if tag == "dict":
        return {decode(k): decode(v) for k, v in body}
    if tag == "bytes":
        return bytes.fromhex(body)
    if tag == "complex":
        return complex(*body)
    raise CandidateError(f"unknown tag {tag!r}")


def send(stream, message) -> None:
    data = json.dumps(message).encode()
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream):
    """The next message, or None at end of stream."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    size, = HEADER.unpack(header)
    if size > MAX_MESSAGE:
        raise CandidateError(f"a message of {size} bytes (limit {MAX_MESSAGE})")
    data = stream.read(size)
    if len(data) < size:
        return None
    return json.loads(data)


def set_limits(limits: dict) -> None:
    """CPU seconds, address space, processes, file size and open files, inherited by the candidate."""
    import resource

    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


def checker() -> None:
    import ctypes  # imported here: the candidate process does not need them, and starts faster without
    import subprocess

    request = json.loads(sys.stdin.buffer.read())
    os.close(0)
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")
    set_limits(request["limits"])
    token = request["token"]
    child = subprocess.Popen([sys.executable, "-I", "-S", "-c", request["source"], "candidate"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)

    def call(*args, **kwargs):
        send(child.stdin, {"args": encode(list(args)), "kwargs": encode(kwargs)})
        reply = receive(child.stdout)
        if reply is None:
            raise CandidateError("the candidate process ended")
        if "error" in reply:
            raise CandidateError(reply["error"])
        return decode(reply["ok"])

    send(child.stdin, {"solution": request["solution"], "entry_point": request["entry_point"]})
    ready = receive(child.stdout)
    if ready is None or "error" in ready:
        raise CandidateError(ready["error"] if ready else "the candidate process ended")
    namespace = {"__name__": "__checker__"}
    exec(compile(request["tests"], "tests.py", "exec"), namespace)
    namespace[request["entry_point"]] = call  # some tests call the function by name, not as ``candidate``
    namespace["check"](call)
    os.write(1, f"{token}\n".encode())


def candidate() -> None:
    """Serve calls to the solution's entry point; its own prints go to stderr, away from the replies."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    setup = receive(requests)
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(setup["solution"], "solution.py", "exec"), namespace)
        function = namespace[setup["entry_point"]]
    except BaseException:
        send(replies, {"error": traceback.format_exc(limit=-3)})
        return
    send(replies, {"ok": None})
    while (request := receive(requests)) is not None:
        try:
            reply = {"ok": encode(function(*decode(request["args"]), **decode(request["kwargs"])))}
        except BaseException:
            reply = {"error": traceback.format_exc(limit=-3)}
        send(replies, reply)


if __name__ == "__main__":
    {"checker": checker, "candidate": candidate}[sys.argv[1]]()
