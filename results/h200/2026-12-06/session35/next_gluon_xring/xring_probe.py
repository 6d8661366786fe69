"""Session 35: session 33's Gluon W4A16 prototype lost to the committed kernel by 1.1-2.0x at every M (call 3). Its x
tile was loaded by the threads each K step (a global load the step waits for); with ``x_ring`` it comes through the
cp.async ring with the weights. This times both, at 4 and 6 stages, against the committed kernel on a few shapes, and
checks each against the reference backend. Needs ptxas >= 13.3 (TRITON_PTXAS_PATH).

    python xring_probe.py OUT.json [--budget-s 120]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "2026-12-04/session33/next_gluon_w4a16_movs"))
import gluon_w4a16 as proto  # noqa: E402

from benchmarks.common import graphed_us  # noqa: E402
from specbench.quantization import get_scheme, quantize_rtn  # noqa: E402
from specbench.quantization.linear import QuantLinear  # noqa: E402

SHAPES = {"70b_qkv": (10240, 8192, 4), "8b_qkv": (6144, 4096, 4), "8b_gate_up": (28672, 4096, 1),
          "70b_down": (8192, 28672, 4)}  # (N, K, the split that won in call 3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--budget-s", type=float, default=120)
    args = parser.parse_args()
    proto.check_ptxas()
    deadline = time.monotonic() + args.budget_s
    counters = torch.zeros(4096, dtype=torch.int32, device="cuda")
    rows = []
    for name, (n, k, split) in SHAPES.items():
        copies = max(2, min(32, -(-200_000_000 // (n * k // 2))))
        weights = [quantize_rtn(torch.randn(n, k, device="cuda", dtype=torch.float16) * 0.02, get_scheme("w4a16"),
                                128, True) for _ in range(copies)]
        layers = [QuantLinear(qw, None, "triton", torch.float16) for qw in weights]
        reference = QuantLinear(weights[0], None, "reference", torch.float32)
        for m in (1, 64):
            if time.monotonic() > deadline:
                break
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            ref = reference(x.float())
            row = {"shape": name, "M": m, "copies": copies, "split": split}
            # the prototype as call 3 ran it; the ring at 3 stages (two programs an SM fit at BM 64), 4 and 6
            for ring, stages in ((False, 4), (True, 3), (True, 4), (True, 6)):
                label = f"{'ring' if ring else 'sync'}_st{stages}"
                try:
                    def launch(q, ring=ring, stages=stages):
                        return proto.launch(x, q.kernel.packed, q.kernel.scales, None, counters, 128, split, 4, stages,
                                            ring)
                    got = launch(layers[0]).float()  # also the build, before any capture
                    # one graph launching every weight copy once (past L2), per launch
                    us = graphed_us(lambda: [launch(q) for q in layers], launches=1) / copies
                    row[label] = {"us": round(us, 2),
                                  "rel_err": ((got - ref).norm() / ref.norm()).item()}
                except Exception as e:  # a prototype: record and go on
                    row[label] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            [q(x) for q in layers]  # builds, before the capture
            row["committed_us"] = round(graphed_us(lambda: [q(x) for q in layers], launches=1) / copies, 2)
            print(json.dumps(row), flush=True)
            rows.append(row)
    Path(args.out).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                          "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
