"""Autoregressive decode throughput of the Llama-3-8B shape on one GPU, against transformers and the roofline.

Measured in one run on one GPU (bf16, batch 1, greedy, random weights of the real shapes):

1. device-to-device copy bandwidth (4 GiB, bytes read + written) and the roofline
   ``tokens/s = bandwidth / weight bytes`` (all parameters, as in docs/h200-anchors.md; a second roofline counts
   only the bytes a decode step must read: every weight but the embedding table, plus the static KV cache);
2. specbench's decode loop (``ModelSession`` + ``ForwardRunner`` + ``generate`` with the ``none`` drafter) with
   CUDA graphs on, and with them off;
3. transformers' ``LlamaForCausalLM.generate`` from the same config (random bf16 weights, default attention, no
   compilation (``disable_compile=True``), default dynamic cache; then ``cache_implementation="static"`` if that
   works; a variant that fails is reported with its error).

(The speculative loop's host overhead and its Eq. (1) prediction: ``benchmarks/bench_sd_loop.py``.)

Decode tokens/s everywhere = tokens produced after the prefill's first token / time after the prefill:
``generate``'s ``steps / decode_s``; for transformers ``(N - 1) / (T(N) - T(1))`` with T(k) the wall time of
``generate(max_new_tokens=k)``. ``--smoke`` runs the shipped tiny shape on CPU to check the script.

    python -m benchmarks.bench_decode --out results/bench_decode          # on the GPU machine, < 6 minutes
"""

from __future__ import annotations

import json
import statistics
import time

import torch

from specbench.config import EngineConf, ModelConf
from specbench.decoding.generate import generate
from specbench.engine import Engine
from specbench.model import load_hf_config
from benchmarks.common import copy_bandwidth, free, smoke_parser, tensor_bytes

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
    lines += ["", f"elapsed {result['elapsed_s']:.0f} s"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = smoke_parser(__doc__, "the tiny shipped shape on CPU (checks the script)")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hf-repeats", type=int, default=2)
    parser.add_argument("--copy-gib", type=float, default=4.0)
    parser.add_argument("--model", default=MODEL, help="shape to time (a shipped config name; shape-only)")
    parser.add_argument("--no-hf", action="store_true")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile variant")
    parser.add_argument("--no-eager", action="store_true", help="skip the variant without CUDA graphs")
    parser.add_argument("--compile-mode", default=None, help="torch.compile mode of the compiled variant "
                        "(e.g. max-autotune-no-cudagraphs: Triton GEMM templates timed against cuBLAS)")
    parser.add_argument("--gemv", action="store_true", help="add the Triton GEMV variant; the compiled variant "
                        "after it uses the GEMV too")
    parser.add_argument("--budget-s", type=float, default=330.0, help="skip what is left after this many seconds")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    if args.smoke:
        device, dtype, source = "cpu", torch.float32, "tiny-target"
        args.prompt, args.new_tokens = min(args.prompt, 16), min(args.new_tokens, 12)
        args.repeats, args.hf_repeats = 2, 1
        args.copy_gib = 1 / 64
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
              "roofline": roof, "decode": decode}
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
        skip = ("time budget spent" if over() else "--no-compile" if compiled and args.no_compile
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
    if args.gemv:  # from here on every 16-bit one-row linear runs the Triton GEMV (compile too)
        del model
        free(device)
        model = engine(use_gemv=True).model(ModelConf(source, shape_only=True))
        native("specbench (CUDA graphs, GEMV)", True, False, use_gemv=True)
    native("specbench (CUDA graphs, " + ("GEMV, " if args.gemv else "") + "torch.compile"
           + (f" {args.compile_mode})" if args.compile_mode else ")"), True, True, use_gemv=args.gemv)
    del model
    free(device)
    save()
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
