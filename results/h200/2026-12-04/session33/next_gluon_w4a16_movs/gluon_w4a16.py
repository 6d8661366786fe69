"""Prototype (sessions 32-33, not run on a GPU): a W4A16 g128 kernel in Gluon whose dequantization overlaps the wgmma.

Triton 3.6's pipeliner waits for each register-operand wgmma before the next K step (``int4_kernel``'s docstring),
so the committed kernel dequantizes and multiplies in turn; at M = 32-64 that is where T(M)/T(1) goes (#15). Gluon
lets the kernel keep one K step's wgmmas in flight while it dequantizes the next:

- y.T = W x.T per program: a [BN, BM] float32 accumulator in the wgmma layout (four or eight warps, 16 rows of BN a
  warp, BM the instruction's N, 16-64), over the program's share of K (``SPLIT`` programs per output tile store their
  partials into a float32 workspace, and the last program of the tile, by an atomic counter it resets, sums them).
- The packed words of a K step (specbench's ``blocked`` storage: 16 words per column per 128 inputs) and its scales
  come through a ``STAGES``-deep cp.async ring in shared memory, read back straight in the wgmma A-operand layout
  (``DotOperandLayout``, two K-adjacent values per register). Nibble plane j of them, made by
  ``int4_convert.pair_asm`` (16 values in 32 instructions, the scale applied), already is the A operand of the 16
  inputs 16j..16j+15 of the 128-block: no shuffle.
- x's 128 inputs of the step go to shared memory as one [BM, 128] tile (128-byte swizzle); the B operand of plane j
  is a transposed view of its 16 columns. (Eight [BM, 16] tiles took nine barriers a K step, this one two.)
- Plane j is copied (one ``mov`` a register) just before its wgmma, and after the wgmma at most seven stay in
  flight: so plane j's copy is written only once step i - 1's wgmma j is done, and after step i's last wgmma all of
  step i - 1's are, so its x buffer is free again (two alternate).
- That copy is what keeps the registers of wgmmas in flight apart, and only ptxas 13.3 or later does so (session 33:
  without it, or with Triton 3.6's bundled ptxas 12.8, the next step's dequantization wrote the registers of up to
  seven wgmmas in flight; ``tools.wgmma_hazards`` finds such writes, ``--compile-only`` prints their count). The
  kernel refuses to run with an older ptxas: set ``TRITON_PTXAS_PATH`` to one from the ``nvidia-cuda-nvcc`` wheel.
- ptxas serializes the wgmmas where it cannot pipeline them, and says so (C7511-C7515 in ``ptxas -v``). Two things
  made it serialize: the accumulator converted to 16 bits straight from the wgmma layout (it leaves through a layout
  conversion), and a run-time K (the loop's zero-trip exit copies the accumulator; K is a constexpr, one build per K).

    python gluon_w4a16.py --compile-only     # build for sm_90 on the CPU (Triton 3.6: PYTHONPATH=<triton 3.6 dir>);
                                             # registers, serialized wgmmas, early writes to their registers
    python gluon_w4a16.py OUT.json           # GPU: agreement with the committed kernel, and µs against it
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

from specbench.quantization.int4_convert import pair_asm

ASM_FP16: gl.constexpr = gl.constexpr(pair_asm("fp16", scale=True))
ASM_BF16: gl.constexpr = gl.constexpr(pair_asm("bf16", scale=True))
CONSTRAINTS: gl.constexpr = gl.constexpr("=r," * 8 + "r,r,r,r")


@gluon.jit
def _planes(words, zoff, scale, BF16: gl.constexpr):
    d = zoff.dtype
    return gl.inline_asm_elementwise(ASM_BF16 if BF16 else ASM_FP16, CONSTRAINTS, [words, zoff, scale],
                                     dtype=(d, d, d, d, d, d, d, d), is_pure=True, pack=2)


@gluon.jit
def w4a16_wgmma_kernel(x_ptr, w_ptr, s_ptr, z_ptr, y_ptr, part_ptr, count_ptr, M, N, stride_xm, stride_ym,
                       K: gl.constexpr, BN: gl.constexpr, BM: gl.constexpr, SPLIT: gl.constexpr,
                       HAS_ZEROS: gl.constexpr, BF16: gl.constexpr, STAGES: gl.constexpr, num_warps: gl.constexpr,
                       X_RING: gl.constexpr = False):
    pid_n = gl.program_id(0)
    pid_m = gl.program_id(1)
    pid_k = gl.program_id(2)
    sixteen: gl.constexpr = gl.bfloat16 if BF16 else gl.float16
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                  instr_shape=[16, BM, 16])
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=2)
    x_layout: gl.constexpr = gl.BlockedLayout([1, 8], [2, 16], [num_warps, 1], [1, 0])
    x_shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    # two buffers of a step's 128 inputs, stored by the threads; or (X_RING, session 35) STAGES + 1 filled by cp.async
    # with the weights: step i refills the buffer of step i - 2, whose wgmmas are all done (the loop's comments)
    XS: gl.constexpr = STAGES + 1 if X_RING else 2
    x_smem = gl.allocate_shared_memory(sixteen, [XS, BM, 128], x_shared)

    # the packed words and scales of STAGES K steps in flight: a cp.async ring, read back in the A-operand layout
    w_shared: gl.constexpr = gl.SwizzledSharedLayout(vec=2, per_phase=1, max_phase=8, order=[1, 0])
    s_shared: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    w_smem = gl.allocate_shared_memory(gl.int32, [STAGES, BN, 16], w_shared)
    s_smem = gl.allocate_shared_memory(sixteen, [STAGES, BN], s_shared)
    z_smem = gl.allocate_shared_memory(sixteen, [STAGES if HAS_ZEROS else 1, BN], s_shared)  # zero points, if any
    copy_layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [num_warps, 1], [1, 0])  # 16 bytes a thread
    s_copy_layout: gl.constexpr = gl.BlockedLayout([8], [32], [num_warps], [0])
    copy_cols = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, copy_layout))
    copy_words = w_ptr + copy_cols[:, None] * 16 + gl.arange(0, 16, layout=gl.SliceLayout(0, copy_layout))[None, :]
    copy_ok = (copy_cols < N)[:, None]
    s_cols = pid_n * BN + gl.arange(0, BN, layout=s_copy_layout)
    s_ok = s_cols < N

    xrows = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, x_layout))
    xk = gl.arange(0, 128, layout=gl.SliceLayout(0, x_layout))
    x_rows = x_ptr + xrows[:, None] * stride_xm + xk[None, :]
    x_ok = (xrows < M)[:, None]

    steps = K // 128 // SPLIT
    first = pid_k * steps
    off: gl.constexpr = 128.0 if BF16 else 1024.0
    zoff = gl.full([BN, 16], off + 8.0, sixteen, layout=a_layout)  # off + 8: symmetric codes
    for t in gl.static_range(STAGES - 1):
        cp.async_copy_global_to_shared(w_smem.index(t), copy_words + (first + t) * N * 16, mask=copy_ok & (t < steps))
        cp.async_copy_global_to_shared(s_smem.index(t), s_ptr + (first + t) * N + s_cols, mask=s_ok & (t < steps))
        if HAS_ZEROS:
            cp.async_copy_global_to_shared(z_smem.index(t), z_ptr + (first + t) * N + s_cols, mask=s_ok & (t < steps))
        if X_RING:
            cp.async_copy_global_to_shared(x_smem.index(t), x_rows + (first + t) * 128, mask=x_ok & (t < steps))
        cp.commit_group()
    acc = gl.zeros([BN, BM], gl.float32, layout=mma)
    for i in range(steps):
        kb = first + i
        cp.wait_group(STAGES - 2)  # step i's copies are in; a barrier makes every thread's visible, and it also says
        gl.thread_barrier()        # that all threads are past step i - 1, whose slot the next copy refills
        slot = i % STAGES
        words = w_smem.index(slot).load(a_layout)
        scale = s_smem.index(slot).load(gl.SliceLayout(1, a_layout))
        if HAS_ZEROS:  # off + z, exact in 16 bits
            z = z_smem.index(slot).load(gl.SliceLayout(1, a_layout)).to(gl.float32) + off
            zoff = gl.broadcast(z.to(sixteen)[:, None], zoff)[0]
        ahead = i + STAGES - 1
        refill = (i + STAGES - 1) % STAGES
        cp.async_copy_global_to_shared(w_smem.index(refill), copy_words + (first + ahead) * N * 16,
                                       mask=copy_ok & (ahead < steps))
        cp.async_copy_global_to_shared(s_smem.index(refill), s_ptr + (first + ahead) * N + s_cols,
                                       mask=s_ok & (ahead < steps))
        if HAS_ZEROS:
            cp.async_copy_global_to_shared(z_smem.index(refill), z_ptr + (first + ahead) * N + s_cols,
                                           mask=s_ok & (ahead < steps))
        if X_RING:  # into step i - 2's buffer
            cp.async_copy_global_to_shared(x_smem.index(ahead % XS), x_rows + (first + ahead) * 128,
                                           mask=x_ok & (ahead < steps))
        cp.commit_group()
        if X_RING:
            x_buf = x_smem.index(i % XS)
        else:
            x_buf = x_smem.index(i % 2)  # the wgmmas of step i - 2 read this buffer; step i - 1's wait saw them done
            x_buf.store(gl.load(x_rows + kb * 128, mask=x_ok, other=0.0))
        fence_async_shared()
        p = _planes(words, zoff, gl.broadcast(scale[:, None], zoff)[0], BF16)
        for j in gl.static_range(8):  # plane j copied after step i - 1's wgmma j is done (docstring)
            a = gl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [p[j]], dtype=p[j].dtype, is_pure=False, pack=2)
            acc = warpgroup_mma(a, x_buf.slice(16 * j, 16, dim=1).permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=7, deps=(acc,))
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))

    out_layout: gl.constexpr = gl.BlockedLayout([8, 1], [16, 2], [1, num_warps], [0, 1])  # [BN, BM], columns of y contiguous
    out = gl.convert_layout(acc, out_layout)
    out_cols = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, out_layout))
    out_rows = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(0, out_layout))
    where = y_ptr + out_rows[None, :] * stride_ym + out_cols[:, None]
    ok = (out_rows < M)[None, :] & (out_cols < N)[:, None]
    if SPLIT == 1:
        gl.store(where, out.to(y_ptr.dtype.element_ty), mask=ok)
    else:  # each split stores its partial; the last of the tile's programs (a counter it resets) sums them
        tile = pid_m * gl.num_programs(0) + pid_n
        part = part_ptr + out_rows[None, :] * N + out_cols[:, None]
        gl.store(part + pid_k * M * N, out, mask=ok)
        done = gl.atomic_add(count_ptr + tile, 1, sem="acq_rel")
        if done == SPLIT - 1:
            total = gl.zeros([BN, BM], gl.float32, layout=out_layout)
            for other in gl.static_range(SPLIT):
                total += gl.load(part + other * M * N, mask=ok, other=0.0, cache_modifier=".cg")
            gl.store(where, total.to(y_ptr.dtype.element_ty), mask=ok)
            gl.atomic_xchg(count_ptr + tile, 0)


def launch(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor | None,
           counters: torch.Tensor, bn: int = 128, split: int = 1, warps: int = 4, stages: int = 4,
           x_ring: bool = False) -> torch.Tensor:
    """``x @ W.T`` for a g128 W4A16 weight in the committed kernel's storage (``Int4Triton.pack``: packed words,
    scales and zero points or None); ``counters`` int32 zeros, one per output tile with a K split, left zero."""
    m, k = x.shape
    n = packed.shape[1]
    bm = max(16, triton.next_power_of_2(m))
    if k % (128 * split) or bm > 64 or bn % (16 * warps):
        raise ValueError(f"K={k} split {split}, M={m}, BN={bn}, {warps} warps: K must be whole 128-blocks per split, "
                         "M <= 64, BN a multiple of 16 rows a warp")
    grid = (triton.cdiv(n, bn), triton.cdiv(m, bm), split)
    if split > 1 and counters.numel() < grid[0] * grid[1]:
        raise ValueError(f"{counters.numel()} split-K counters, {grid[0] * grid[1]} needed")
    y = torch.empty(m, n, device=x.device, dtype=x.dtype)
    part = torch.empty(split, m, n, device=x.device, dtype=torch.float32) if split > 1 else y
    w4a16_wgmma_kernel[grid](
        x, packed, scales, scales if zeros is None else zeros, y, part, counters, m, n, x.stride(0), y.stride(0),
        K=k, BN=bn, BM=bm, SPLIT=split, HAS_ZEROS=zeros is not None, BF16=x.dtype == torch.bfloat16, STAGES=stages,
        num_warps=warps, X_RING=x_ring)
    return y


def compile_sm90(bm: int, bn: int, split: int, bf16: bool = False, warps: int = 4, stages: int = 4, k: int = 8192,
                 zeros: bool = False, x_ring: bool = False):
    """The kernel built for sm_90 without a GPU; returns the compiled kernel."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    act = "bf16" if bf16 else "fp16"
    sig = {"x_ptr": f"*{act}", "w_ptr": "*i32", "s_ptr": f"*{act}", "z_ptr": f"*{act}", "y_ptr": f"*{act}",
           "part_ptr": "*fp32", "count_ptr": "*i32", "M": "i32", "N": "i32", "stride_xm": "i32", "stride_ym": "i32",
           "K": "constexpr", "BN": "constexpr", "BM": "constexpr", "SPLIT": "constexpr", "HAS_ZEROS": "constexpr",
           "BF16": "constexpr", "STAGES": "constexpr", "num_warps": "constexpr", "X_RING": "constexpr"}
    const = {"K": k, "BN": bn, "BM": bm, "SPLIT": split, "HAS_ZEROS": zeros, "BF16": bf16, "STAGES": stages,
             "num_warps": warps, "X_RING": x_ring}
    divisible = [i for i, name in enumerate(sig) if name.endswith("_ptr") or name in ("N", "stride_xm", "stride_ym")]
    src = GluonASTSource(fn=w4a16_wgmma_kernel, signature=sig, constexprs=const,
                         attrs={(i,): [["tt.divisibility", 16]] for i in divisible})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 1})


