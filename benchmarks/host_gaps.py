"""Where the host was when the GPU ran out of work: the idle gaps of a profiler trace, charged to Python frames.

A trace (``torch.profiler`` with CPU and CUDA activities and ``with_stack=True``, exported as Chrome JSON) holds the
device's kernels, copies and memsets, the host's CUDA runtime calls (a launch and the work it starts share a
``correlation`` id) and the host's Python frames. Each gap between device activity longer than ``min_us`` is
matched to the launch of the work that ends it:

- launched after the gap began, the host was late: the gap goes to the innermost ``scope`` frames active on the
  host when the device went idle (what it was doing instead of launching), and the frames of the late launch;
- launched before, the device waited on something else (a graph's own launch latency, an event): ``device``.

The Python tracer slows the host, so the gaps are longer than in an untraced run; the sites are what to look at.

``device_time`` splits the device's whole timeline instead: busy time by how the work was launched (a graph, or
each eager operation by its kernel's name) and idle time by the launch that ended it, however short the gap.
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


def _activity(events: list[dict]) -> tuple[list[dict], list[dict], dict]:
    """(every span, the device's activity in time order, the runtime's launches by correlation id)."""
    spans = [e for e in events if e.get("ph") == "X"]
    device = sorted((e for e in spans if e.get("cat") in DEVICE), key=lambda e: e["ts"])
    launches = {e["args"]["correlation"]: e for e in spans
                if e.get("cat") in RUNTIME and "correlation" in e.get("args", {})}
    return spans, device, launches


def idle_gaps(events: list[dict], min_us: float = 5.0, depth: int = 3, scope: str = "specbench/") -> list[dict]:
    """Every device idle gap over ``min_us``: start (µs), length, ``site`` (the host's ``depth`` innermost ``scope``
    frames when the device went idle, or ``device``) and ``launch`` (the frames that launched the work ending it)."""
    spans, device, launches = _activity(events)
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


def _launch_kind(launch: dict | None, activity: dict) -> str:
    """``graph`` for work a CUDA graph launch started, else the eager activity's name (cut to 60 characters)."""
    if launch is not None and "GraphLaunch" in launch["name"]:
        return "graph"
    return activity["name"][:60]


def device_time(events: list[dict], steps: int, top: int = 12) -> dict:
    """Per step, µs of device time: ``graph_busy`` (work inside graph launches), ``eager_busy`` and ``idle``, with
    the ``eager`` operations (busy µs and count per step, by kernel name) and ``idle_before`` (the idle µs ended by a
    graph launch or by each eager operation), both largest first. Concurrent activity counts once, for what started
    first. ``graphs``: each graph (by its kernel count and first kernel) with its launches per step, its mean span on the
    device (first kernel's start to last one's end) and the mean idle time before its first kernel."""
    _, device, launches = _activity(events)
    busy, count, idle = collections.Counter(), collections.Counter(), collections.Counter()
    graphs: dict = {}  # per graph launch (its correlation id): [first start, last end, kernels, first name, idle before]
    busy_end = None
    for e in device:
        corr = e.get("args", {}).get("correlation")
        kind = _launch_kind(launches.get(corr), e)
        end = e["ts"] + e["dur"]
        gap = e["ts"] - busy_end if busy_end is not None and e["ts"] > busy_end else 0.0
        if kind == "graph":
            g = graphs.setdefault(corr, [e["ts"], end, 0, e["name"][:40], gap])
            g[1], g[2] = max(g[1], end), g[2] + 1
        if gap:
            idle[kind] += gap
        start = e["ts"] if busy_end is None else max(e["ts"], busy_end)
        busy[kind] += max(0.0, end - start)
        count[kind] += 1
        busy_end = end if busy_end is None else max(busy_end, end)
    eager = {k: {"us": v / steps, "count": count[k] / steps} for k, v in busy.most_common() if k != "graph"}
    launched = collections.defaultdict(list)  # a graph's launches, keyed by its kernel count and first kernel
    for first, last, kernels, name, gap in graphs.values():
        launched[f"{kernels} kernels from {name}"].append((last - first, gap))
    per_graph = {key: {"launches": len(v) / steps, "span_us": sum(t for t, _ in v) / len(v),
                       "idle_before_us": sum(g for _, g in v) / len(v)}
                 for key, v in sorted(launched.items(), key=lambda kv: -sum(t for t, _ in kv[1]))[:top]}
    return {"graph_busy": busy["graph"] / steps, "eager_busy": sum(v for k, v in busy.items() if k != "graph") / steps,
            "idle": sum(idle.values()) / steps, "eager": dict(list(eager.items())[:top]),
            "idle_before": {k: v / steps for k, v in idle.most_common(top)}, "graphs": per_graph}
