"""The terms of Eq. (1) of arXiv 2505.22179 on one GPU, per quantization scheme x kernel backend, and a memory check.

For the Llama-3-8B shape (random weights, each scheme quantized round-to-nearest at load time through
``specbench.quantization.build_quantizer``), the probes of ``specbench.timing.probes``: prefill and T_t at each
context, T_v(n) for n in {10, ..., 60} under an EAGLE-2-shaped tree mask (and n = 10 under a sequence mask, the
fixed-length verify of HierSpec), and T_d of a random EAGLE head (1 and 10 rows; the head is never quantized,
so it is timed once, next to the 16-bit target). The 8B's own T_t is also its T_d as a draft model for the 70B.
Each probe is the median of >= 100 CUDA-graph replays timed with CUDA events after warm-up.

The memory check builds what HierSpec needs on one GPU — a W4A16 Llama-3-70B target, a W4A16 Llama-3-8B
intermediate and an EAGLE head, each with a 2048-token KV cache — runs a short HierSpec generation (prefill of a
~1.9k-token prompt, CUDA-graph captures, decoding) and reports ``torch.cuda.max_memory_allocated``. With
``--mem-layers`` below 80 the 70B is built with fewer layers and the peak is scaled linearly to 80 layers (said in
the output).

gemlite combinations come last and are bounded: each gets an equal share of the time left, checked before every
probe (a combination that runs out keeps the probes it finished); before probing, one untimed call of each
distinct layer-0 linear at every M the probes use compiles (or loads) its kernels, and a small agreement check
against the ``reference`` backend runs. Progress lines carry timestamps; the JSON/Markdown are rewritten after
every combination (and on SIGTERM).

    python -m benchmarks.bench_eq1 --out results/bench_eq1        # on the GPU machine, < 6 minutes
    python -m benchmarks.bench_eq1 --smoke --out /tmp/eq1          # tiny shapes on CPU: checks the script
"""

from __future__ import annotations

import json
import math
import signal
import time

import pandas as pd
import torch

from specbench.analysis.eq1 import verify_ratios
from specbench.config import EngineConf, ModelConf, QuantConf
from specbench.decoding.forward import DEFAULT_BUCKETS
from specbench.decoding.generate import generate
from specbench.engine import Engine
from specbench.model import load_hf_config
from specbench.quantization import BACKENDS, QuantLinear, UnsupportedBackendError
from specbench.quantization.backends import gemlite as gemlite_backend
from specbench.quantization.schemes import QuantConfigError, get_scheme
from benchmarks.bench_quant_linear import _source_code, agreement
from benchmarks.common import free, smoke_parser, tensor_bytes
from specbench.timing.probes import HeadProber, Prober, ProbeSettings, write_probes

SCHEMES = ("bf16", "fp16", "w8a8_int8", "w8a8_fp8", "w4a16", "w4a8")
DENSE = ("bf16", "fp16")
# gemlite runs w4a8 with int8 activations per channel only; every other scheme at its default group
GROUPS = {("w4a8", "gemlite"): -1}
TARGET, BIG = "llama-3-8b-instruct", "llama-3-70b-instruct"


def combos(schemes, backends) -> tuple[list[tuple[str, str]], list[dict]]:
    """(scheme, backend) pairs to run, and the pairs skipped because the backend lacks the scheme."""
    todo, skipped = [], []
    for scheme in schemes:
        if scheme in DENSE:
            todo.append((scheme, "dense"))
            continue
        for backend in backends:
            impl = BACKENDS.get(backend)
            if impl is None or scheme not in impl.schemes:
                skipped.append({"scheme": scheme, "backend": backend,
                                "reason": f"backend {backend!r} does not implement {scheme}"})
            else:
                todo.append((scheme, backend))
    return todo, skipped


