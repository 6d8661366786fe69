"""One-off: does a W4A16 kernel run slower after a kernel with no shared memory (the L1/shared carveout), and does a
preferred carveout of 100 % shared fix it?"""
import ctypes, json, sys
import torch
from specbench.decoding.graphs import GraphedCall
from specbench.quantization import get_scheme, quantize_rtn
from specbench.quantization.linear import QuantLinear
from specbench.quantization import int4_kernel as ik
from specbench.timing.timer import time_calls

cuda = ctypes.CDLL("libcuda.so.1")
CARVEOUT, SHARED, MAXDYN = 9, 1, 8

def get_attr(fn, a):
    v = ctypes.c_int()
    r = cuda.cuFuncGetAttribute(ctypes.byref(v), a, ctypes.c_void_p(fn))
    return v.value if r == 0 else f"err{r}"

def occupancy(k):
    n = ctypes.c_int()
    r = cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), ctypes.c_void_p(k.function),
                                                          32 * k.metadata.num_warps, k.metadata.shared)
    return n.value if r == 0 else f"err{r}"

def compiled():
    out = []
    for cache in ik.w4a16_kernel.device_caches.values():
        out += [k for k in cache[0].values() if getattr(k, "function", None)]
    return out

def us(fn, reps):
    fn(); g = GraphedCall(fn); g()
    return time_calls(g, "cuda", replays=20, warmup=3).median_ms * 1e3 / reps

cases = [("gate_up 70B M=16", 57344, 8192, 16, ik.KernelConfig("dot", 256, 128, 1, 16, 4, 4, True, 5, False)),
         ("down 70B M=8, BN256 s8 st4", 8192, 28672, 8, ik.KernelConfig("dot", 256, 128, 8, 16, 4, 4, True, 5, False)),
         ("down 70B M=8, table", 8192, 28672, 8, ik.KernelConfig("dot", 128, 128, 8, 16, 4, 3, True, 5, True)),
         ("gate_up 8B M=32, table", 28672, 4096, 32, None), ("o 70B M=8 table", 8192, 8192, 8, None)]
res = {}
R = 6
for name, n, k, m, cfg in cases:
    g = torch.Generator(device="cuda").manual_seed(0)
    lin = QuantLinear(quantize_rtn(torch.randn(n, k, device="cuda", generator=g, dtype=torch.float16) * .02,
                                   get_scheme("w4a16"), 128, True), None, "triton", torch.float16)
    kern = lin.kernel
    if cfg is None:
        c, _ = kern.config(m); cfg = ik.KernelConfig(ik.PATHS[c[0]] if hasattr(ik, "PATHS") else ("gemv", "dot")[c[0]], *c[1:])
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    side = torch.randn(16, 28672, device="cuda", dtype=torch.float16)
    run = lambda: ik.launch(x, kern.packed, kern.scales, kern.zeros, kern.counters, 128, cfg)
    ew = lambda: torch.sigmoid(side)
    row = {}
    for mode in ("default", "max_shared"):
        run(); torch.cuda.synchronize()
        ks = compiled()
        if mode == "max_shared":
            for kk in ks:
                cuda.cuFuncSetAttribute(ctypes.c_void_p(kk.function), CARVEOUT, 100)
        row[mode] = {
            "alone_us": us(lambda: [run() for _ in range(R)], R),
            "after_elementwise_us": us(lambda: [(ew(), run()) for _ in range(R)], R) - us(lambda: [ew() for _ in range(R)], R),
            "kernels": [{"shared": kk.metadata.shared, "regs": kk.n_regs, "carveout_attr": get_attr(kk.function, CARVEOUT),
                         "occupancy": occupancy(kk)} for kk in ks][-3:],
        }
    res[name] = row
    print(name, cfg, json.dumps({md: {a: (round(v, 2) if isinstance(v, float) else v) for a, v in d.items()} for md, d in row.items()}), flush=True)
    for kk in compiled():
        cuda.cuFuncSetAttribute(ctypes.c_void_p(kk.function), CARVEOUT, -1)
    del lin, kern
json.dump(res, open(sys.argv[1], "w"), indent=1)
