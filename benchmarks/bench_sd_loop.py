"""The speculative loop against the GPU time of its own forwards, per method at one shape (issue #16).

For AR, n-gram, EAGLE-2, HierSpec and SP(6) on one target (random weights of the real shapes, replayed acceptance, the
runner's engine settings), in one process, each method after one warm-up generation:

1. **measured**: committed tokens per second of the decoding loop (prefill excluded), and the phase times, of the
   median of ``--repeats`` timed generations (the wall of each is in the row);
2. a host profile (cProfile) of a second generation, per step;
3. **Eq. (1) from probes**: a third generation counts every CUDA graph its decoding steps replay
   (``specbench.timing.step_replays``); each is replayed alone and ``d * T_d + T_v(n)`` is their time per step,
   so the predicted speed is ``tau / (d * T_d + T_v(n))``, set beside the measured one;
4. **host overhead**: the GPU is busy for at least the graphs' isolated time, so ``1 - (d * T_d + T_v(n)) / step
   wall time`` bounds the share of a step in which it waits for the host (eager kernels between the graphs are
   counted as host time). ``--cupti`` adds a fourth generation whose device activity CUPTI records (busy time,
   union of kernels and copies, less its prefill's) and the timeline split by ``host_gaps.device_time`` (work in
   graphs, eager work, idle time by what ended it); CUPTI slows the launches it records (the profiled wall is in
   the row), so it runs last. ``--trace`` then records one more generation with the host's Python frames
   (``torch.profiler``, ``with_stack``) and charges every device idle gap to the frames that made it
   (``benchmarks.host_gaps``); the trace is kept gzipped beside the results. The tracer slows graph launches most:
   the 8B verify's graph (~670 kernels) launched in ~800 µs traced against 36 µs untraced (H200, session 20), so a
   gap charged to a graph's launch (``graphs.py: __call__``) is mostly the tracer's own.
5. **bound**: each graph's weights read once at the run's copy bandwidth (``model.footprint``; the KV cache left
   out), and the share of the graph's isolated time that bound is: how near the roofline each forward runs.

HierSpec at the 8B shape drafts through a Llama-3.2-1B intermediate (``--intermediate``; the 70B's is the W4A16
8B); SP(6) drafts six tokens with that model. ``--smoke`` runs the tiny shipped shapes on CPU to check the script (no graphs there, so no prediction).

    python -m benchmarks.bench_sd_loop --out DIR --compile --compile-scope layer   # 8B bf16, compiled per layer
    python -m benchmarks.bench_sd_loop --out DIR --model llama-3-70b-instruct --quant w4a16 --compile \\
        --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import torch

from specbench.config import EngineConf, ModelConf, QuantConf
from specbench.decoding.acceptance import accept
from specbench.decoding.generate import generate
from specbench.decoding.phases import PhaseTimer
from specbench.decoding.replay import ReplayAcceptance
from specbench.engine import Engine
from specbench.model import gemv
from benchmarks import host_gaps
from benchmarks.common import busy_intervals, copy_bandwidth, free, smoke_parser
from specbench.runner.environment import package_version, ptxas_version
from specbench.timing.step_replays import decode_replays, step_time

LOOP_PHASES = ("draft", "verify", "accept")


def methods(args) -> dict[str, tuple[dict, float | None]]:
    """Drafter config and replayed tau of each method."""
    k, d, n = (int(v) for v in args.eagle.split(","))
    intermediate = {"source": args.intermediate, "shape_only": True}
    inner_quant = {"scheme": args.quant, "backend": args.backend} if args.quant != "none" else {}
    return {
        "ar": ({"name": "none"}, None),
        "ngram": ({"name": "ngram", "on_miss": "repeat"}, args.ngram_tau),
        "eagle": ({"name": "eagle", "head": "random", "topk": k, "depth": d, "tree_size": n}, args.eagle_tau),
        "hierspec": ({"name": "hierspec", "head": "random", "min_draft": 6, "inner_depth": 3, "inner_tree_size": 30,
                      "topk": 10, "model": intermediate, "quant": inner_quant}, args.hierspec_tau),
        "sp": ({"name": "draft_model", "num_tokens": 6, "model": intermediate, "quant": inner_quant}, args.sp_tau),
    }


def busy_ms(prof) -> float:
    """Milliseconds the device was busy in a profiled block (union of its kernels' and copies' intervals)."""
    return sum(end - start for start, end in busy_intervals(prof.events())) / 1e3


def host_overhead(run, new_tokens: int) -> dict:
    """The share of the decoding loop's wall time in which the GPU runs nothing: device activity recorded by CUPTI
    alone (no CPU-side tracing, which would slow the host it measures) over a generation, less that of its prefill
    (a one-token generation). A step the device loop dropped at the end (``Generation.dropped_steps``) ran on the GPU
    but ended no token, so the busy time is taken per step the GPU ran, times the steps."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run(1)
    prefill = busy_ms(prof)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        gen = run(new_tokens)
    wall = 1e3 * gen.decode_s
    busy = (busy_ms(prof) - prefill) * gen.steps / gen.gpu_steps
    with tempfile.TemporaryDirectory() as tmp:  # the device timeline, untraced host: ``host_gaps.device_time``
        prof.export_chrome_trace(f"{tmp}/trace.json")
        timeline = host_gaps.device_time(host_gaps.load(Path(f"{tmp}/trace.json")), gen.gpu_steps)
    return {"decode_wall_ms": wall, "gpu_busy_ms": busy, "fraction": 1 - busy / wall,
            "wall_ms_per_step": wall / gen.steps, "prefill_busy_ms": prefill, "device_time": timeline}