def ptxas_report(kernel) -> str:
    """ptxas -v (the one Triton uses) on the kernel's PTX: its registers, any note that it serialized the wgmmas, and
    the writes to a wgmma's registers while it may be in flight in the cubin Triton built."""
    import os
    import subprocess
    import tempfile

    from triton import knobs

    from tools.int4_sass import on_cubin
    from tools.wgmma_hazards import early_writes, loops

    with tempfile.TemporaryDirectory() as tmp:
        ptx = os.path.join(tmp, "k.ptx")
        open(ptx, "w").write(kernel.asm["ptx"])
        out = subprocess.run([knobs.nvidia.ptxas.path, "-arch=sm_90a", "-v", ptx, "-o", os.path.join(tmp, "k.cubin")],
                             capture_output=True, text=True)
    lines = (out.stdout + out.stderr).splitlines()
    early = sum(len(early_writes(body)) for body in loops(on_cubin(kernel, "nvdisasm", "-c")))
    return "; ".join([line.split("ptxas info    : ")[-1] for line in lines if "C75" in line or "Used" in line]
                     + [f"ptxas {knobs.nvidia.ptxas.version}, {early} early writes"])


def check_ptxas() -> None:
    """Refuse a ptxas that lets the next K step write the registers of wgmmas in flight (before CUDA 13.3)."""
    from triton import knobs

    version = tuple(int(v) for v in knobs.nvidia.ptxas.version.split(".")[:2])
    if version < (13, 3):
        raise RuntimeError(f"ptxas {knobs.nvidia.ptxas.version} ({knobs.nvidia.ptxas.path}) may overwrite the "
                           "registers of wgmmas in flight; set TRITON_PTXAS_PATH to ptxas 13.3 or later (the "
                           "nvidia-cuda-nvcc wheel's nvidia/cu13/bin/ptxas)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--compile-only", action="store_true")
    args = parser.parse_args(argv)
    if args.compile_only:
        for bm, bn, split, warps, zeros in [(16, 128, 1, 4, False), (32, 128, 2, 4, False), (64, 128, 1, 4, False),
                                            (64, 64, 4, 4, False), (16, 256, 1, 8, False), (32, 256, 1, 8, False),
                                            (64, 256, 1, 8, False), (32, 128, 4, 8, False), (32, 128, 2, 4, True),
                                            (64, 256, 1, 8, True)]:
            kernel = compile_sm90(bm, bn, split, warps=warps, zeros=zeros)
            print(f"BM {bm} BN {bn} split {split} warps {warps}{' zero points' if zeros else ''}:",
                  ptxas_report(kernel), flush=True)
        return
    check_ptxas()
    from specbench.decoding.graphs import GraphedCall
    from specbench.quantization import get_scheme, quantize_rtn
    from specbench.quantization.linear import QuantLinear
    from specbench.timing.timer import time_calls

    shapes = {"70b_qkv": (10240, 8192), "70b_o": (8192, 8192), "70b_gate_up": (57344, 8192), "70b_down": (8192, 28672),
              "8b_qkv": (6144, 4096), "8b_o": (4096, 4096), "8b_gate_up": (28672, 4096), "8b_down": (4096, 14336)}
    rows = []
    counters = torch.zeros(4096, dtype=torch.int32, device="cuda")
    for name, (n, k) in shapes.items():
        copies = max(2, min(32, -(-200_000_000 // (n * k // 2))))  # 200 MB of weights a graph: past L2
        layers = [QuantLinear(quantize_rtn(torch.randn(n, k, device="cuda", dtype=torch.float16) * 0.02,
                                           get_scheme("w4a16"), 128, True), None, "triton", torch.float16)
                  for _ in range(copies)]
        # zero points and bf16, checked once a shape (M = 32, BN 128, 4 warps, no split) against the reference backend
        qz = quantize_rtn(torch.randn(n, k, device="cuda") * 0.02, get_scheme("w4a16"), 128, False)
        for dtype in (torch.float16, torch.bfloat16):
            xz = torch.randn(32, k, device="cuda").to(dtype)
            ref_z = QuantLinear(qz, None, "reference", torch.float32)(xz.float())
            kz = QuantLinear(qz, None, "triton", dtype).kernel
            try:
                got = launch(xz, kz.packed, kz.scales, kz.zeros, counters, 128, 1, 4).float()
                print(json.dumps({"shape": name, "zero_points": str(dtype),
                                  "rel_err": ((got - ref_z).norm() / ref_z.norm()).item()}), flush=True)
            except Exception as e:
                print(json.dumps({"shape": name, "zero_points": str(dtype), "error": str(e)[:300]}), flush=True)
        for m in (1, 16, 32, 64):
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            ref = layers[0](x).float()
            row = {"shape": name, "M": m, "copies": copies}
            for bn, warps in ((128, 4), (128, 8), (256, 8)):
                for split in (1, 2, 4, 8):
                    if k % (128 * split) or (n // bn) * split > 4 * 132 or (n // bn) * split < 66:
                        continue
                    label = f"gluon_bn{bn}_w{warps}_s{split}"
                    try:
                        got = launch(x, layers[0].kernel.packed, layers[0].kernel.scales, None, counters, bn, split,
                                     warps).float()
                        err = ((got - ref).norm() / ref.norm()).item()
                        fn = lambda: [launch(x, q.kernel.packed, q.kernel.scales, None, counters, bn,  # noqa: E731
                                             split, warps) for q in layers]
                        fn()
                        graph = GraphedCall(fn)
                        graph()
                        us = time_calls(graph, "cuda", replays=20, warmup=3).median_ms * 1e3 / copies
                        row[label] = {"us": round(us, 2), "rel_err": err}
                    except Exception as e:  # a prototype: record what failed and go on
                        row[label] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            fn = lambda: [q(x) for q in layers]  # noqa: E731
            fn()
            graph = GraphedCall(fn)
            graph()
            row["committed_us"] = round(time_calls(graph, "cuda", replays=20, warmup=3).median_ms * 1e3 / copies, 2)
            print(json.dumps(row), flush=True)
            rows.append(row)
        del layers
        torch.cuda.empty_cache()
    if args.out:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                   "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
