"""One-off: how fast is a W4A16 kernel whose weight is already in L2 (the same kernel run just before)?"""
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
for (n, k) in [(6144, 4096), (4096, 4096), (4096, 14336), (28672, 4096)]:
    layers = [lin(n, k, i) for i in range(12)]
    for m in (1, 32):
        x = torch.randn(m, k, device="cuda", dtype=torch.float16)
        cyc = int(10 * 1.98e3)
        def t(times):
            def f():
                for l in layers:
                    for _ in range(times): l(x)
                    torch.cuda._sleep(cyc)
            f(); g = GraphedCall(f); g()
            return time_calls(g, "cuda", replays=30, warmup=3).median_ms * 1e3 / len(layers)
        one, two, three = t(1), t(2), t(3)
        res[f"{n}x{k} M={m}"] = {"cold": one - (three - two) * 0 - (two - one) * 0, "first_us_plus_spin": one,
                                 "second_us": two - one, "third_us": three - two}
        print(n, k, m, "cold+spin", round(one, 2), "warm", round(two - one, 2), round(three - two, 2), flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)
