"""Autoregressive decode throughput of the Llama-3-8B shape on one GPU, against transformers and the roofline.

Measured in one run on one GPU (bf16, batch 1, greedy, random weights of the real shapes):

1. device-to-device copy bandwidth (4 GiB, bytes read + written) and the roofline
   ``tokens/s = bandwidth / weight bytes`` (all parameters, as in docs/h200-anchors.md; a second roofline counts
   only the bytes a decode step must read: every weight but the embedding table, plus the static KV cache);
2. specbench's decode loop (``ModelSession`` + ``ForwardRunner`` + ``generate`` with the ``none`` drafter) with
   CUDA graphs on, and with them off;
3. transformers' ``LlamaForCausalLM.generate`` from the same config (random bf16 weights, default attention, no
   compilation (``disable_compile=True``), default dynamic cache; then ``cache_implementation="static"`` if that
   works; a variant that fails is reported with its error);
4. the speculative loop's host-side overhead at this shape (n-gram drafter; EAGLE-2 with a random head and
   replayed acceptance): the share of a step's wall time not covered by the isolated GPU time of its forwards
   (probe replays, ``specbench.timing.probes``) and, where the profiler works, by measured kernel time. (A random
   head gives near-uniform draft distributions, so its EAGLE-2 trees are wide and shallow and the replayed tau is
   capped at depth + 1 of those trees: the row reports the tau reached.)

Decode tokens/s everywhere = tokens produced after the prefill's first token / time after the prefill:
``generate``'s ``steps / decode_s``; for transformers ``(N - 1) / (T(N) - T(1))`` with T(k) the wall time of
``generate(max_new_tokens=k)``. ``--smoke`` runs the shipped tiny shape on CPU to check the script.

    python -m benchmarks.bench_decode --out results/bench_decode          # on the GPU machine, < 6 minutes
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch

from specbench.config import EngineConf, ModelConf
from specbench.decoding.generate import generate
from specbench.decoding.phases import PhaseTimer
from specbench.engine import Engine
from specbench.model import load_hf_config
from benchmarks.common import copy_bandwidth, free, smoke_parser, tensor_bytes
from specbench.timing.probes import HeadProber, Prober, ProbeSettings
from specbench.timing.timer import time_calls

TARGET_FRACTION = 0.80  # report target: >= 80 % of the roofline (215 tok/s on an H200)
MODEL = "llama-3-8b-instruct"


def random_prompt(vocab: int, length: int, seed: int = 0) -> list[int]:
    return torch.randint(0, vocab, (length,), generator=torch.Generator().manual_seed(seed)).tolist()


def native_decode(engine: Engine, model, prompt: list[int], new_tokens: int, repeats: int) -> dict:
    """specbench's AR loop: median decode tokens/s over ``repeats`` generations after one warm-up."""
    t0 = time.monotonic()
    session = engine.session(model)
    drafter = engine.drafter({"name": "none"}, session)
    generate(session, drafter, prompt, max_new_tokens=new_tokens)  # warm-up; compiles, captures the decode graph
    warmup_s = time.monotonic() - t0
    runs = []
    for _ in range(repeats):
        gen = generate(session, drafter, prompt, max_new_tokens=new_tokens)
        runs.append({"steps": gen.steps, "decode_s": gen.decode_s, "prefill_s": gen.prefill_s,
                     "tok_s": gen.steps / gen.decode_s, "tok_s_specmquant": len(gen.tokens) / gen.decode_s})
    ex = engine.execution
    del session, drafter
    return {"cuda_graphs": ex.cuda_graphs and engine.device == "cuda", "compile": ex.compile,
            "compile_mode": ex.compile_mode, "warmup_s": warmup_s,
            "tok_s": statistics.median(r["tok_s"] for r in runs),
            "tok_s_specmquant": statistics.median(r["tok_s_specmquant"] for r in runs),
            "ms_per_token": 1e3 / statistics.median(r["tok_s"] for r in runs), "runs": runs}


