"""One-off: the attention partial kernel with and without STORE, compiled for sm_90 on the CPU (Triton 3.9)."""
import re
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from specbench.model.attention import _partial_kernel
from tools.int4_sass import on_cubin, resources

ptrs = ["q_ptr", "k_ptr", "v_ptr", "mask_ptr", "order_ptr", "count_ptr", "cos_ptr", "sin_ptr", "m_ptr", "l_ptr", "acc_ptr",
        "new_k_ptr", "new_v_ptr", "slots_ptr"]
types = ["*bf16"] * 3 + ["*i1", "*i32", "*i32", "*bf16", "*bf16", "*fp32", "*fp32", "*fp32", "*bf16", "*bf16", "*i64"]
ints = ["n", "S"]
rest = ["sq_h", "sq_n", "sk_h", "sk_s", "sm_n", "sm_s", "snk_h", "snk_n", "snv_h", "snv_n"]
for store in (False, True):
    for group, bm, warps in ((8, 64, 4), (4, 64, 4), (4, 16, 4)):
        sig = {**dict(zip(ptrs, types)), "n": "i32", "S": "i32", "scale": "fp32", **{r: "i32" for r in rest}}
        const = dict(GROUP=group, D=128, BLOCK_M=bm, BLOCK_N=64, SPLITS=16, ROPE=True, STORE=store, TB=16)
        sig.update({c: "constexpr" for c in const})
        div = [i for i, name in enumerate(sig) if name in ptrs or name in ("S", "sq_h", "sq_n", "sk_h", "sk_s", "snk_n", "snv_n", "snk_h", "snv_h")]
        src = ASTSource(fn=_partial_kernel, signature=sig, constexprs=const, attrs={(i,): [["tt.divisibility", 16]] for i in div})
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 2})
        sass = on_cubin(k, "nvdisasm", "-c")
        lines = [l for l in sass.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", l)]
        bar = [i for i, l in enumerate(lines) if "BAR.SYNC" in l]
        first_ldg = [i for i, l in enumerate(lines) if re.search(r"LDG|LDGSTS", l)]
        print(f"STORE={store} group={group} BM={bm}: {resources(k, warps)}, {len(lines)} instructions, BAR at {bar[:4]}, "
              f"first loads at {first_ldg[:3]}, STG {sum('STG' in l for l in lines)}")
        if store and group == 8:
            ev = [(i, re.search(r"(STG\S*|BAR\.SYNC\S*|LDGSTS\S*|LDG\S*|BRA|EXIT|LDS\S*|STS\S*|HGMMA\S*|HMMA\S*)", l).group(1)) for i, l in enumerate(lines) if re.search(r"STG|BAR\.SYNC|LDGSTS|LDG|BRA|EXIT|HGMMA|HMMA", l)]
            print(" ".join(f"{i}:{o}" for i, o in ev))
