"""The three 8-warp configs the tune refused for wrong results on the H200 (sessions 14 and 23), run many times against
``reference`` with the 4-warp rule lifted: each run's relative error. Run it in the checkout and in a copy of the code
before session 33's fix (PYTHONPATH), e.g. ``python probe_8warps.py OUT.json``."""

import json
import sys

import torch

from specbench.quantization import get_scheme, int4_kernel, quantize_rtn
from specbench.quantization.int4_kernel import KernelConfig
from specbench.quantization.linear import QuantLinear

int4_kernel.WARP_GROUP_LIMITED = ()  # check_shape reads it at each launch
CASES = [("DEQ 9, g128 with zero points", 8192, 8192, 128, False, 9),
         ("DEQ 6, per-channel", 8192, 8192, -1, True, 6),
         ("DEQ 6, per-channel", 8192, 28672, -1, True, 6),
         ("DEQ 5, per-channel", 8192, 8192, -1, True, 5)]


def main(out: str, runs: int = 40) -> None:
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for name, n, k, group, sym, deq in CASES:
        cfg = KernelConfig("dot", 128, 128, 4, BM=64, warps=8, stages=3, DEQ=deq)
        qw = quantize_rtn(torch.randn(n, k, device="cuda", generator=gen) * 0.02, get_scheme("w4a16"), group, sym)
        fast, ref = QuantLinear(qw, None, "triton", torch.float16), QuantLinear(qw, None, "reference", torch.float32)
        for m in (64, 63):
            d = cfg.as_dict()
            d.pop("path")
            fast.kernel._chosen[m] = ([1, *d.values()], "probe")
            x = torch.randn(m, k, device="cuda", generator=gen).to(torch.float16)
            y_ref = ref(x.float())
            errs = [((fast(x).float() - y_ref).norm() / y_ref.norm()).item() for _ in range(runs)]
            row = {"case": name, "N": n, "K": k, "M": m, "max_rel_err": max(errs), "min_rel_err": min(errs),
                   "runs_over_1e-2": sum(e > 1e-2 for e in errs), "runs": runs}
            print(json.dumps(row), flush=True)
            rows.append(row)
    json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
