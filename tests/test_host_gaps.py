"""The device idle gaps of a profiler trace, charged to the host frames that made them (benchmarks/host_gaps.py)."""

from __future__ import annotations

import gzip
import json

from benchmarks.host_gaps import device_time, idle_gaps, load, summarize

ROOT = "/repo/specbench/"


def _span(cat, name, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": args}


def _trace():
    """Kernel A (0-10), then the host commits (frames below) and launches B at 30 (runs 32-40); C was launched at 35
    but starts at 60 (device-side wait); D is 2 µs after C (under the threshold)."""
    return [
        _span("python_function", f"{ROOT}decoding/generate.py(40): step", 0, 100),
        _span("python_function", f"{ROOT}drafters/hierspec.py(105): propose", 5, 90),
        _span("python_function", f"{ROOT}decoding/session.py(120): commit", 8, 20),
        _span("python_function", "/usr/lib/torch/functional.py(9): cat", 9, 5),
        _span("python_function", f"{ROOT}drafters/eagle.py(77): observe", 28, 10),
        _span("python_function", f"{ROOT}drafters/eagle.py(90): observe", 41, 9),  # a sibling of the one before
        _span("cuda_runtime", "cudaLaunchKernel", 1, 1, correlation=1),
        _span("cuda_runtime", "cudaGraphLaunch", 30, 2, correlation=2),
        _span("cuda_runtime", "cudaLaunchKernel", 35, 1, correlation=3),
        _span("cuda_runtime", "cudaLaunchKernel", 36, 1, correlation=4),
        _span("kernel", "A", 0, 10, tid=7, correlation=1),
        _span("kernel", "B", 32, 8, tid=7, correlation=2),
        _span("kernel", "C", 60, 5, tid=7, correlation=3),
        _span("kernel", "D", 67, 1, tid=7, correlation=4),
    ]


def test_a_late_launch_is_charged_to_the_frames_open_when_the_device_went_idle():
    gaps = idle_gaps(_trace(), min_us=5.0)
    assert [(g["start_us"], g["us"]) for g in gaps] == [(10, 22), (40, 20)]
    late, waited = gaps
    assert late["site"] == "generate.py(40): step > hierspec.py(105): propose > session.py(120): commit"
    assert late["launch"] == "generate.py(40): step > hierspec.py(105): propose > eagle.py(77): observe"
    assert late["next"] == "B"
    assert waited["site"] == "device" and waited["launch"] == ""


def test_depth_and_scope_pick_the_frames():
    late = idle_gaps(_trace(), depth=1)[0]
    assert late["site"] == "session.py(120): commit"
    torch_frames = idle_gaps(_trace(), scope="/usr/lib/torch/")[0]
    assert torch_frames["site"] == "functional.py(9): cat" and torch_frames["launch"] == ""
    nothing = idle_gaps(_trace(), scope="/elsewhere/")[0]
    assert nothing["site"] == "host, outside /elsewhere/"


def test_summary_per_step_and_a_gzipped_trace(tmp_path):
    path = tmp_path / "trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": _trace() + _trace_shifted(100)}, f)
    rows = summarize(idle_gaps(load(path)), steps=2)
    assert [(r["site"], r["launch"], r["gaps_per_step"], r["us_per_step"], r["max_us"]) for r in rows] == [
        ("generate.py(40): step > hierspec.py(105): propose > session.py(120): commit",
         "generate.py(40): step > hierspec.py(105): propose > eagle.py(77): observe", 1.0, 22.0, 22),
        ("device", "", 1.0, 20.0, 20),
        # 68 -> 100: the second step's first kernel was launched at 101, after its own step frame opened
        ("generate.py(40): step > hierspec.py(105): propose", "generate.py(40): step", 0.5, 16.0, 32)]


def _trace_shifted(dt):
    """The same step ``dt`` µs later, correlation ids renumbered."""
    out = []
    for e in _trace():
        e = dict(e, ts=e["ts"] + dt, args=dict(e["args"]))
        if "correlation" in e["args"]:
            e["args"]["correlation"] += 10
        out.append(e)
    return out


def test_device_time_splits_busy_by_launch_and_idle_by_what_ended_it():
    """A (eager, 0-10), B (graph, 32-40), C (eager, 60-65), D (eager, 67-68), over two identical steps."""
    t = device_time(_trace() + _trace_shifted(100), steps=2)
    assert t["graph_busy"] == 8 and t["eager_busy"] == 16  # A + C + D
    assert t["idle"] == (22 + 20 + 2 + 32 / 2)  # the gap from the first step's D to the second's A counts once
    assert t["eager"]["A"] == {"us": 10, "count": 1} and t["eager"]["D"] == {"us": 1, "count": 1}
    assert t["idle_before"] == {"graph": 22, "C": 20, "A": 16, "D": 2}
    assert t["graphs"] == {"1 kernels from B": {"launches": 1, "span_us": 8, "idle_before_us": 22}}
    overlapping = [_span("cuda_runtime", "cudaLaunchKernel", 0, 1, correlation=1),
                   _span("kernel", "E", 0, 10, correlation=1), _span("kernel", "F", 5, 10, correlation=1)]
    assert device_time(overlapping, steps=1)["eager"] == {"E": {"us": 10, "count": 1}, "F": {"us": 5, "count": 1}}
    graph = [_span("cuda_runtime", "cudaGraphLaunch", 0, 1, correlation=5), _span("kernel", "G1", 3, 4, correlation=5),
             _span("kernel", "G2", 9, 2, correlation=5)]  # one launch, two kernels with a gap inside
    assert device_time(graph, steps=1)["graphs"] == {"2 kernels from G1": {"launches": 1, "span_us": 8,
                                                                           "idle_before_us": 0}}
