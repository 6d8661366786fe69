import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource

@gluon.jit
def k(x_ptr, BN: gl.constexpr, BM: gl.constexpr, num_warps: gl.constexpr):
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BM, 16])
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=2)
    gl.static_print(gl.to_linear_layout(a_layout, [BN, 16]))
    gl.store(x_ptr + gl.arange(0, 32, layout=gl.BlockedLayout([1], [32], [num_warps], [0])), 0)

for bn, bm, w in ((128, 32, 4), (256, 64, 8)):
    src = GluonASTSource(fn=k, signature={"x_ptr": "*i32", "BN": "constexpr", "BM": "constexpr", "num_warps": "constexpr"},
                         constexprs={"BN": bn, "BM": bm, "num_warps": w})
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": w})
