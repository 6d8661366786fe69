"""One-off: is a W4A16 kernel's time bimodal with where its weight lies in memory (same config, same process)?"""
import json, sys
import torch
from benchmarks.bench_quant_linear import timed
from specbench.quantization import get_scheme, quantize_rtn
from specbench.quantization.linear import QuantLinear
from specbench.quantization import int4_kernel as ik

res = []
keep = []
for shape, m, cfgs in [((57344, 8192), 16, [None]), ((8192, 28672), 8, [None, ik.KernelConfig("dot", 256, 128, 8, 16, 4, 4, True, 5, False)])]:
    n, k = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    w = torch.randn(n, k, device="cuda", generator=g, dtype=torch.float16) * .02
    qw = quantize_rtn(w, get_scheme("w4a16"), 128, True)
    del w
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    for trial in range(10):
        keep.append(torch.empty(int((trial * 7919 % 97 + 1) * 1.3e6), dtype=torch.uint8, device="cuda"))  # shift addresses
        lin = QuantLinear(qw, None, "triton", torch.float16)
        kern = lin.kernel
        keep.append(lin)
        for cfg in cfgs:
            if cfg is None:
                fn = lambda: lin(x)
                label = "table"
            else:
                fn = lambda: ik.launch(x, kern.packed, kern.scales, kern.zeros, kern.counters, 128, cfg)
                label = "BN256 s8 st4"
            with torch.no_grad():
                one, _ = timed(fn, "cuda", 20)
                four, _ = timed(lambda: [fn() for _ in range(4)], "cuda", 20)
            addr = kern.packed.data_ptr()
            row = {"shape": f"{k}x{n}", "M": m, "cfg": label, "trial": trial, "addr_MB": addr / 2**20,
                   "addr_mod_64MB": (addr % 2**26) / 2**20, "one_us": one * 1e3, "four_us": four * 1e3 / 4}
            res.append(row)
            print(row["shape"], m, label, trial, f"addr {row['addr_MB']:.1f} MB (mod 64 MB {row['addr_mod_64MB']:.1f})",
                  f"one {row['one_us']:.1f} us, four {row['four_us']:.1f} us", flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)
