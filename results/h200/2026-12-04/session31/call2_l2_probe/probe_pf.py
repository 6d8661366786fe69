"""One-off: does a W4A16 kernel that prefetches the next weight into L2 make that next kernel faster?"""
import sys, json, torch
from specbench.decoding.graphs import GraphedCall
from specbench.quantization import get_scheme, quantize_rtn
from specbench.quantization.linear import QuantLinear
from specbench.timing.timer import time_calls

def lin(n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return QuantLinear(quantize_rtn(torch.randn(n, k, device="cuda", generator=g, dtype=torch.float16) * .02,
                                    get_scheme("w4a16"), 128, True), None, "triton", torch.float16)

res = {}
for (na, ka), (nb, kb), m, spin_us in [((6144, 4096), (4096, 4096), 1, 20), ((6144, 4096), (4096, 4096), 32, 20),
                                        ((4096, 4096), (28672, 4096), 1, 20), ((14336*2, 4096), (4096, 14336), 1, 20)]:
    pairs = [(lin(na, ka, 2 * i), lin(nb, kb, 2 * i + 1)) for i in range(12)]
    xa = torch.randn(m, ka, device="cuda", dtype=torch.float16); xb = torch.randn(m, kb, device="cuda", dtype=torch.float16)
    cyc = int(spin_us * 1.98e3)
    def run(pf, with_b):
        for a, b in pairs:
            a.kernel.prefetch_next(b.kernel if pf else None, pf)
        def f():
            for a, b in pairs:
                a(xa); torch.cuda._sleep(cyc)
                if with_b: b(xb)
                torch.cuda._sleep(cyc)
        f(); g = GraphedCall(f); g()
        return time_calls(g, "cuda", replays=30, warmup=3).median_ms * 1e3 / len(pairs)
    key = f"{na}x{ka}->{nb}x{kb} M={m}"
    out = {}
    for pf in (0.0, 0.5, 1.0):
        ab, a_only = run(pf, True), run(pf, False)
        out[pf] = {"A+B": ab, "A": a_only, "B": ab - a_only}
    res[key] = out
    print(key, {pf: {k: round(v, 2) for k, v in d.items()} for pf, d in out.items()}, flush=True)
    for a, b in pairs: a.kernel.prefetch_next(None, 0)
    del pairs
json.dump(res, open(sys.argv[1], "w"), indent=1)
