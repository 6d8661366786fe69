"""Where the host was when the GPU ran out of work: the idle gaps of a profiler trace, charged to Python frames.

A trace (``torch.profiler`` with CPU and CUDA activities and ``with_stack=True``, exported as Chrome JSON) holds the
device's kernels, copies and memsets, the host's CUDA runtime calls (a launch and the work it starts share a
``correlation`` id) and the host's Python frames. Each gap between device activity longer than ``min_us`` is
matched to the launch of the work that ends it:

- launched after the gap began, the host was late: the gap goes to the innermost ``scope`` frames active on the
  host when the device went idle (what it was doing instead of launching), and the frames of the late launch;
- launched before, the device waited on something else (a graph's own launch latency, an event): ``device``.

The Python tracer slows the host, so the gaps are longer than in an untraced run; the sites are what to look at.
"""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

DEVICE = {"kernel", "gpu_memcpy", "gpu_memset"}
RUNTIME = {"cuda_runtime", "cuda_driver"}


def load(path: Path) -> list[dict]:
    """The events of a Chrome trace (``.json`` or ``.json.gz``)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["traceEvents"]


def _frame(name: str) -> str:
    """``/path/to/specbench/x/y.py(12): f`` -> ``y.py(12): f``."""
    return name.rsplit("/", 1)[-1]


class _Stacks:
    """The Python frames open at increasing times on one host thread (frames nest, so one sweep answers all)."""

    def __init__(self, python: list[dict], scope: str):
        self.events = sorted(python, key=lambda e: (e["ts"], -e["dur"]))
        self.scope, self.next, self.open = scope, 0, []

    def at(self, t: float, depth: int) -> tuple[str, ...]:
        while self.next < len(self.events) and self.events[self.next]["ts"] <= t:
            e = self.events[self.next]
            while self.open and self.open[-1]["ts"] + self.open[-1]["dur"] <= e["ts"]:
                self.open.pop()
            self.open.append(e)
            self.next += 1
        while self.open and self.open[-1]["ts"] + self.open[-1]["dur"] <= t:
            self.open.pop()
        mine = [_frame(e["name"]) for e in self.open if self.scope in e["name"]]
        return tuple(mine[-depth:])


def idle_gaps(events: list[dict], min_us: float = 5.0, depth: int = 3, scope: str = "specbench/") -> list[dict]:
    """Every device idle gap over ``min_us``: start (µs), length, ``site`` (the host's ``depth`` innermost ``scope``
    frames when the device went idle, or ``device``) and ``launch`` (the frames that launched the work ending it)."""
    spans = [e for e in events if e.get("ph") == "X"]
    device = sorted((e for e in spans if e.get("cat") in DEVICE), key=lambda e: e["ts"])
    launches = {e["args"]["correlation"]: e for e in spans
                if e.get("cat") in RUNTIME and "correlation" in e.get("args", {})}
    host = collections.Counter(e["tid"] for e in launches.values()).most_common(1)
    python = [e for e in spans if e.get("cat") == "python_function" and host and e["tid"] == host[0][0]]
    pending = []  # (gap start, gap length, launch time or None, next activity)
    busy_end = None
    for e in device:
        if busy_end is not None and e["ts"] - busy_end > min_us:
            launch = launches.get(e.get("args", {}).get("correlation"))
            late = launch is not None and launch["ts"] > busy_end
            pending.append((busy_end, e["ts"] - busy_end, launch["ts"] if late else None, e["name"]))
        busy_end = e["ts"] + e["dur"] if busy_end is None else max(busy_end, e["ts"] + e["dur"])
    at_start, at_launch = _Stacks(python, scope), _Stacks(python, scope)
    gaps = []
    for start, length, launched, name in pending:  # in time order, as the sweeps need
        if launched is None:
            site, launch = "device", ""
        else:
            site = " > ".join(at_start.at(start, depth)) or f"host, outside {scope}"
            launch = " > ".join(at_launch.at(launched, depth))
        gaps.append({"start_us": start, "us": length, "site": site, "launch": launch, "next": name[:80]})
    return gaps


def summarize(gaps: list[dict], steps: int, top: int = 12) -> list[dict]:
    """Gaps totalled per (site, launch), per decoding step, largest first."""
    total = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for g in gaps:
        row = total[g["site"], g["launch"]]
        row[0] += 1
        row[1] += g["us"]
        row[2] = max(row[2], g["us"])
    rows = [{"site": site, "launch": launch, "gaps_per_step": n / steps, "us_per_step": us / steps, "max_us": worst}
            for (site, launch), (n, us, worst) in total.items()]
    return sorted(rows, key=lambda r: -r["us_per_step"])[:top]
