"""Diagnosis (session 25): the 70B down projection at M = 8 is 54 us in the verify forward, 45 in the stack."""
import sys
import torch
import torch.nn.functional as F
from benchmarks.bench_quant_linear import make_layer
from benchmarks.profile_decode import profiled

def graphed(fn):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay

@torch.no_grad()
def main():
    dt = torch.float16
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    gu = [make_layer("w4a16", 128, "triton", 8192, 57344, "cuda", seed=i, dtype=dt) for i in range(copies)]
    dn = [make_layer("w4a16", 128, "triton", 28672, 8192, "cuda", seed=i, dtype=dt) for i in range(copies)]
    for m in (1, 8, 16):
        x = torch.randn(m, 8192, device="cuda", dtype=dt)
        h = torch.randn(m, 28672, device="cuda", dtype=dt)
        def chain():
            for a, b in zip(gu, dn):
                g, u = a(x).chunk(2, -1)
                b(F.silu(g) * u)
        def downs():
            for b in dn:
                b(h)
        def pairs():  # down right after gate_up, on a fixed input
            for a, b in zip(gu, dn):
                a(x); b(h)
        for name, fn in (("chain", chain), ("pairs", pairs), ("downs", downs)):
            per = 1 if name == "downs" else 2
            r = profiled(graphed(fn), 5, ("w4a16_kernel", per))
            print(f"M={m} {name}: graph {r['step_ms']:.3f} ms, w4a16 us by position {[round(t, 2) for t in r['by_position_us']]}", flush=True)

main()
