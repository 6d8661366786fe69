"""One-off: is the fused gate/up's 106 µs (70B, M = 16 entry) an occupancy effect of the L1/shared carveout?"""
import ctypes, json, sys
import torch
from specbench.decoding.graphs import GraphedCall
from specbench.quantization import get_scheme, quantize_rtn
from specbench.quantization.linear import QuantLinear
from specbench.quantization import int4_kernel as ik
from specbench.timing.timer import time_calls

cuda = ctypes.CDLL("libcuda.so.1")

def attr(fn, a):
    v = ctypes.c_int()
    return v.value if cuda.cuFuncGetAttribute(ctypes.byref(v), a, ctypes.c_void_p(fn)) == 0 else None

def occ(k):
    n = ctypes.c_int()
    cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), ctypes.c_void_p(k.function), 32 * k.metadata.num_warps, k.metadata.shared)
    return n.value

def us(fn, n):
    fn(); g = GraphedCall(fn); g()
    return time_calls(g, "cuda", replays=20, warmup=3).median_ms * 1e3 / n

layers = {}
for fuse in (False, True):
    out = []
    for j in range(4):
        g = torch.Generator(device="cuda").manual_seed(j)
        q = QuantLinear(quantize_rtn(torch.randn(57344, 8192, device="cuda", generator=g, dtype=torch.float16) * .02,
                                     get_scheme("w4a16"), 128, True), None, "triton", torch.float16)
        if fuse:
            assert q.fuse_silu_mul()
        out.append(q)
    layers[fuse] = out
x = torch.randn(16, 8192, device="cuda", dtype=torch.float16)
res = {}
for carve in (None, 100):
    for fuse in (False, True):
        [l(x) for l in layers[fuse]]
        torch.cuda.synchronize()
        ks = [k for c in ik.w4a16_kernel.device_caches.values() for k in c[0].values() if getattr(k, "function", None)]
        if carve is not None:
            for k in ks:
                cuda.cuFuncSetAttribute(ctypes.c_void_p(k.function), 9, carve)
        t = us(lambda: [l(x) for l in layers[fuse]], 4)
        info = [{"shared": k.metadata.shared, "regs": k.n_regs, "occ": occ(k), "carveout": attr(k.function, 9)} for k in ks]
        res[f"carveout {carve} fused {fuse}"] = {"us": t, "kernels": info}
        print("carveout", carve, "fused", fuse, round(t, 1), info, flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)
