"""Session 36: the W4A8 gemv path (M = 1) built for sm_90 on the CPU: loop mix and global-load widths (as a8_sass.py)."""
import re, collections
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from specbench.quantization.int8_kernel import a8_kernel
from tools.int4_sass import largest_loop, loops, on_cubin, resources
for BN, BK, warps in ((16, 1024, 4), (32, 1024, 8), (16, 2048, 8)):
    sig = {"xq_ptr": "*i32", "sx_ptr": "*fp32", "w_ptr": "*i32", "ws_ptr": "*fp32", "gs_ptr": "*fp32", "y_ptr": "*bf16",
           "part_ptr": "*fp32", "count_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32", "stride_wn": "i32", "stride_ym": "i32"}
    const = dict(BITS=4, GROUP=BK, CHANNEL=True, SPLIT_K=False, GEMV=True, BM=1, BN=BN, BK=BK, ASM=True, PDL=True, UNEVEN=False)
    sig.update({c: "constexpr" for c in const})
    div = [i for i, name in enumerate(sig) if name.endswith("_ptr") or name in ("N", "K", "stride_wn", "stride_ym")]
    k = triton.compile(ASTSource(fn=a8_kernel, signature=sig, constexprs=const, attrs={(i,): [["tt.divisibility", 16]] for i in div}),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 2, "launch_pdl": True})
    sass = on_cubin(k, "nvdisasm", "-c")
    mix = largest_loop(sass)
    ldg = collections.Counter(m.group(1) for m in re.finditer(r"(LDG\.E[\.\w]*)", sass))
    print(BN, BK, warps, resources(k, warps), "loop", sum(mix.values()), dict(mix.most_common(6)), dict(ldg))
