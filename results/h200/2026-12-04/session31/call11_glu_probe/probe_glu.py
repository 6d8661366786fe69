"""One-off: the fused gate/up (silu(gate) * up in its epilogue) against gate/up + SiLU * up, alone and before down."""
import json, sys
import torch
import torch.nn.functional as F
from specbench.decoding.graphs import GraphedCall
from specbench.quantization import get_scheme, quantize_rtn
from specbench.quantization.linear import QuantLinear
from specbench.timing.timer import time_calls

def lin(n, k, seed, fuse=False):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = QuantLinear(quantize_rtn(torch.randn(n, k, device="cuda", generator=g, dtype=torch.float16) * .02,
                                 get_scheme("w4a16"), 128, True), None, "triton", torch.float16)
    if fuse:
        assert q.fuse_silu_mul()
    return q

def us(fn, n):
    fn(); g = GraphedCall(fn); g()
    return time_calls(g, "cuda", replays=20, warmup=3).median_ms * 1e3 / n

res = {}
for model, h, i, L in (("70b", 8192, 28672, 6), ("8b", 4096, 14336, 16)):
    plain = [lin(2 * i, h, 2 * j) for j in range(L)]
    fused = [lin(2 * i, h, 2 * j, True) for j in range(L)]
    down = [lin(h, i, 2 * j + 1) for j in range(L)]
    for m in (1, 8, 16, 31):
        x = torch.randn(m, h, device="cuda", dtype=torch.float16)
        def plain_mlp():
            for gu, d in zip(plain, down):
                g, u = gu(x).chunk(2, dim=-1)
                d(F.silu(g) * u)
        def fused_mlp():
            for gu, d in zip(fused, down):
                d(gu(x))
        r = {"gate_up plain": us(lambda: [gu(x) for gu in plain], L), "gate_up fused": us(lambda: [gu(x) for gu in fused], L),
             "mlp plain": us(plain_mlp, L), "mlp fused": us(fused_mlp, L),
             "configs": {"plain": plain[0].kernel.config(m)[0], "fused": fused[0].kernel.config(m)[0]}}
        res[f"{model} M={m}"] = r
        print(model, m, {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items() if k != "configs"}, r["configs"]["fused"], flush=True)
    del plain, fused, down
    torch.cuda.empty_cache()
json.dump(res, open(sys.argv[1], "w"), indent=1)
