"""The W4A16 linear stack run as a forward runs it, with and without each kernel asking L2 for the next one's weight.

Every layer has its own random weights (q/k/v, o, gate/up, down of the model's config, g128, the committed table's
configs), and one CUDA graph runs the layers in order, so nothing is in L2 but what a prefetch put there. Each
``--fractions`` value is the share of each of the next kernel's K ranges asked for (0: no prefetch, the baseline of
the same run). ``--gaps`` puts a spin kernel of that many µs before q/k/v, o, gate/up and down (norm, attention,
norm, SiLU in a real layer), when DRAM would otherwise idle. ``--smoke`` checks the script on the CPU (no prefetch
there).
"""

from __future__ import annotations

import json
import time

import torch

from benchmarks.common import free, smoke_parser
from specbench.decoding.graphs import GraphedCall
from specbench.quantization import get_scheme, quantize_rtn
from specbench.quantization.linear import QuantLinear
from specbench.quantization.tune import model_shapes
from specbench.timing.timer import time_calls

GPU_CLOCK_HZ = 1.98e9  # the H200's boost clock: spin cycles per second for ``--gaps``


def build(model: str, layers: int, device: str, dtype: torch.dtype, small: bool) -> list[list]:
    """``layers`` layers of W4A16 g128 ``QuantLinear`` (q/k/v, o, gate/up, down), each with its own weights."""
    shapes, _ = model_shapes(model)
    if small:
        shapes = [(label, 256, 128) for label, _, _ in shapes]
    scheme = get_scheme("w4a16")
    out = []
    for i in range(layers):
        row = []
        for j, (_, k, n) in enumerate(shapes):
            gen = torch.Generator(device=device).manual_seed(1000 * i + j)
            w = torch.randn(n, k, device=device, generator=gen, dtype=dtype) * 0.02
            row.append(QuantLinear(quantize_rtn(w, scheme, 128, True), None, "triton" if device == "cuda" else
                                   "reference", dtype))
            del w
        out.append(row)
    return out


def chain(stack: list[list], fraction: float) -> None:
    """Each linear's kernel prefetches the next linear's weight (the last one the first's, as the next replay)."""
    flat = [lin.kernel for row in stack for lin in row]
    for cur, nxt in zip(flat, flat[1:] + flat[:1]):
        if hasattr(cur, "prefetch_next"):
            cur.prefetch_next(nxt, fraction)


def forward(stack: list[list], inputs: dict[int, torch.Tensor], gaps: list[float], device: str) -> None:
    for row in stack:
        for lin, gap in zip(row, gaps):
            if gap > 0 and device == "cuda":
                torch.cuda._sleep(int(gap * 1e-6 * GPU_CLOCK_HZ))
            lin(inputs[lin.in_features])


def main(argv: list[str] | None = None) -> list[dict]:
    parser = smoke_parser(__doc__, "tiny shapes on the CPU")
    parser.add_argument("--models", nargs="+", default=["llama-3-8b"])
    parser.add_argument("--layers", type=int, default=0, help="layers built (0: the model's own count)")
    parser.add_argument("--ms", nargs="+", type=int, default=[1, 32])
    parser.add_argument("--fractions", nargs="+", type=float, default=[0.0, 0.25, 0.5, 1.0])
    parser.add_argument("--gaps", nargs=4, type=float, default=[0, 0, 0, 0],
                        help="µs of spin before q/k/v, o, gate/up, down")
    parser.add_argument("--rounds", type=int, default=2, help="the fractions are timed in turns this many times")
    parser.add_argument("--replays", type=int, default=20)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = parser.parse_args(argv)
    device = "cpu" if args.smoke else "cuda"
    dtype = getattr(torch, args.dtype)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for model in args.models:
        layers = 2 if args.smoke else (args.layers or model_shapes(model)[1])
        t0 = time.monotonic()
        stack = build(model, layers, device, dtype, args.smoke)
        print(f"{model}: {layers} layers built in {time.monotonic() - t0:.1f} s", flush=True)
        for m in args.ms:
            inputs = {k: torch.randn(m, k, device=device, dtype=dtype) for k in {lin.in_features for lin in stack[0]}}
            graphs = {}
            for f in args.fractions:
                chain(stack, f)
                with torch.no_grad():
                    forward(stack, inputs, args.gaps, device)  # compiles this variant
                    graphs[f] = (GraphedCall(lambda: forward(stack, inputs, args.gaps, device)) if device == "cuda"
                                 else lambda: forward(stack, inputs, args.gaps, device))
                    graphs[f]()
            for r in range(args.rounds):
                for f, run in graphs.items():
                    t = time_calls(run, device, replays=args.replays, warmup=3)
                    row = {"model": model, "M": m, "layers": layers, "fraction": f, "gaps_us": args.gaps, "round": r,
                           "stack_ms": t.median_ms, "per_layer_us": 1e3 * t.median_ms / layers,
                           "dtype": args.dtype}
                    rows.append(row)
                    print(f"  {model} M={m} fraction {f:.2f} round {r}: {t.median_ms:.3f} ms "
                          f"({row['per_layer_us']:.1f} µs a layer)", flush=True)
            del graphs, inputs
            free(device)
        chain(stack, 0.0)
        del stack
        free(device)
    (args.out / "l2_prefetch.json").write_text(json.dumps({"rows": rows, "argv": argv, "torch": torch.__version__,
                                                          "gpu": torch.cuda.get_device_name() if device == "cuda"
                                                          else "cpu"}, indent=1))
    return rows


if __name__ == "__main__":
    main()