def hf_model(hf_config: dict, device: str, dtype: torch.dtype):
    """transformers' LlamaForCausalLM from ``hf_config`` with random weights, built directly on ``device``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**{k: v for k, v in hf_config.items() if k not in ("architectures", "torch_dtype", "dtype")})
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = None  # random weights: never stop early
    model.generation_config.pad_token_id = 0
    return model.eval()


def hf_decode(model, prompt: list[int], new_tokens: int, repeats: int, device: str, **generate_kwargs) -> dict:
    """Decode tokens/s of ``model.generate``: (N - 1) / (T(N) - T(1)), medians over ``repeats``."""
    ids = torch.tensor([prompt], device=device)
    mask = torch.ones_like(ids)

    def timed(n: int) -> float:
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                 do_sample=False, **generate_kwargs)
        if device == "cuda":
            torch.cuda.synchronize()
        if out.shape[1] != ids.shape[1] + n:
            raise RuntimeError(f"generate returned {out.shape[1] - ids.shape[1]} tokens, not {n}")
        return time.perf_counter() - t0

    timed(4)  # warm-up
    first = statistics.median(timed(1) for _ in range(3))
    full = [timed(new_tokens) for _ in range(repeats)]
    decode_s = statistics.median(full) - first
    return {"tok_s": (new_tokens - 1) / decode_s, "ms_per_token": 1e3 * decode_s / (new_tokens - 1),
            "t_first_s": first, "t_full_s": full, "generate_kwargs": {k: str(v) for k, v in generate_kwargs.items()},
            "attn_implementation": getattr(model.config, "_attn_implementation", None)}


def busy_intervals(events) -> list[list[float]]:
    """The union of a profiler trace's device-activity intervals (µs), sorted; annotations are not activity."""
    from torch.autograd import DeviceType

    merged: list[list[float]] = []
    for start, end in sorted((e.time_range.start, e.time_range.end) for e in events
                             if e.device_type == DeviceType.CUDA and not e.name.startswith("phase:")):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def kernel_time_ms(prof) -> float | None:
    """Time the device was busy during a profiled run (union of its activity intervals), or None if none."""
    total = sum(end - start for start, end in busy_intervals(prof.events())) / 1e3
    return total or None


def gpu_idle_by_phase(prof) -> dict[str, float]:
    """Milliseconds the GPU ran nothing while the host was inside each ``phase:<name>`` range (and between them).

    The idle time of a host range is its length minus the device's busy time inside it, so a gap is charged to
    whatever the host was doing while the GPU waited.
    """
    import bisect

    from torch.autograd import DeviceType

    events = list(prof.events())
    merged = busy_intervals(events)
    starts = [m[0] for m in merged]

    def idle(lo: float, hi: float) -> float:
        covered = 0.0
        for start, end in merged[max(0, bisect.bisect_right(starts, lo) - 1):]:
            if start >= hi:
                break
            covered += max(0.0, min(end, hi) - max(start, lo))
        return hi - lo - covered

    ranges = [(e.name.removeprefix("phase:"), e.time_range.start, e.time_range.end) for e in events
              if e.device_type == DeviceType.CPU and e.name.startswith("phase:")]
    out: dict[str, float] = {}
    for name, lo, hi in ranges:
        out[name] = out.get(name, 0.0) + idle(lo, hi) / 1e3
    if ranges:
        first, last = min(r[1] for r in ranges), max(r[2] for r in ranges)
        out["between phases"] = idle(first, last) / 1e3 - sum(out.values())
    return out


