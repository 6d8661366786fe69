import argparse, itertools
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from specbench.quantization import kernel_table as kt
from specbench.quantization.int8_kernel import a8_kernel
from specbench.wgmma_guard import early_writes, loops
from tools.int4_sass import compile_sm90, on_cubin
from tools.wgmma_hazards import DIVISIBLE
seen = {}
bad = 0
for (n, k), group, m in itertools.product([(6144, 4096), (4096, 14336), (57344, 8192), (4608, 3584), (3584, 18944)], (128, -1), (1, 2, 16, 31, 64, 100)):
    g = k if group == -1 else group
    c = kt.heuristic(n, k, g, m, hopper=True)
    for fp16, zeros in ((True, False), (False, False), (True, True)):
        key = (c.BN, c.BM, c.DEQ, c.warps, c.stages, c.uneven, c.split > 1, group == -1, fp16, zeros)
        if key in seen: continue
        a = argparse.Namespace(fp16=fp16, channel=group == -1, zeros=zeros, whole_k=c.split == 1, gemv=False, BM=c.BM, BN=c.BN,
                               BK=c.BK, deq=c.DEQ, uneven=c.uneven, scales_ahead=False, warps=c.warps, stages=c.stages)
        kern = compile_sm90(a)
        w = [x for b in loops(on_cubin(kern, "nvdisasm", "-c")) for x in early_writes(b)]
        seen[key] = len(w); bad += bool(w)
        print("w4a16", key, len(w), flush=True)
for (n, k), m, bits in itertools.product([(6144, 4096), (4096, 14336), (4608, 3584)], (2, 16, 64), (8, 4)):
    c = kt.heuristic_a8(n, k, k, m, bits, hopper=True)
    const = dict(BITS=bits, GROUP=c.BK, CHANNEL=True, SPLIT_K=c.split > 1, GEMV=False, BM=c.BM, BN=c.BN, BK=c.BK, ASM=True, PDL=False, UNEVEN=bool(c.uneven))
    key = tuple(sorted(const.items())) + (c.warps, c.stages)
    if key in seen: continue
    sig = {"xq_ptr": "*i8", "sx_ptr": "*fp32", "w_ptr": "*i8", "ws_ptr": "*fp32", "gs_ptr": "*fp32", "y_ptr": "*fp16", "part_ptr": "*fp32", "count_ptr": "*i32",
           **{nm: "i32" for nm in ("M", "N", "K", "stride_wn", "stride_ym")}, **{nm: "constexpr" for nm in const}}
    div = [i for i, nm in enumerate(sig) if nm.endswith("_ptr") or nm in DIVISIBLE]
    src = ASTSource(fn=a8_kernel, signature=sig, constexprs=const, attrs={(i,): [["tt.divisibility", 16]] for i in div})
    kern = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": c.warps, "num_stages": c.stages})
    w = [x for b in loops(on_cubin(kern, "nvdisasm", "-c")) for x in early_writes(b)]
    seen[key] = len(w); bad += bool(w)
    print("a8", bits, c, len(w), flush=True)
print("builds", len(seen), "with early writes", bad)
