"""Session 36: the W4A8 dot path built for sm_90 on the CPU (the device's Triton on PYTHONPATH, TRITON_PTXAS_PATH
set): the K loop's instruction mix and its wgmma groups, for three table configs.

    PYTHONPATH=/tmp/t36:. TRITON_PTXAS_PATH=/tmp/ptxas-13.5 python a8_sass.py
"""
import re

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from specbench.quantization.int8_kernel import a8_kernel
from tools.int4_sass import largest_loop, loops, on_cubin, resources

CONFIGS = ((64, 256, 64, 4, 4), (128, 256, 64, 8, 4), (64, 256, 16, 4, 3))  # BN, BK, BM, warps, stages


def build(BN, BK, BM, warps, stages):
    sig = {"xq_ptr": "*i8", "sx_ptr": "*fp32", "w_ptr": "*u8", "ws_ptr": "*fp32", "gs_ptr": "*fp32", "y_ptr": "*bf16",
           "part_ptr": "*fp32", "count_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32", "stride_wn": "i32",
           "stride_ym": "i32"}
    const = dict(BITS=4, GROUP=BK, CHANNEL=True, SPLIT_K=True, GEMV=False, BM=BM, BN=BN, BK=BK, ASM=True, PDL=True,
                 UNEVEN=True)
    sig.update({c: "constexpr" for c in const})
    div = [i for i, name in enumerate(sig) if name.endswith("_ptr") or name in ("N", "K", "stride_wn", "stride_ym")]
    src = ASTSource(fn=a8_kernel, signature=sig, constexprs=const, attrs={(i,): [["tt.divisibility", 16]] for i in div})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": warps, "num_stages": stages, "launch_pdl": True})


for cfg in CONFIGS:
    kernel = build(*cfg)
    sass = on_cubin(kernel, "nvdisasm", "-c")
    mix = largest_loop(sass)
    body = max(loops(sass), key=len)
    groups = " ".join("W" if "DEPBAR" in line else "m" for line in body if re.search(r"IGMMA|WARPGROUP\.DEPBAR", line))
    print(f"BN {cfg[0]} BK {cfg[1]} BM {cfg[2]} warps {cfg[3]} stages {cfg[4]}: {resources(kernel, cfg[3])}; "
          f"loop {sum(mix.values())} instructions, {dict(mix.most_common(30))}; wgmmas (m) and waits (W): {groups}")