def host_profile(run, steps_of, top: int = 25) -> list[dict]:
    """The ``top`` functions by own host time (cProfile) over one ``run()``, in microseconds per decoding step."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    result = run()
    profiler.disable()
    steps = steps_of(result)
    stats = pstats.Stats(profiler).stats
    rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    return [{"function": f"{Path(file).name}:{line}({name})", "calls_per_step": calls / steps,
             "own_us_per_step": 1e6 * own / steps, "cumulative_us_per_step": 1e6 * cum / steps}
            for (file, line, name), (_, calls, own, cum, _) in rows]


SD_DRAFTERS = {  # drafter config, verify mask, description of each SD overhead run
    "ngram": ({"name": "ngram"}, "sequence", "K=(1,3), gamma=5, real greedy acceptance"),
    "eagle": ({"name": "eagle", "head": "random", "topk": 10, "depth": 6, "tree_size": 60}, "tree",
              "k=10, d=6, n=60, random head"),
}


def sd_overhead(engine: Engine, model, prompt: list[int], new_tokens: int, kind: str, replays: int, tau: float,
                profile: bool = True) -> dict:
    """Host-side overhead of the speculative loop with drafter ``kind`` (ngram | eagle) at this shape."""
    device, max_seq_len, compile = engine.device, engine.max_seq_len, engine.execution.compile
    session = engine.session(model)
    conf, mask, settings = SD_DRAFTERS[kind]
    drafter = engine.drafter(conf, session)
    acceptor, head = None, getattr(drafter, "head", None)
    if kind == "eagle":
        try:
            from specbench.decoding.replay import ReplayAcceptance

            acceptor = ReplayAcceptance(tau=tau)
            settings += f", replayed tau={tau}"
        except ImportError:
            settings += ", real acceptance"
    kwargs = {"acceptor": acceptor} if acceptor is not None else {}
    generate(session, drafter, prompt, max_new_tokens=new_tokens, **kwargs)  # warm-up: captures every bucket
    if acceptor is not None:
        acceptor.steps = 0
    timer = PhaseTimer(device, enabled=True)
    gen = generate(session, drafter, prompt, max_new_tokens=new_tokens, timer=timer, **kwargs)
    steps = gen.steps
    wall_ms = 1e3 * gen.decode_s / steps
    phases = {p: sum(gen.phase_ms.get(s, {}).get(p, 0.0) for s in range(steps)) / steps
              for p in ("draft", "verify", "accept")}
    out = {"drafter": kind, "settings": settings, "steps": steps, "tau": gen.tau,
           "mean_drafted": sum(gen.drafted) / steps, "wall_ms_per_step": wall_ms,
           "phase_ms_per_step": phases, "phase_sum_ms_per_step": sum(phases.values()),
           "outside_phases_fraction": 1 - sum(phases.values()) / wall_ms}
    profiled = None
    if device == "cuda" and profile:  # kernel time measured by the profiler (CUPTI), over a whole generation
        try:
            from torch.profiler import ProfilerActivity, profile

            if acceptor is not None:
                acceptor.steps = 0
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                g2 = generate(session, drafter, prompt, max_new_tokens=new_tokens,
                              timer=PhaseTimer(device, enabled=False, annotate=True), **kwargs)
            busy = kernel_time_ms(prof)
            if busy is not None:
                wall = 1e3 * (g2.prefill_s + g2.decode_s)
                profiled = {"kernel_ms": busy, "wall_ms": wall, "host_overhead_fraction": 1 - busy / wall,
                            "gpu_idle_ms_per_step": {k: v / g2.steps for k, v in gpu_idle_by_phase(prof).items()}}
        except Exception as err:  # noqa: BLE001 - the profiler is optional here
            profiled = {"error": f"{type(err).__name__}: {err}"}
    out["profiler"] = profiled
    if acceptor is not None:
        acceptor.steps = 0
    out["host_profile"] = host_profile(lambda: generate(session, drafter, prompt, max_new_tokens=new_tokens, **kwargs),
                                       lambda g: g.steps)
    lengths = list(gen.accept_lengths)
    sizes = sorted({d + 1 for d in gen.drafted})
    expand_graph = getattr(drafter, "_expand_graph", None)  # EAGLE: the whole tree expansion as one graph
    expand_ms = None if expand_graph is None else time_calls(expand_graph.graphs[0].replay, device, replays=replays,
                                                             warmup=3).median_ms
    del session, drafter
    free(device)
    # isolated GPU time of the same forwards, replayed as CUDA graphs at the run's mid context
    context = len(prompt) + new_tokens // 2
    ps = ProbeSettings(contexts=(context,), verify_sizes=sizes, masks=(mask,), replays=replays, warmup=3,
                       prefill=False, max_seq_len=max_seq_len, compile=compile)  # the run's cache size: attention reads all of it
    prober = Prober(model, ps, max_seq_len=max_seq_len)
    t_v = {n: prober.verify(n, context, mask)["median_ms"] if n > 1 else prober.decode(context)["median_ms"]
           for n in sizes}
    del prober
    verify_gpu = sum(t_v[d + 1] for d in gen.drafted) / steps
    draft_gpu = 0.0
    if head is not None:
        hp = HeadProber(head, ps, max_seq_len=max_seq_len)
        rows_first = sorted(set(lengths))
        t_first = {m: hp.draft_pass(m, context)["median_ms"] for m in rows_first}
        t_k = hp.draft_pass(10, context)["median_ms"]
        expansion = (6 - 1) * t_k if expand_ms is None else expand_ms
        draft_gpu = sum(t_first[m] for m in lengths) / steps + expansion
        out["T_d_ms"] = {"first_pass": t_first, "k10": t_k, "expansion_graph": expand_ms}
        del hp
    free(device)
    gpu = verify_gpu + draft_gpu
    out.update({"T_v_ms": t_v, "isolated_gpu_ms_per_step": gpu, "isolated_verify_ms_per_step": verify_gpu,
                "isolated_draft_ms_per_step": draft_gpu, "host_overhead_fraction": 1 - gpu / wall_ms})
    return out


def markdown(result: dict) -> str:
    bw, roof = result["bandwidth"], result["roofline"]
    lines = [f"# Decode throughput, {result['model']} shape, {result['device']} ({result['dtype']})", "",
             f"prompt {result['prompt_tokens']} tokens, {result['new_tokens']} new tokens, batch 1, greedy, "
             f"random weights; decode tok/s excludes the prefill (median of {result['repeats']}).", "",
             f"- copy bandwidth ({bw['bytes'] / 2**30:.3g} GiB, read + write): "
             f"**{bw['bandwidth_Bps'] / 1e12:.2f} TB/s**",
             f"- weights {roof['weight_bytes'] / 1e9:.2f} GB -> roofline **{roof['tok_s']:.1f} tok/s** "
             f"(decode-read roofline: {roof['decode_read_bytes'] / 1e9:.2f} GB/step -> "
             f"{roof['tok_s_decode_read']:.1f} tok/s)",
             f"- target: >= {TARGET_FRACTION:.0%} of roofline = {roof['tok_s'] * TARGET_FRACTION:.1f} tok/s", "",
             "| implementation | tok/s | ms/token | % of roofline |", "|---|---|---|---|"]
    for name, row in result["decode"].items():
        if "tok_s" in row:
            share = row["tok_s"] / roof["tok_s"]
            lines.append(f"| {name} | {row['tok_s']:.1f} | {row['ms_per_token']:.2f} | {share:.0%} |")
        else:
            lines.append(f"| {name} | - | - | {row.get('skipped') or row.get('error')} |")
    ours = {k: v for k, v in result["decode"].items() if k.startswith("specbench (CUDA graphs") and "tok_s" in v}
    if ours:
        name, best = max(ours.items(), key=lambda kv: kv[1]["tok_s"])
        ok = best["tok_s"] >= TARGET_FRACTION * roof["tok_s"]
        lines += ["", f"best specbench variant, {name}: {best['tok_s']:.1f} tok/s = {best['tok_s'] / roof['tok_s']:.0%} "
                      f"of roofline -> target {'MET' if ok else 'NOT met'}"]
    if result["sd_overhead"]:
        lines += ["", "## Host-side overhead of the speculative loop", "",
                  "| drafter | steps | tau | wall ms/step | isolated GPU ms/step | overhead (vs isolated) | "
                  "kernel ms (profiler) | overhead (profiler) | outside phases |", "|" + "---|" * 9]
        for row in result["sd_overhead"]:
            if "error" in row or "skipped" in row:
                lines.append(f"| {row['drafter']} | {row.get('skipped') or row.get('error')} |||||||")
                continue
            prof = row.get("profiler") or {}
            lines.append(
                f"| {row['drafter']} ({row['settings']}) | {row['steps']} | {row['tau']:.2f} | "
                f"{row['wall_ms_per_step']:.2f} | "
                f"{row['isolated_gpu_ms_per_step']:.2f} | {row['host_overhead_fraction']:.1%} | "
                f"{prof.get('kernel_ms', float('nan')):.1f} | {prof.get('host_overhead_fraction', float('nan')):.1%} | "
                f"{row['outside_phases_fraction']:.1%} |")
        for row in result["sd_overhead"]:
            hot = ", ".join(f"{r['function']} {r['own_us_per_step']:.0f}" for r in (row.get("host_profile") or [])[:8])
            if hot:
                lines.append(f"- {row['drafter']}: host time (cProfile, own µs per step): {hot}")
            idle = (row.get("profiler") or {}).get("gpu_idle_ms_per_step")
            if idle:
                parts = ", ".join(f"{name} {ms:.3f}" for name, ms in idle.items())
                lines.append(f"- {row['drafter']}: GPU idle ms per step while the host is in each phase: {parts}")
        lines += ["", "overhead (vs isolated) = 1 - (isolated CUDA-graph replay time of the step's forwards) / (step "
                      "wall time): host work, launch gaps and small eager kernels (top-k, softmax, masks); "
                      "overhead (profiler) = 1 - kernel time / wall time over a profiled generation."]
    lines += ["", f"elapsed {result['elapsed_s']:.0f} s"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = smoke_parser(__doc__, "the tiny shipped shape on CPU (checks the script)")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hf-repeats", type=int, default=2)
    parser.add_argument("--copy-gib", type=float, default=4.0)
    parser.add_argument("--replays", type=int, default=100, help="probe replays for the overhead estimate")
    parser.add_argument("--tau", type=float, default=4.0, help="replayed accept length of the EAGLE overhead run")
    parser.add_argument("--model", default=MODEL, help="shape to time (a shipped config name; shape-only)")
    parser.add_argument("--no-hf", action="store_true")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile variant")
    parser.add_argument("--no-eager", action="store_true", help="skip the variant without CUDA graphs")
    parser.add_argument("--compile-mode", default=None, help="torch.compile mode of the compiled variant "
                        "(e.g. max-autotune-no-cudagraphs: Triton GEMM templates timed against cuBLAS)")
    parser.add_argument("--gemv", action="store_true", help="add the Triton GEMV variant; the SD and compiled "
                        "variants after it use the GEMV too")
    parser.add_argument("--no-sd", action="store_true", help="skip the SD host-overhead runs")
    parser.add_argument("--sd-compile", action="store_true", help="compile the SD overhead runs' forwards too")
    parser.add_argument("--sd-only", action="store_true", help="only the SD overhead runs (no decode variants)")
    parser.add_argument("--no-profiler", action="store_true", help="SD runs without the CUPTI kernel-time pass")
    parser.add_argument("--budget-s", type=float, default=330.0, help="skip what is left after this many seconds")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    if args.smoke:
        device, dtype, source = "cpu", torch.float32, "tiny-target"
        args.prompt, args.new_tokens = min(args.prompt, 16), min(args.new_tokens, 12)
        args.repeats, args.hf_repeats = 2, 1
        args.copy_gib, args.replays = 1 / 64, 5
        args.no_compile = True  # compiling without graphs recompiles per token count: minutes on a CPU
        torch.set_num_threads(1)
    else:
        device, dtype, source = "cuda", torch.bfloat16, args.model
        if not torch.cuda.is_available():
            parser.error("no CUDA device; use --smoke for the CPU check")
    over = lambda: time.monotonic() - t0 > args.budget_s  # noqa: E731
    max_seq_len = args.prompt + args.new_tokens + 64  # attention reads the whole static cache: keep it tight

    def engine(graphs: bool = True, compiled: bool = False, use_gemv: bool = False,
               compile_mode: str | None = None) -> Engine:
        ex = EngineConf(cuda_graphs=graphs, compile=compiled, compile_mode=compile_mode, gemv=use_gemv)
        return Engine(ex, device=device, dtype=dtype, max_seq_len=max_seq_len)

    print(f"copy bandwidth ({args.copy_gib} GiB)...", flush=True)
    bw = copy_bandwidth(device, int(args.copy_gib * 2**30))
    print(f"  {bw['bandwidth_Bps'] / 1e12:.2f} TB/s", flush=True)
    hf_config = load_hf_config(source)
    prompt = random_prompt(hf_config["vocab_size"], args.prompt)
    decode: dict[str, dict] = {}
    if not args.no_hf:  # first, so that the baseline is measured whatever the budget leaves
        # disable_compile: with a static cache, generate would otherwise torch.compile the forward on its own
        variants = (("transformers generate (eager, dynamic cache)", {}),
                    ("transformers generate (eager, static cache)", {"cache_implementation": "static",
                                                                     "disable_compile": True}))
        hf = None
        for name, kwargs in variants:
            if over():
                decode[name] = {"skipped": "time budget spent"}
                continue
            print(f"{name}...", flush=True)
            try:
                hf = hf or hf_model(hf_config, device, dtype)
                decode[name] = hf_decode(hf, prompt, args.new_tokens, args.hf_repeats, device, **kwargs)
                print(f"  {decode[name]['tok_s']:.1f} tok/s", flush=True)
            except Exception as err:  # noqa: BLE001 - a variant that fails is reported, not fatal
                decode[name] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
                print(f"  failed: {decode[name]['error']}", flush=True)
        del hf
        free(device)
    model = engine().model(ModelConf(source, shape_only=True))
    weight_bytes = tensor_bytes(model)
    embed_bytes = model.model.embed_tokens.weight.numel() * model.model.embed_tokens.weight.element_size()
    c = model.config
    kv_slot_bytes = 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * model.lm_head.weight.element_size()
    kv_bytes = kv_slot_bytes * (max_seq_len + 128)  # ForwardRunner adds the largest bucket as scratch slots
    read_bytes = weight_bytes - embed_bytes + kv_bytes
    roof = {"weight_bytes": weight_bytes, "tok_s": bw["bandwidth_Bps"] / weight_bytes, "embedding_bytes": embed_bytes,
            "kv_cache_bytes": kv_bytes, "decode_read_bytes": read_bytes,
            "tok_s_decode_read": bw["bandwidth_Bps"] / read_bytes}
    result = {"model": source, "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
              "dtype": str(dtype).removeprefix("torch."), "torch": torch.__version__, "prompt_tokens": args.prompt,
              "new_tokens": args.new_tokens, "repeats": args.repeats, "max_seq_len": max_seq_len, "bandwidth": bw,
              "roofline": roof, "decode": decode, "sd_overhead": []}
    try:
        import transformers

        result["transformers"] = transformers.__version__
    except ImportError:
        result["transformers"] = None

    def save() -> None:
        """Write what is measured so far (a later variant that overruns its timeout loses only itself)."""
        result["elapsed_s"] = time.monotonic() - t0
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_decode.json").write_text(json.dumps(result, indent=1, default=str))
        (args.out / "bench_decode.md").write_text(markdown(result))

    def native(name: str, graphs: bool, compiled: bool, use_gemv: bool = False) -> None:
        skip = ("time budget spent" if over() else "--sd-only" if args.sd_only
                else "--no-compile" if compiled and args.no_compile
                else "--no-eager" if not graphs and args.no_eager else None)
        if skip:
            result["decode"][name] = {"skipped": skip}
            return
        print(f"{name}...", flush=True)
        try:
            variant = engine(graphs, compiled, use_gemv, args.compile_mode if compiled else None)
            result["decode"][name] = native_decode(variant, model, prompt, args.new_tokens, args.repeats)
            print(f"  {result['decode'][name]['tok_s']:.1f} tok/s", flush=True)
        except Exception as err:  # noqa: BLE001 - a variant that fails is reported, not fatal
            result["decode"][name] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
            print(f"  failed: {result['decode'][name]['error']}", flush=True)
        free(device)
        save()

    # q/k/v and gate/up are always stacked; the GEMV is how a model's linears are built, so its variants get a
    # model of their own (same seed, same weights); compile last.
    native("specbench (no graphs)", False, False)
    native("specbench (CUDA graphs)", True, False)
    if args.gemv:  # from here on every 16-bit one-row linear runs the Triton GEMV (SD rows and compile too)
        del model
        free(device)
        model = engine(use_gemv=True).model(ModelConf(source, shape_only=True))
        native("specbench (CUDA graphs, GEMV)", True, False, use_gemv=True)
    for kind in () if args.no_sd else ("ngram", "eagle"):
        if over():
            result["sd_overhead"].append({"drafter": kind, "skipped": "time budget spent"})
            continue
        print(f"SD host overhead ({kind})...", flush=True)
        try:
            row = sd_overhead(engine(compiled=args.sd_compile, use_gemv=args.gemv), model, prompt, args.new_tokens,
                              kind, args.replays, args.tau, not args.no_profiler)
            print(f"  wall {row['wall_ms_per_step']:.2f} ms/step, isolated GPU {row['isolated_gpu_ms_per_step']:.2f} "
                  f"ms/step, overhead {row['host_overhead_fraction']:.1%}", flush=True)
        except Exception as err:  # noqa: BLE001 - report and go on
            row = {"drafter": kind, "error": f"{type(err).__name__}: {err}"}
            print(f"  failed: {row['error']}", flush=True)
        result["sd_overhead"].append(row)
        free(device)
        save()
    native("specbench (CUDA graphs, " + ("GEMV, " if args.gemv else "") + "torch.compile"
           + (f" {args.compile_mode})" if args.compile_mode else ")"), True, True, use_gemv=args.gemv)
    del model
    free(device)
    save()
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