def build(source: str, scheme: str, backend: str, device: str, dtype: torch.dtype, overrides: dict | None = None):
    """A shape-only ``source`` quantized as ``scheme`` by ``backend`` (dense schemes: 16-bit)."""
    quant = QuantConf() if scheme in DENSE else QuantConf(scheme, backend, group_size=GROUPS.get((scheme, backend)))
    engine = Engine(device=device, dtype=dtype)
    return engine.model(ModelConf(source, shape_only=True, overrides=overrides or {}), quant)


def probe_scheme(model, settings: ProbeSettings, seq_sizes, head_settings: ProbeSettings | None, extra: dict,
                 log, rows: list[dict] | None = None, deadline: float = math.inf) -> list[dict]:
    """prefill, T_t, T_v(n) (tree) and T_v(n) (sequence) per context, then the head's T_d; a runner per context
    sized for it unless ``settings.max_seq_len`` fixes one cache size for all. Rows are appended to ``rows`` as
    they are measured; after ``deadline`` no further probe starts (the caller sees which are missing)."""
    rows = [] if rows is None else rows
    name = getattr(model, "source", None)
    for context in settings.contexts:
        size = settings.cache_for(context)
        if settings.max_seq_len is None:
            size = max(size, context + max(seq_sizes, default=1) + 8)
        prober = Prober(model, settings, max_seq_len=size)
        todo = ([("prefill", 0, "")] if settings.prefill else []) + [("T_t", 1, "causal")]
        todo += [("T_v", n, "tree") for n in settings.verify_sizes] + [("T_v", n, "sequence") for n in seq_sizes]
        decode, tree, seq = None, [], []
        for probe, n, mask in todo:
            if time.monotonic() > deadline:
                log(f"    ctx {context}: time share spent before {probe} n={n} {mask}")
                break
            if probe == "prefill":
                row = prober.prefill(context)
            elif probe == "T_t":
                row = decode = prober.decode(context)
            else:
                row = prober.verify(n, context, mask)
                (tree if mask == "tree" else seq).append(row)
            rows.append({**row, **extra})
        if decode is not None:
            log(f"    ctx {context} ({prober.runner.total_slots} cache slots): T_t {decode['median_ms']:.3f} ms | "
                + " ".join(f"{r['n']}:x{r['median_ms'] / decode['median_ms']:.2f}" for r in tree)
                + "".join(f" | seq{r['n']}:x{r['median_ms'] / decode['median_ms']:.2f}" for r in seq))
        del prober
    if head_settings is not None:
        head = Engine().head("random", model)
        for context in head_settings.contexts:
            hp = HeadProber(head, head_settings, name=name, max_seq_len=head_settings.cache_for(context))
            for k in head_settings.head_rows:
                rows.append({**hp.draft_pass(k, context), **extra})
                log(f"    EAGLE head T_d({k} rows, ctx {context}): {rows[-1]['median_ms']:.3f} ms")
            del hp
        del head
    return rows


def probe_ms(settings: ProbeSettings, seq_sizes, buckets=DEFAULT_BUCKETS) -> list[int]:
    """The token counts the probes' forwards run at: 1, each verify size itself (a probe's graph has exactly its
    rows), and each context's cache fill (a prefill: its bucket, or one eager forward above the largest)."""
    bucket = lambda n: next((b for b in buckets if b >= n), n)  # noqa: E731
    return sorted({1, *settings.verify_sizes, *seq_sizes, *map(bucket, settings.contexts)})


