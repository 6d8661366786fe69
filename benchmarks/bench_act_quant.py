"""Per-token int8 activation quantization (``act_quant_kernel``): microseconds per call against torch's eager ops.

The int8-activation linears (W8A8 int8, W4A8) run this kernel before every GEMM, so at M = 64 its time is part of
T(64)/T(1). Each (M, K, block) is timed with CUDA events over a CUDA graph of 20 launches (median of 20
replays); the same run times torch's eager per-token quantization (amax, divide, round, clamp, cast) and a copy of
the same bytes as baselines. ``block``: the elements a program reads per step, ``parts``: programs per row
(``default`` = the kernel's choice).

    python -m benchmarks.bench_act_quant --out results/act_quant
"""

from __future__ import annotations

import itertools
import json
import time

import torch

from benchmarks.common import graphed_us, smoke_parser
from specbench.quantization.act_quant_kernel import quantize_per_token


def eager(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    s = (x.float().abs().amax(-1) / 127).clamp_min(torch.finfo(torch.float32).tiny)
    return torch.round(x.float() / s[:, None]).clamp(-127, 127).to(torch.int8), s


def main(argv: list[str] | None = None) -> dict:
    parser = smoke_parser(__doc__, "not supported: the kernel's CPU tests run it in Triton's interpreter")
    parser.add_argument("--ms", nargs="+", type=int, default=[1, 16, 64])
    parser.add_argument("--ks", nargs="+", type=int, default=[4096, 8192, 14336, 28672])
    parser.add_argument("--blocks", nargs="+", type=int, default=[0, 2048, 4096, 8192, 16384],
                        help="0: the kernel's default")
    parser.add_argument("--parts", nargs="+", type=int, default=[0], help="programs per row; 0: the kernel's default")
    args = parser.parse_args(argv)
    if args.smoke or not torch.cuda.is_available():
        parser.error("needs a GPU")
    rows = []
    for m in args.ms:
        for k in args.ks:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            row = {"M": m, "K": k, "eager_us": graphed_us(lambda: eager(x)),
                   "copy_us": graphed_us(lambda: x.clone())}
            for block, parts in itertools.product(args.blocks, args.parts):
                if block and block >= k:
                    continue
                label = "/".join([f"{block or 'default'}", *([f"p{parts}"] if parts else [])])
                row[label] = graphed_us(lambda: quantize_per_token(x, block or None, parts or None))
            rows.append(row)
            print(json.dumps({key: round(v, 2) if isinstance(v, float) else v for key, v in row.items()}), flush=True)
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "triton": __import__("triton").__version__, "date": time.strftime("%Y-%m-%d"), "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "act_quant.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