def host_profile(run, new_tokens: int, top: int = 25) -> list[dict]:
    """The ``top`` functions by own host time (cProfile) over one generation, in microseconds per step."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    gen = run(new_tokens)
    profiler.disable()
    rows = sorted(pstats.Stats(profiler).stats.items(), key=lambda kv: -kv[1][2])[:top]
    return [{"function": f"{Path(file).name}:{line}({name})", "calls_per_step": calls / gen.steps,
             "own_us_per_step": 1e6 * own / gen.steps, "cumulative_us_per_step": 1e6 * cum / gen.steps}
            for (file, line, name), (_, calls, own, cum, _) in rows]


def traced_gaps(run, new_tokens: int, path) -> dict:
    """One generation traced with the host's Python frames (kept at ``path``, gzipped): the device's idle gaps per
    step, totalled per site (``host_gaps``)."""
    import gzip
    import shutil

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
        gen = run(new_tokens)
    raw = path.with_suffix("")
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as src, gzip.open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    events = host_gaps.load(path)
    gaps = host_gaps.idle_gaps(events)
    wall = 1e3 * gen.decode_s / gen.steps
    idle = sum(g["us"] for g in gaps) / 1e3 / gen.steps
    return {"trace": path.name, "wall_ms_per_step": wall, "idle_ms_per_step": idle,
            "sites": host_gaps.summarize(gaps, gen.steps), "device_time": host_gaps.device_time(events, gen.steps)}


def graph_rows(terms, bandwidth_Bps: float | None) -> list[dict]:
    """The step's graphs as result rows; with the run's copy bandwidth, each replay's bound (its weights read once at
    that bandwidth) and the share of its time that bound is."""
    rows = []
    for t in terms:
        bound = t.bound_ms(bandwidth_Bps) if bandwidth_Bps else None
        rows.append({"label": t.label, "replays_per_step": t.replays_per_step, "median_ms": t.median_ms,
                     "ms_per_step": t.ms_per_step, "bytes_read": t.bytes_read, "bound_ms": bound,
                     "of_bound": None if bound is None else bound / t.median_ms})
    return rows


def measure(engine: Engine, session, name: str, conf: dict, tau: float | None, prompt: list[int], new_tokens: int,
            inner_tau: float, cupti: bool, trace_dir=None, repeats: int = 3,
            bandwidth_Bps: float | None = None) -> dict:
    """One method: measured speed, host overhead and Eq. (1) from its graphs' isolated replays."""
    device = engine.device
    inner = ReplayAcceptance(tau=inner_tau)
    outer = ReplayAcceptance(tau=tau) if tau is not None else None
    t0 = time.monotonic()
    drafter = engine.drafter(conf, session, acceptor=inner if name == "hierspec" else accept)

    def run(tokens: int, timer: PhaseTimer | None = None):
        inner.steps = 0
        if outer is not None:
            outer.steps = 0
        return generate(session, drafter, prompt, max_new_tokens=tokens, timer=timer,
                        acceptor=outer if outer is not None else accept,
                        on_device=None if engine.execution.device_loop else False)

    run(new_tokens)  # warm-up: compiles, captures every graph the steps use
    warmup_s = time.monotonic() - t0
    timed = sorted((run(new_tokens, PhaseTimer(device, enabled=True)) for _ in range(repeats)),
                   key=lambda g: g.decode_s / g.steps)
    gen = timed[len(timed) // 2]  # the median: one slow generation (a host hiccup) does not set the row
    steps, committed = gen.steps, sum(gen.accept_lengths)
    phases = {p: sum(gen.phase_ms.get(s, {}).get(p, 0.0) for s in range(steps)) / steps for p in LOOP_PHASES}
    out = {"method": name, "drafter": conf, "replay_tau": tau, "tau": gen.tau, "steps": steps,
           "mean_drafted": sum(gen.drafted) / steps, "reverified_steps": gen.reverified_steps, "warmup_s": warmup_s,
           "tok_s": committed / gen.decode_s, "wall_ms_per_step": 1e3 * gen.decode_s / steps,
           "wall_ms_per_step_runs": [1e3 * g.decode_s / g.steps for g in timed],
           "phase_ms_per_step": phases}
    out["host_profile"] = host_profile(run, new_tokens)
    replays, counted = decode_replays(run, new_tokens)
    if replays:
        terms = step_time(replays, counted.gpu_steps, device)
        step_ms = sum(t.ms_per_step for t in terms)
        predicted = 1e3 * counted.tau / step_ms
        out.update({"graphs": graph_rows(terms, bandwidth_Bps),
                    "eq1_step_ms": step_ms, "eq1_tok_s": predicted, "eq1_over_measured": predicted / out["tok_s"],
                    # the GPU is busy for at least the graphs' time, so at most this share of the wall is host time
                    "host_overhead_at_most": 1 - step_ms / out["wall_ms_per_step"]})
    else:
        out["eq1_tok_s"] = None  # no CUDA graphs (a CPU): no isolated replays to time
    if cupti and device == "cuda":  # last: CUPTI slows every later launch in the process
        out["host_overhead"] = host_overhead(run, new_tokens)
    if trace_dir is not None:  # last, like CUPTI (on a CPU: no device gaps, the script's check)
        trace_dir.mkdir(parents=True, exist_ok=True)
        out["gaps"] = traced_gaps(run, new_tokens, trace_dir / f"trace_{name}.json.gz")
    del drafter
    free(device)
    return out


def device_time_line(t: dict) -> str:
    """``host_gaps.device_time`` in a sentence."""
    eager = ", ".join(f"{name} {e['us']:.1f} ({e['count']:.1f}x)" for name, e in t["eager"].items())
    ended = ", ".join(f"{name} {us:.1f}" for name, us in t["idle_before"].items())
    graphs = ", ".join(f"{key}: {g['launches']:.2f}/step, span {g['span_us']:.0f} µs, idle before "
                       f"{g['idle_before_us']:.1f} µs" for key, g in t["graphs"].items())
    return (f"{t['graph_busy']:.1f} µs in graphs, {t['eager_busy']:.1f} µs eager, {t['idle']:.1f} µs idle. Eager work "
            f"(without launch records: all work), µs (launches): {eager}. Idle µs, by the launch that ended it: {ended}. "
            f"Graphs on the device: {graphs}.")


def measured(value: float | None, spec: str) -> str:
    """``value`` formatted, or "–" where it was not measured (None or NaN: no CUPTI run, no graph replayed)."""
    return "–" if value is None or value != value else format(value, spec)


def markdown(result: dict) -> str:
    lines = [f"# The SD loop against its forwards' GPU time: {result['model']} ({result['quant']}), {result['device']}",
             "", f"compile {result['compile']} (scope {result['compile_scope']}), prompt {result['prompt_tokens']}, "
             f"{result['new_tokens']} new tokens, shape-only weights, replayed acceptance, "
             f"{'steps from the device where possible' if result.get('device_loop') else 'host loop'}; "
             "tok/s = committed tokens per second of the decoding loop, the median of "
             f"{len(result['methods'][0].get('wall_ms_per_step_runs', [0])) if result['methods'] else 0} timed "
             "generations.", "",
             "| method | tau | tok/s measured | Eq. (1) from graph replays | predicted / measured | wall ms/step | "
             "isolated GPU ms/step | host overhead, at most | GPU idle (CUPTI) | steps verified twice |",
             "|" + "---|" * 10]
    for row in result["methods"]:
        if "error" in row:
            lines.append(f"| {row['method']} | – | – | – | – | – | – | – | {row['error']} | – |")
            continue
        ho = row.get("host_overhead", {})
        lines.append(f"| {row['method']} | {row['tau']:.2f} | {row['tok_s']:.1f} | "
                     f"{measured(row.get('eq1_tok_s'), '.1f')} | {measured(row.get('eq1_over_measured'), '.3f')} | "
                     f"{row['wall_ms_per_step']:.2f} | {measured(row.get('eq1_step_ms'), '.2f')} | "
                     f"{measured(row.get('host_overhead_at_most'), '.1%')} | {measured(ho.get('fraction'), '.1%')} | "
                     f"{row['reverified_steps']} of {row['steps']} |")
    bandwidth = result.get("copy_bandwidth_Bps")
    lines += ["", "Per method, the graphs replayed in a decoding step (isolated median ms x replays per step"
              + (f"; in brackets, the share of that time its weights take to read once at this run's copy bandwidth, "
                 f"{bandwidth / 1e12:.2f} TB/s" if bandwidth else "") + "):", ""]
    for row in result["methods"]:
        if row.get("graphs"):
            parts = ", ".join(f"{g['label']} {g['median_ms']:.3f} x {g['replays_per_step']:.2f}"
                              + (f" [{g['of_bound']:.0%}]" if g.get("of_bound") else "") for g in row["graphs"])
            ho = row.get("host_overhead", {})
            hot = ", ".join(f"{r['function']} {r['own_us_per_step']:.0f}" for r in row.get("host_profile", [])[:10])
            lines.append(f"- {row['method']}: {parts}. Profiled wall {measured(ho.get('wall_ms_per_step'), '.2f')} "
                         f"ms/step; host own µs per step (cProfile): {hot}")
            if "device_time" in ho:
                lines.append(f"  - device time per step (CUPTI alone; the generation's prefill, busy "
                             f"{ho['prefill_busy_ms']:.1f} ms, included): {device_time_line(ho['device_time'])}")
    for row in result["methods"]:
        if row.get("gaps"):
            g = row["gaps"]
            lines += ["", f"Device idle gaps of {row['method']}, traced ({g['trace']}; the tracer slows the host, graph launches "
                      "most): "
                      f"{g['idle_ms_per_step']:.3f} of {g['wall_ms_per_step']:.3f} ms per step", "",
                      "| host frames when the device went idle | late launch from | gaps/step | µs/step | max µs |",
                      "|---|---|---|---|---|"]
            lines += [f"| {r['site']} | {r['launch']} | {r['gaps_per_step']:.2f} | {r['us_per_step']:.1f} | "
                      f"{r['max_us']:.0f} |" for r in g["sites"]]
            lines += ["", f"Device time per step, traced: {device_time_line(g['device_time'])}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = smoke_parser(__doc__, "the tiny shipped shapes on CPU (checks the script)")
    parser.add_argument("--model", default="llama-3-8b-instruct", help="target shape (a shipped config)")
    parser.add_argument("--quant", default="none", help="target and intermediate scheme (none = 16-bit)")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--intermediate", default="llama-3.2-1b-instruct", help="HierSpec's intermediate shape")
    parser.add_argument("--compile", action="store_true", help="engine.compile=true")
    parser.add_argument("--compile-scope", default=None, help="engine.compile_scope (layer)")
    parser.add_argument("--host-loop", action="store_true", help="engine.device_loop=false: the host reads every "
                        "step's acceptance before enqueueing the next (the loop of sessions 5-17)")
    parser.add_argument("--methods", default="ar,ngram,eagle,hierspec,sp")
    parser.add_argument("--eagle", default="10,6,60", help="EAGLE-2 top-k, depth, tree size")
    parser.add_argument("--eagle-tau", type=float, default=4.53)
    parser.add_argument("--ngram-tau", type=float, default=1.7)
    parser.add_argument("--hierspec-tau", type=float, default=4.16)
    parser.add_argument("--inner-tau", type=float, default=3.2, help="HierSpec's intermediate accept length")
    parser.add_argument("--sp-tau", type=float, default=3.9, help="SP(6), the intermediate drafting 6 tokens")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3, help="timed generations per method (the median is kept)")
    parser.add_argument("--cupti", action="store_true", help="also measure GPU busy time with CUPTI (it slows the "
                        "launches it records: the profiled wall is in the row)")
    parser.add_argument("--trace", action="store_true", help="last, trace one generation with Python frames and "
                        "charge the device's idle gaps to them (benchmarks.host_gaps)")
    args = parser.parse_args(argv)
    if args.smoke:
        device, args.model, args.intermediate, args.dtype = "cpu", "tiny-target", "tiny-target", "float32"
        args.prompt, args.new_tokens, args.eagle = 12, 10, "2,2,4"
        torch.set_num_threads(1)
    else:
        device = "cuda"
        if not torch.cuda.is_available():
            parser.error("no CUDA device; use --smoke for the CPU check")
    bandwidth = copy_bandwidth(device, 2**30 if device == "cuda" else 2**24)["bandwidth_Bps"]  # before the models
    execution = EngineConf(compile=args.compile, compile_scope=args.compile_scope, device_loop=not args.host_loop)
    engine = Engine(execution, device=device, dtype=args.dtype, max_seq_len=args.prompt + args.new_tokens + 192)
    quant = QuantConf(args.quant, args.backend) if args.quant != "none" else QuantConf()
    t0 = time.monotonic()
    target = engine.model(ModelConf(args.model, shape_only=True), quant)
    session = engine.session(target)
    prompt = torch.randint(0, target.config.vocab_size, (args.prompt,),
                           generator=torch.Generator().manual_seed(0)).tolist()
    result = {"model": args.model, "quant": args.quant, "backend": args.backend, "dtype": args.dtype,
              "intermediate": args.intermediate, "compile": args.compile, "compile_scope": args.compile_scope,
              "device_loop": not args.host_loop,
              "prompt_tokens": args.prompt, "new_tokens": args.new_tokens, "target_build_s": time.monotonic() - t0,
              "device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
              "triton": package_version("triton"), "ptxas": ptxas_version(), "copy_bandwidth_Bps": bandwidth,
              "methods": []}
    table = methods(args)
    for name in args.methods.split(","):
        conf, tau = table[name]
        print(f"{name}...", flush=True)
        try:
            row = measure(engine, session, name, conf, tau, prompt, args.new_tokens, args.inner_tau,
                          args.cupti, args.out if args.trace else None, args.repeats, bandwidth)
            print(f"  {row['tok_s']:.1f} tok/s, tau {row['tau']:.2f}, Eq. (1) {row.get('eq1_tok_s')}, host overhead "
                  f"<= {row.get('host_overhead_at_most')}", flush=True)
        except Exception as err:  # noqa: BLE001 - a method that fails is reported, the others still run
            row = {"method": name, "error": f"{type(err).__name__}: {str(err)[:300]}"}
            print(f"  failed: {row['error']}", flush=True)
        result["methods"].append(row)
        result["gemv_configs"] = gemv.chosen_configs()
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_sd_loop.json").write_text(json.dumps(result, indent=1, default=str))
        (args.out / "bench_sd_loop.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
