"""Diagnosis (session 25): the 70B model's own down projections timed alone at M = 1 / 8 against fresh layers."""
import torch
from benchmarks.bench_quant_linear import make_layer
from benchmarks.profile_decode import profiled
from specbench.config import EngineConf, ModelConf, QuantConf
from specbench.engine import Engine

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
    engine = Engine(EngineConf(), device="cuda", dtype=dt, max_seq_len=512)
    model = engine.model(ModelConf("llama-3-70b-instruct", shape_only=True, overrides={"num_hidden_layers": 24}),
                         QuantConf("w4a16", "auto"))
    mine = [layer.mlp.down_proj if hasattr(layer.mlp, "down_proj") else layer.mlp.down for layer in model.model.layers]
    fresh = [make_layer("w4a16", 128, "triton", 28672, 8192, "cuda", seed=i, dtype=dt) for i in range(24)]
    k0, k1 = mine[0].kernel, fresh[0].kernel
    for name, k in ():
        print(name, type(k).__name__, k.packed.shape, k.packed.stride(), k.packed.dtype, k.scales.shape,
              k.scales.stride(), k.scales.dtype, None if k.zeros is None else k.zeros.shape, k.packed.data_ptr() % 256)
        print("  codes histogram", torch.bincount((k.packed[:4].flatten() & 15).long(), minlength=16).tolist(),
              "scales", k.scales.float().abs().mean().item(), k.scales.float().std().item())
    for m in (1, 8):
        for fill in ("randn", "zeros", "1e4", "inf", "nan", "1e-7"):
            x = torch.randn(m, 28672, device="cuda", dtype=dt)
            if fill != "randn":
                x.fill_(float(fill) if fill != "zeros" else 0.0)
            r = profiled(graphed(lambda: [l(x) for l in mine]), 5, ("w4a16_kernel", 1))
            print(f"M={m} x={fill}: {r['by_position_us'][0]:.2f} us", flush=True)

main()