def warm_gemlite(model, ms, device: str, log) -> dict:
    """One untimed call of each distinct layer-0 linear at each M: compiles (or loads) the kernels every layer of
    that shape uses, before any timing; returns the kernel family and config source per M and shape."""
    linears = {}
    for module in model.model.layers[0].modules():
        if isinstance(module, QuantLinear):
            linears.setdefault((module.in_features, module.out_features), module)
    dtype = model.model.embed_tokens.weight.dtype
    chosen = {}
    for m in ms:
        t0 = time.monotonic()
        with torch.inference_mode():
            for (k, n), layer in linears.items():
                layer(torch.randn(m, k, device=device, dtype=dtype))
        torch.cuda.synchronize()
        chosen[m] = {f"{k}x{n}": gemlite_backend.kernel_choice(layer.kernel, m) for (k, n), layer in linears.items()}
        log(f"  warm-up M={m}: {time.monotonic() - t0:.1f} s "
            f"({', '.join(sorted({c['family'] for c in chosen[m].values()}))})")
    return chosen


def memory_check(device: str, dtype: torch.dtype, backend: str, layers: int, full_layers: int, prompt: int,
                 new_tokens: int, sources: tuple[str, str], log) -> dict:
    """Build W4A16 target + W4A16 intermediate + EAGLE head with 2048-token caches and run HierSpec briefly."""
    big, inter_source = sources
    cuda = device == "cuda"
    if cuda:
        free(device)
        torch.cuda.reset_peak_memory_stats()
    start_alloc = torch.cuda.memory_allocated() if cuda else 0
    t0 = time.monotonic()
    overrides = {"num_hidden_layers": layers} if layers < full_layers else None
    target = build(big, "w4a16", backend, device, dtype, overrides)
    build_target_s = time.monotonic() - t0
    inter = build(inter_source, "w4a16", backend, device, dtype)
    engine = Engine(EngineConf(gemv=False), device=device, dtype=dtype, max_seq_len=2048)
    head = engine.head("random", inter)
    build_s = time.monotonic() - t0
    sizes = {"target_bytes": tensor_bytes(target), "intermediate_bytes": tensor_bytes(inter),
             "head_own_bytes": tensor_bytes(head.fc) + tensor_bytes(head.layers)}
    peak_build = torch.cuda.max_memory_allocated() - start_alloc if cuda else None
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    max_seq_len = engine.max_seq_len
    target_session = engine.session(target)
    drafter = engine.drafter({"name": "hierspec", "min_draft": 6, "inner_depth": 3, "inner_tree_size": 30, "topk": 10},
                             target_session, model=inter, head=head)
    inter_session = drafter.session
    cache_bytes = lambda cache: 2 * cache.k.numel() * cache.k.element_size()  # noqa: E731  (K and V)
    kv = {"target_kv_bytes": cache_bytes(target_session.runner.cache),
          "intermediate_kv_bytes": cache_bytes(inter_session.runner.cache),
          "head_kv_bytes": cache_bytes(drafter.inner.runner.cache)}
    ids = torch.randint(0, target.config.vocab_size, (prompt,), generator=torch.Generator().manual_seed(0)).tolist()
    t1 = time.monotonic()
    gen = generate(target_session, drafter, ids, max_new_tokens=new_tokens)
    run_s = time.monotonic() - t1
    peak_run = torch.cuda.max_memory_allocated() if cuda else None
    steady = torch.cuda.memory_allocated() if cuda else sum(sizes.values()) + sum(kv.values())
    out = {"backend": backend, "target": big, "intermediate": inter_source, "layers_built": layers,
           "layers_full": full_layers, "scaled": layers < full_layers, "build_s": build_s,
           "build_target_s": build_target_s, "generate_s": run_s, "prompt_tokens": prompt,
           "new_tokens": len(gen.tokens), "steps": gen.steps, "max_seq_len": max_seq_len, **sizes, **kv,
           "peak_build_bytes": peak_build, "peak_run_bytes": peak_run, "allocated_after_bytes": steady}
    if layers < full_layers:  # scale linearly: every missing layer adds its weights and its KV slots
        per_layer = tensor_bytes(target.model.layers[0]) + kv["target_kv_bytes"] // layers
        missing = (full_layers - layers) * per_layer
        out["per_layer_bytes"] = per_layer
        for key in ("peak_run_bytes", "peak_build_bytes", "allocated_after_bytes", "target_bytes"):
            if out[key] is not None:
                out[key + "_scaled"] = out[key] + missing
    peak = out.get("peak_run_bytes_scaled", peak_run)
    if cuda:
        total = torch.cuda.get_device_properties(0).total_memory
        out.update({"gpu_total_bytes": total, "fits": bool(peak is not None and peak < total),
                    "fits_a100_80gb": bool(peak is not None and peak < 80e9)})
    del drafter, target_session, inter_session, target, inter, head
    free(device)
    log(f"  memory: peak {((peak or 0) / 2**30):.1f} GiB (build peak {((peak_build or 0) / 2**30):.1f} GiB), "
        f"built in {build_s:.0f} s")
    return out


