"""Where an EAGLE-2 step's GPU time goes: the verify forward at n tokens and the draft expansion, kernel by kernel.

Builds a shape-only target (random weights) with an EAGLE-2 drafter (random head), runs a replayed-tau generation
so every graph is captured, then replays, under the profiler, the target's verify graph of an EAGLE-shaped tree of
``n`` tokens and the drafter's whole-tree expansion graph, and prints each one's kernels grouped by name, its busy
time and its span. Also times, alone, 32 layers of the verify's attention (n queries against the static cache)
for each SDPA backend that accepts a boolean mask with GQA.

    python -m benchmarks.profile_sd_step --out results/profile_sd [--compile] [--tokens 64]
    python -m benchmarks.profile_sd_step --out DIR --model llama-3-70b-instruct --quant w4a16 --dtype float16 \
        --compile --compile-scope layer --tokens 8      # HierSpec's 70B verify of its chain
"""

from __future__ import annotations

import json

import torch

from benchmarks.profile_decode import attention_alone, profile_arguments, profiled
from specbench.config import EngineConf, ModelConf, QuantConf
from specbench.decoding.generate import generate
from specbench.decoding.replay import ReplayAcceptance
from specbench.engine import Engine
from specbench.timing.trees import eagle_like_tree


@torch.inference_mode()
def main(argv=None) -> dict:
    parser = profile_arguments(__doc__, 512)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=60, help="verified tokens n (root included)")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--compile-scope", default=None, help="engine.compile_scope (layer)")
    parser.add_argument("--no-gemv", action="store_true")
    parser.add_argument("--quant", default="none", help="the target's scheme (none = 16-bit)")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args(argv)
    engine = Engine(EngineConf(compile=args.compile, compile_scope=args.compile_scope, gemv=not args.no_gemv),
                    device="cuda", dtype=args.dtype, max_seq_len=args.max_seq_len)
    quant = QuantConf(args.quant, args.backend) if args.quant != "none" else QuantConf()
    model = engine.model(ModelConf(args.model, shape_only=True), quant)
    session = engine.session(model)
    drafter = engine.drafter({"name": "eagle", "head": "random", "topk": 10, "depth": 6,
                              "tree_size": args.tokens}, session)
    prompt = torch.randint(0, model.config.vocab_size, (args.prompt,), generator=torch.Generator().manual_seed(0))
    gen = generate(session, drafter, prompt.tolist(), max_new_tokens=128, acceptor=ReplayAcceptance(tau=4.0))
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "settings": vars(args) | {"out": str(args.out)}, "warmup_steps": gen.steps}
    context = session.length
    draft = eagle_like_tree(args.tokens, vocab_size=model.config.vocab_size)
    verify = lambda: session.verify(0, draft)  # noqa: E731 - the runner's graph of this bucket, inputs staged
    decode = lambda: session.verify(0, eagle_like_tree(1))  # noqa: E731
    linears = ("w4a16_kernel", 4) if args.quant == "w4a16" else None  # q/k/v, o, gate/up, down per layer
    result["verify"] = profiled(verify, args.steps, linears)
    result["decode"] = profiled(decode, args.steps, linears)
    expand = drafter._expand_graph.graph.replay
    result["expand"] = profiled(expand, args.steps)
    result["attention_ms"] = attention_alone(model, context, args.max_seq_len + engine.buckets[-1], args.tokens)
    for name in ("decode", "verify", "expand"):
        r = result[name]
        print(f"\n{name}: {r['step_ms']:.3f} ms, GPU busy {r['busy_us']:.0f} us, span {r['span_us']:.0f} us")
        if "by_position_us" in r:
            per_linear = [round(t, 2) for t in r["by_position_us"]]
            print("  w4a16 linears per layer (q/k/v, o, gate/up, down), us:", per_linear)
        for row in r["kernels"][:22]:
            print(f"  {row['us']:8.1f} us  {row['calls']:5.1f}x  {row['kernel']}")
    print(f"\nattention alone, {args.tokens} queries x 32 layers (ms):", result["attention_ms"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "profile_sd_step.json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
