"""Session 36: does the W4A16 kernel run faster when its weights are already in L2, and can an L2 prefetch issued
before an idle window (attention, norms: ~10 us a layer at the 8B shape) put them there?

The 8B shapes' kernels take about twice their DRAM time (qkv 10.4 us for 12.6 MB on an H100), so the question is
whether what is left is data arrival (which a prefetch hides) or launch, ramp and split-K tail (which it does not).
Per shape and M, each a graph over weight copies that together exceed L2, per copy:
- ``cold``: the kernel; ``warm``: the kernel twice on the same copy, the second launch's share;
- ``spin{s}``: a one-warp kernel busy for about s us, then the kernel; ``spin{s}_only``: the spin alone;
- ``{variant}_spin{s}``: a prefetch of the copy's packed weights and scales, the spin, the kernel;
  ``{variant}_only``: the prefetch alone. Variants: ``line`` (``prefetch.global.L2`` per 128-byte line),
  ``bulk`` (``cp.async.bulk.prefetch.L2`` per 16 KB).

    python l2_probe.py OUT.json [--budget-s 120]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

from benchmarks.common import graphed_us
from specbench.quantization import get_scheme, quantize_rtn
from specbench.quantization.linear import QuantLinear

SHAPES = {"8b_qkv": (6144, 4096), "8b_o": (4096, 4096), "8b_gate_up": (28672, 4096), "8b_down": (4096, 14336),
          "70b_o": (8192, 8192)}
LINE, CHUNK = 128, 16384


@triton.jit
def _spin(acc_ptr, iters):
    a = tl.load(acc_ptr)
    for _ in range(iters):
        a = a * 0.999999 + 0.000001
    tl.store(acc_ptr, a)


@triton.jit
def _prefetch(ptr, units, sink_ptr, UNIT: tl.constexpr, PER: tl.constexpr, BULK: tl.constexpr):
    idx = tl.minimum(tl.program_id(0) * PER + tl.arange(0, PER), units - 1)
    p = ptr + idx.to(tl.int64) * UNIT
    if BULK:
        r = tl.inline_asm_elementwise(f"cp.async.bulk.prefetch.L2.global [$1], {UNIT};\n\tmov.u32 $0, 0;", "=r,l",
                                      [p], dtype=tl.int32, is_pure=False, pack=1)
    else:
        r = tl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [p], dtype=tl.int32,
                                      is_pure=False, pack=1)
    s = tl.sum(r, axis=0)
    if s == 12345:  # never: keeps the asm
        tl.store(sink_ptr, s)


def prefetch(tensors, bulk: bool, sink):
    unit = CHUNK if bulk else LINE
    for t in tensors:
        units = -(-t.numel() * t.element_size() // unit)
        per = 64 if bulk else 1024
        _prefetch[(triton.cdiv(units, per),)](t.view(torch.int8), units, sink, UNIT=unit, PER=per, BULK=bulk,
                                               num_warps=4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--budget-s", type=float, default=120)
    args = parser.parse_args()
    deadline = time.monotonic() + args.budget_s
    acc = torch.ones(1, device="cuda")
    sink = torch.zeros(1, dtype=torch.int32, device="cuda")
    _spin[(1,)](acc, 100, num_warps=1)
    per_iter = (graphed_us(lambda: _spin[(1,)](acc, 20000, num_warps=1)) - graphed_us(
        lambda: _spin[(1,)](acc, 0, num_warps=1))) / 20000
    iters = {s: int(s / per_iter) for s in (5, 10, 20)}
    rows = [{"spin_us_per_iter": per_iter, "iters": iters}]
    print(json.dumps(rows[0]), flush=True)
    for name, (n, k) in SHAPES.items():
        copies = max(2, min(32, -(-250_000_000 // (n * k // 2))))
        layers = [QuantLinear(quantize_rtn(torch.randn(n, k, device="cuda", dtype=torch.float16) * 0.02,
                                           get_scheme("w4a16"), 128, True), None, "triton", torch.float16)
                  for _ in range(copies)]
        weights = [[q.kernel.packed, q.kernel.scales] for q in layers]
        mb = sum(t.numel() * t.element_size() for t in weights[0]) / 1e6
        for m in (1, 8, 32):
            if time.monotonic() > deadline:
                break
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            [q(x) for q in layers]
            prefetch(weights[0], False, sink)
            prefetch(weights[0], True, sink)

            def per_copy(*steps):
                def body():
                    for i, q in enumerate(layers):
                        for step in steps:
                            step(i, q)
                return round(graphed_us(body, launches=1) / copies, 2)

            kern = lambda i, q: q(x)  # noqa: E731
            spin = {s: (lambda i, q, it=it: _spin[(1,)](acc, it, num_warps=1)) for s, it in iters.items()}
            pf = {v: (lambda i, q, b=(v == "bulk"): prefetch(weights[i], b, sink)) for v in ("line", "bulk")}
            row = {"shape": name, "M": m, "MB": round(mb, 1), "copies": copies, "cold": per_copy(kern)}
            row["warm"] = round(per_copy(kern, kern) - row["cold"], 2)
            for s in (5, 10, 20):
                row[f"spin{s}"] = per_copy(spin[s], kern)
                row[f"spin{s}_only"] = per_copy(spin[s])
            for v in ("line", "bulk"):
                row[f"{v}_only"] = per_copy(pf[v])
                row[f"{v}_spin0"] = per_copy(pf[v], kern)
                for s in (5, 10, 20):
                    row[f"{v}_spin{s}"] = per_copy(pf[v], spin[s], kern)
            print(json.dumps(row), flush=True)
            rows.append(row)
        del layers, weights
        torch.cuda.empty_cache()
    Path(args.out).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                          "triton": triton.__version__, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