def markdown(result: dict) -> str:
    lines = [f"# Eq. (1) terms, {result['model']} shape, {result['device']}", "",
             f"CUDA-graph replays timed with {result['timer']}, median of {result['replays']} after warm-up; tree = "
             "EAGLE-2-shaped (depth 6, top-k 10), n counts the root; each forward replays a graph of exactly n "
             "rows.", ""]
    probes = pd.DataFrame(result["probes"])
    if not probes.empty:
        ratios = verify_ratios(probes)
        modes = {} if "autotune" not in probes else probes.groupby(["quant", "backend", "kernel"]).autotune.first()
        for context in sorted(set(probes.context)):
            at = ratios[ratios.context == context]
            tree = at[at["mask"] == "tree"]
            ns = sorted(set(tree.n))
            seq_ns = sorted(set(at[at["mask"] == "sequence"].n))
            lines += [f"## context {context}: T_v(n)/T_t (tree mask; seq = sequence mask)", "",
                      "| scheme | backend | kernel | T_t ms | " + " | ".join(f"n={n}" for n in ns)
                      + "".join(f" | seq n={n}" for n in seq_ns) + " |",
                      "|" + "---|" * (len(ns) + len(seq_ns) + 4)]
            for (quant, backend, kernel), grp in at.groupby(["quant", "backend", "kernel"], sort=False):
                t = grp[grp["mask"] == "tree"].set_index("n").ratio
                seq = grp[grp["mask"] == "sequence"].set_index("n").ratio
                if isinstance(modes.get((quant, backend, kernel)), str):
                    kernel = f"{kernel} [autotune {modes[quant, backend, kernel]}]"
                lines.append(f"| {quant} | {backend} | {kernel} | {grp.T_t_ms.iloc[0]:.3f} | "
                             + " | ".join(f"x{t[n]:.2f}" if n in t else "-" for n in ns)
                             + "".join(f" | x{seq[n]:.2f}" if n in seq else " | -" for n in seq_ns) + " |")
            lines.append("")
        heads = probes[probes.component == "eagle_head"]
        if not heads.empty:
            lines += ["## EAGLE head T_d (random head, 16-bit)", "", "| context | rows | median ms | p10 | p90 |",
                      "|---|---|---|---|---|"]
            lines += [f"| {r.context} | {r.n} | {r.median_ms:.3f} | {r.p10_ms:.3f} | {r.p90_ms:.3f} |"
                      for r in heads.itertuples()]
            lines.append("")
    gem = result.get("gemlite")
    if gem and (gem["kernels"] or gem["agreement"]):
        lines += [f"## gemlite (autotune {gem['autotune']}: {gem['autotune_doc']})", "",
                  "Kernel family per M of the probes' forwards and config source per distinct layer shape (C cached, "
                  "c cached at the nearest M, D gemlite default preset, T tuned here).", ""]
        for scheme, per_m in gem["kernels"].items():
            cells = [f"M={m}: " + "/".join(sorted({c["family"] for c in chosen.values()})) + " "
                     + "".join(_source_code(c["config"]) for c in chosen.values()) for m, chosen in per_m.items()]
            lines.append(f"- {scheme}: " + "; ".join(cells))
        lines += [f"- agreement {a['scheme']} g{a['group_size']} vs reference: rel. error {a['rel_error']:.2e} "
                  f"({'ok' if a['ok'] else 'FAIL'})" for a in gem["agreement"]]
        lines.append("")
    for s in result["skipped"]:
        lines.append(f"- skipped {s['scheme']} x {s['backend']}: {s['reason']}")
    mem = result.get("memory")
    if mem:
        lines += ["", "## Memory: W4A16 70B target + W4A16 8B intermediate + EAGLE head, 2048-token KV caches", ""]
        if "error" in mem or "skipped" in mem:
            lines.append(f"- {mem.get('skipped') or mem.get('error')}")
        else:
            gib = lambda b: "-" if b is None else f"{b / 2**30:.2f} GiB"  # noqa: E731
            scaled = (f" (built with {mem['layers_built']} of {mem['layers_full']} layers; scaled linearly to "
                      f"{mem['layers_full']}: + {mem['layers_full'] - mem['layers_built']} x "
                      f"{gib(mem['per_layer_bytes'])} per layer of weights and KV)") if mem["scaled"] else ""
            lines += [f"- backend {mem['backend']}{scaled}",
                      f"- weights: target {gib(mem.get('target_bytes_scaled', mem['target_bytes']))}, intermediate "
                      f"{gib(mem['intermediate_bytes'])}, head (own) {gib(mem['head_own_bytes'])}",
                      f"- KV caches: target {gib(mem['target_kv_bytes'])}, intermediate "
                      f"{gib(mem['intermediate_kv_bytes'])}, head {gib(mem['head_kv_bytes'])}",
                      f"- torch.cuda.max_memory_allocated during HierSpec generation: "
                      f"**{gib(mem.get('peak_run_bytes_scaled', mem['peak_run_bytes']))}**; during the build: "
                      f"{gib(mem.get('peak_build_bytes_scaled', mem['peak_build_bytes']))}",
                      f"- fits this GPU ({gib(mem.get('gpu_total_bytes'))}): {mem.get('fits')}; fits an 80 GB A100: "
                      f"{mem.get('fits_a100_80gb')}",
                      f"- build {mem['build_s']:.0f} s, generation of {mem['new_tokens']} tokens after a "
                      f"{mem['prompt_tokens']}-token prompt {mem['generate_s']:.1f} s"]
    lines += ["", f"elapsed {result['elapsed_s']:.0f} s"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = smoke_parser(__doc__, "tiny shapes on CPU (reference backend)")
    parser.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    parser.add_argument("--backends", nargs="+", default=["torch", "gemlite"])
    parser.add_argument("--contexts", nargs="+", type=int, default=[512])
    parser.add_argument("--ns", nargs="+", type=int, default=[10, 20, 30, 40, 50, 60])
    parser.add_argument("--seq-ns", nargs="+", type=int, default=[10])
    parser.add_argument("--max-seq-len", type=int, default=None, help="KV-cache size of every probe (default: a cache "
                        "per context just large enough; the native attention reads every slot of the cache)")
    parser.add_argument("--replays", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--no-prefill", action="store_true")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--model", default=TARGET, help="the probed target (shape-only)")
    parser.add_argument("--big", default=BIG, help="the memory check's target")
    parser.add_argument("--intermediate", default=None, help="the memory check's intermediate (default: --model)")
    parser.add_argument("--mem-layers", type=int, default=None, help="target layers to build for the memory check "
                        "(default: all; fewer: the peak is scaled linearly)")
    parser.add_argument("--mem-backend", default=None, help="w4a16 backend of the memory check (default: torch, "
                        "tinygemm; gemlite packs int4 the same way)")
    parser.add_argument("--mem-prompt", type=int, default=1920)
    parser.add_argument("--mem-new-tokens", type=int, default=48)
    parser.add_argument("--budget-s", type=float, default=330.0, help="skip what is left after this many seconds")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    if args.smoke:
        device, source, big, inter_source = "cpu", "tiny-target", "tiny-target", "tiny-draft"
        args.backends, args.contexts, args.ns, args.seq_ns = ["reference"], [32], [4, 10], [4]
        args.replays, args.warmup, args.mem_prompt, args.mem_new_tokens = 5, 1, 48, 8
        args.mem_layers = min(args.mem_layers or 3, 3)
        args.schemes = [s for s in args.schemes if s in ("bf16", "w8a8_int8", "w4a16")]
        torch.set_num_threads(1)
        dtype_of = lambda scheme: torch.float32  # noqa: E731
    else:
        if not torch.cuda.is_available():
            parser.error("no CUDA device; use --smoke for the CPU check")
        device, source, big, inter_source = "cuda", args.model, args.big, args.intermediate or args.model
        dtype_of = lambda scheme: torch.float16 if scheme == "fp16" else torch.bfloat16  # noqa: E731
    full_layers = int(load_hf_config(big)["num_hidden_layers"])
    log = lambda msg: print(f"[{time.monotonic() - t0:7.1f} s] {msg}", flush=True)  # noqa: E731
    todo, skipped = combos(args.schemes, args.backends)
    mem_reserve = 0 if args.no_memory else 90  # seconds kept for the memory check
    result = {"model": source, "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
              "torch": torch.__version__, "timer": "CUDA events" if device == "cuda" else "perf_counter",
              "replays": args.replays, "contexts": args.contexts, "ns": args.ns, "probes": [], "skipped": skipped,
              "builds": [], "budget_s": args.budget_s}
    if any(backend == "gemlite" for _, backend in todo):
        mode = gemlite_backend.autotune_mode()
        result["gemlite"] = {"autotune": mode, "autotune_doc": gemlite_backend.MODE_DOC[mode], "agreement": [],
                             "kernels": {}, "tuning": gemlite_backend.TUNING}
    for s in skipped:
        log(f"skip {s['scheme']} x {s['backend']}: {s['reason']}")
    head_done = False

    def write() -> None:
        result["elapsed_s"] = time.monotonic() - t0
        args.out.mkdir(parents=True, exist_ok=True)
        frame = pd.DataFrame(result["probes"])
        if not frame.empty:
            write_probes(frame, args.out / "probes.parquet")
        (args.out / "eq1.json").write_text(json.dumps(result, indent=1, default=str))
        (args.out / "eq1.md").write_text(markdown(result))

    def run_combo(scheme: str, backend: str, deadline: float = math.inf) -> None:
        nonlocal head_done
        log(f"{scheme} x {backend}" + ("" if deadline == math.inf else f" (share {deadline - time.monotonic():.0f} s)"))
        dtype = dtype_of(scheme)
        try:
            t1 = time.monotonic()
            model = build(source, scheme, backend, device, dtype)
            build_s = time.monotonic() - t1
        except (UnsupportedBackendError, QuantConfigError, ImportError) as err:
            reason = str(err).split(". Combinations")[0]
            skipped.append({"scheme": scheme, "backend": backend, "reason": reason})
            log(f"  skipped: {reason}")
            free(device)
            return
        log(f"  built in {build_s:.1f} s")
        settings = ProbeSettings(contexts=tuple(args.contexts), verify_sizes=tuple(args.ns), masks=("tree",),
                                 replays=args.replays, warmup=args.warmup, prefill=not args.no_prefill,
                                 max_seq_len=args.max_seq_len)
        head_settings = None
        if not head_done and scheme in DENSE:
            head_settings = ProbeSettings(contexts=tuple(args.contexts), head_rows=(1, 10), replays=args.replays,
                                          warmup=args.warmup, max_seq_len=args.max_seq_len)
            head_done = True
        extra = {"scheme": scheme, "group_size": GROUPS.get((scheme, backend))}
        if backend == "gemlite":
            extra["autotune"] = result["gemlite"]["autotune"]
            result["gemlite"]["kernels"][scheme] = warm_gemlite(model, probe_ms(settings, args.seq_ns), device, log)
            group = GROUPS.get((scheme, backend), get_scheme(scheme).default_group)
            check = agreement(scheme, group, backend, device)
            result["gemlite"]["agreement"].append(check)
            log(f"  agreement with reference: rel. error {check['rel_error']:.2e} ({'ok' if check['ok'] else 'FAIL'})")
        before = len(result["probes"])
        probe_scheme(model, settings, args.seq_ns, head_settings, extra, log, result["probes"], deadline)
        expected = len(args.contexts) * (int(settings.prefill) + 1 + len(args.ns) + len(args.seq_ns))
        if len(result["probes"]) - before < expected:
            skipped.append({"scheme": scheme, "backend": backend, "reason": f"partial: {len(result['probes']) - before}"
                            f" of {expected} probes before the time share ran out"})
        result["builds"].append({"scheme": scheme, "backend": backend, "build_s": build_s,
                                 "weight_bytes": tensor_bytes(model)})
        del model
        if backend == "gemlite":
            try:
                from specbench.quantization import save_gemlite_cache

                log(f"  gemlite config cache saved to {save_gemlite_cache()}")
            except Exception as err:  # noqa: BLE001
                log(f"  gemlite cache not saved: {err}")
        free(device)

    def run_combos(pairs, reserve: float, share: bool = False) -> None:
        for index, (scheme, backend) in enumerate(pairs):
            left = args.budget_s - reserve - (time.monotonic() - t0)
            if left <= 0:
                skipped.append({"scheme": scheme, "backend": backend, "reason": "time budget spent"})
                log(f"skip {scheme} x {backend}: time budget spent")
                continue
            deadline = time.monotonic() + left / (len(pairs) - index) if share else math.inf
            try:
                run_combo(scheme, backend, deadline)
            except Exception as err:  # noqa: BLE001 - only gemlite's (share=True): a failing kernel is a result
                if not share:
                    raise
                reason = f"failed: {type(err).__name__}: {str(err)[:300]}"
                skipped.append({"scheme": scheme, "backend": backend, "reason": reason})
                log(f"  {reason}")
                free(device)
            write()

    def stop(signum, frame):
        raise SystemExit(128 + signum)  # unwinds through the ``finally`` below, which writes what was measured

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        # dense and core-PyTorch kernels first, then the memory check, then gemlite (Triton compiles per layer
        # shape and M bucket, and autotunes unless a config is cached), each with an equal share of what is left
        run_combos([c for c in todo if c[1] != "gemlite"], mem_reserve)
        if not args.no_memory:
            backend = args.mem_backend or ("reference" if args.smoke else "torch")
            left = args.budget_s - (time.monotonic() - t0)
            layers = min(args.mem_layers or full_layers, full_layers)
            if not args.smoke and left < 150 and layers == full_layers and full_layers > 16:
                layers = 16  # not enough time for the full 70B build: 16 layers, scaled linearly (said in the output)
            log(f"memory check (w4a16 on {backend}, {layers} of {full_layers} target layers, {left:.0f} s left)")
            try:
                result["memory"] = memory_check(device, torch.float32 if args.smoke else torch.bfloat16, backend,
                                                layers, full_layers, args.mem_prompt, args.mem_new_tokens,
                                                (big, inter_source), log)
            except Exception as err:  # noqa: BLE001 - an out-of-memory here is the answer, not a crash
                result["memory"] = {"error": f"{type(err).__name__}: {str(err)[:500]}"}
                log(f"  failed: {result['memory']['error']}")
                free(device)
            write()
        run_combos([c for c in todo if c[1] == "gemlite"], 0, share=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
        write()
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
