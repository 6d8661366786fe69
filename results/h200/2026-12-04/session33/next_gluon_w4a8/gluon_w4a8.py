"""Prototype (session 33, not run on a GPU): a W4A8 per-channel kernel in Gluon whose nibble moves overlap the wgmma.

The committed W4A8 kernel (``int8_kernel``, dot path) waits for each K step's int8 wgmmas before the next step
(``DEPBAR.LE gsb0, 0x0``), so at M = 64 its T(M)/T(1) is x1.36 against #15's 1.3. This one keeps them in flight:

- y.T = W x.T per program: a [BN, BM] int32 accumulator in the wgmma layout (int8 instructions of K = 32), over the
  program's share of K; scaled once at the end by the channel scale (``triton_a8.pack``: / 16) and the token scales.
  With a K split, each program stores its scaled partial and the last of the tile (a counter it resets) sums them.
- The weight bytes of a K step of 128 inputs (``triton_a8.pack``: uint8 [N, K/2], input 2i in the low nibble, 2i + 1
  in the high one) come through a ``STAGES``-deep cp.async ring, as two [BN, 32] chunks, read back in the int8 wgmma
  A-operand layout (four K-adjacent bytes a register). A chunk's low nibbles moved to the top of their bytes (16 x
  code: a shift and a mask per four) are the A operand against 32 even activations, its high nibbles (a mask) against
  the matching 32 odd ones (``act_quant_kernel``'s even-odd order). Four wgmmas a step.
- The activations of a step go to shared memory as four [BM, 32] tiles (even/odd x two chunks), two sets
  alternating; each wgmma's B operand is a transposed view of one (K-major, as int8 wgmmas require).
- Each A operand is copied (one ``mov`` a register) just before its wgmma, and each wgmma is followed by a wait that
  leaves at most three in flight, so a copy is written only once the previous step's matching wgmma is done. ptxas
  13.3 or later keeps those copies apart (``tools.wgmma_hazards``); older ones do not, so ``main`` refuses them.

    python gluon_w4a8.py --compile-only     # sm_90 builds on the CPU: registers, serialization, early writes
    python gluon_w4a8.py --interpret        # the kernel's source on the CPU (results/.../gluon_interpret.py)
    python gluon_w4a8.py OUT.json [--ring]  # GPU: agreement with the committed kernel, and µs against it
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

LOW = "{ .reg .b32 t; shl.b32 t, $1, 4; and.b32 $0, t, 0xF0F0F0F0; }"  # as int8_kernel._top_nibbles
HIGH = "and.b32 $0, $1, 0xF0F0F0F0;"
MOV = "mov.b32 $0, $1;"
LOW_ASM: gl.constexpr = gl.constexpr(LOW)
HIGH_ASM: gl.constexpr = gl.constexpr(HIGH)
COPY: gl.constexpr = gl.constexpr(MOV)


@gluon.jit
def _operand(b, ASM: gl.constexpr):
    """A copy of 16 x the nibbles ``ASM`` picks of int8 bytes ``b``, made just before its wgmma."""
    t = gl.inline_asm_elementwise(ASM, "=r,r", [b], dtype=gl.int8, is_pure=True, pack=4)
    return gl.inline_asm_elementwise(COPY, "=r,r", [t], dtype=gl.int8, is_pure=False, pack=4)


@gluon.jit
def w4a8_wgmma_kernel(xq_ptr, sx_ptr, w_ptr, ws_ptr, y_ptr, part_ptr, count_ptr, M, N, stride_wn, stride_ym,
                      K: gl.constexpr, BN: gl.constexpr, BM: gl.constexpr, SPLIT: gl.constexpr,
                      STAGES: gl.constexpr, num_warps: gl.constexpr, X_RING: gl.constexpr = False):
    pid_n = gl.program_id(0)
    pid_m = gl.program_id(1)
    pid_k = gl.program_id(2)
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                  instr_shape=[16, BM, 32])
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=4)
    x_layout: gl.constexpr = gl.BlockedLayout([1, 16], [16, 2], [num_warps, 1], [1, 0])
    x_shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=8, rank=2)
    # sets of a step's four x tiles (even/odd x two chunks): two stored by the threads; or (X_RING, session 35)
    # STAGES + 1 filled by cp.async with the weights, step i refilling step i - 2's set (its wgmmas are all done)
    XS: gl.constexpr = STAGES + 1 if X_RING else 2
    x_smem = gl.allocate_shared_memory(gl.int8, [4 * XS, BM, 32], x_shared)

    w_shared: gl.constexpr = gl.SwizzledSharedLayout(vec=4, per_phase=1, max_phase=8, order=[1, 0])
    w_smem = gl.allocate_shared_memory(gl.int8, [2 * STAGES, BN, 32], w_shared)  # the ring: two chunks a step
    copy_layout: gl.constexpr = gl.BlockedLayout([1, 16], [16, 2], [num_warps, 1], [1, 0])  # 16 bytes a thread
    cols = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, copy_layout))
    w_rows = w_ptr + cols[:, None] * stride_wn + gl.arange(0, 32, layout=gl.SliceLayout(0, copy_layout))[None, :]
    col_ok = (cols < N)[:, None]

    xrows = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, x_layout))
    x_rows = xq_ptr + xrows[:, None] * K + gl.arange(0, 32, layout=gl.SliceLayout(0, x_layout))[None, :]
    x_ok = (xrows < M)[:, None]

    steps = K // 128 // SPLIT
    first = pid_k * steps
    for t in gl.static_range(STAGES - 1):
        for c in gl.static_range(2):  # bytes 64 (first + t) + 32 c of each row
            cp.async_copy_global_to_shared(w_smem.index(2 * t + c), w_rows + (first + t) * 64 + 32 * c,
                                           mask=col_ok & (t < steps))
        if X_RING:
            for q in gl.static_range(4):
                cp.async_copy_global_to_shared(x_smem.index(4 * t + q),
                                               x_rows + (q // 2) * (K // 2) + (first + t) * 64 + 32 * (q % 2),
                                               mask=x_ok & (t < steps))
        cp.commit_group()
    acc = gl.zeros([BN, BM], gl.int32, layout=mma)
    for i in range(steps):
        kb = first + i
        cp.wait_group(STAGES - 2)  # step i's copies are in; the barrier makes every thread's visible, and says
        gl.thread_barrier()        # that all threads are past step i - 1, whose slot the next copy refills
        slot = i % STAGES
        w0 = w_smem.index(2 * slot).load(a_layout)
        w1 = w_smem.index(2 * slot + 1).load(a_layout)
        ahead = i + STAGES - 1
        for c in gl.static_range(2):
            cp.async_copy_global_to_shared(w_smem.index(2 * (ahead % STAGES) + c),
                                           w_rows + (first + ahead) * 64 + 32 * c, mask=col_ok & (ahead < steps))
        if X_RING:  # into step i - 2's set
            for q in gl.static_range(4):
                cp.async_copy_global_to_shared(x_smem.index(4 * (ahead % XS) + q),
                                               x_rows + (q // 2) * (K // 2) + (first + ahead) * 64 + 32 * (q % 2),
                                               mask=x_ok & (ahead < steps))
        cp.commit_group()
        x_set = 4 * (i % XS)  # without the ring: last read by step i - 2's wgmmas, done by step i - 1's last wait
        if not X_RING:
            for q in gl.static_range(4):  # even inputs 64 kb + 32 c in tile c, odd ones (at K / 2) in tile 2 + c
                x_smem.index(x_set + q).store(gl.load(x_rows + (q // 2) * (K // 2) + kb * 64 + 32 * (q % 2),
                                                      mask=x_ok, other=0))
        fence_async_shared()
        acc = warpgroup_mma(_operand(w0, LOW_ASM), x_smem.index(x_set + 0).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=3, deps=(acc,))
        acc = warpgroup_mma(_operand(w0, HIGH_ASM), x_smem.index(x_set + 2).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=3, deps=(acc,))
        acc = warpgroup_mma(_operand(w1, LOW_ASM), x_smem.index(x_set + 1).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=3, deps=(acc,))
        acc = warpgroup_mma(_operand(w1, HIGH_ASM), x_smem.index(x_set + 3).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=3, deps=(acc,))
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))

    out_layout: gl.constexpr = gl.BlockedLayout([8, 1], [16, 2], [1, num_warps], [0, 1])  # y's columns contiguous
    out_cols = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, out_layout))
    out_rows = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(0, out_layout))
    ws = gl.load(ws_ptr + out_cols, mask=out_cols < N, other=0.0)
    sx = gl.load(sx_ptr + out_rows, mask=out_rows < M, other=0.0)
    out = gl.convert_layout(acc, out_layout).to(gl.float32) * ws[:, None] * sx[None, :]
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


def _bytes(f):
    """A torch twin of a PTX byte op (``gluon_interpret`` passes the asm's inputs as a list)."""
    return lambda args: f(args[0].to(torch.int32)).to(torch.uint8).view(torch.int8)


TWINS = {LOW: _bytes(lambda b: (b << 4) & 0xF0), HIGH: _bytes(lambda b: b & 0xF0), MOV: lambda args: args[0].clone()}


def grid_of(n: int, m: int, bn: int, bm: int, split: int) -> tuple[int, int, int]:
    return triton.cdiv(n, bn), triton.cdiv(m, bm), split


def launch(xq, sx, weight, ws, counters, dtype, bn=128, bm=64, split=1, warps=4, stages=4, interpret=False,
           x_ring=False, copies="late"):
    """``xq`` int8 [M, K] (even-odd order) with token scales ``sx`` times the packed per-channel W4A8 weight."""
    m, k = xq.shape
    n = weight.shape[0]
    if k % (128 * split) or bm not in (16, 32, 64) or bn % (16 * warps):
        raise ValueError(f"K={k} must be whole 128-input steps per split ({split}); BM={bm} 16, 32 or 64; BN={bn} "
                         f"a multiple of 16 rows for each of {warps} warps")
    grid = grid_of(n, m, bn, bm, split)
    y = torch.empty(m, n, dtype=dtype, device=xq.device)
    part = torch.empty(split, m, n, dtype=torch.float32, device=xq.device) if split > 1 else y
    args = [xq, sx, weight.view(torch.int8), ws, y, part, counters, m, n, weight.stride(0), y.stride(0)]
    const = dict(K=k, BN=bn, BM=bm, SPLIT=split, STAGES=stages, num_warps=warps, X_RING=x_ring)
    if interpret:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "next_gluon_w4a16_movs"))
        import gluon_interpret

        gluon_interpret.ASM.update(TWINS)
        gluon_interpret.run(w4a8_wgmma_kernel, grid, *args, copies=copies, **const)
    else:
        w4a8_wgmma_kernel[grid](*args, **const)
    return y


def _case(n, k, m, device, gen):
    """A random per-channel W4A8 layer: (xq, sx, packed weight, ws) as the committed kernel takes them, and the exact
    float64 result."""
    codes = torch.randint(-8, 8, (n, k), generator=gen, device=device)
    ws_true = torch.rand(n, generator=gen, device=device) * 0.01 + 0.001
    xq = torch.randint(-127, 128, (m, k), generator=gen, device=device)
    sx = torch.rand(m, generator=gen, device=device) * 0.02 + 0.001
    u = (codes & 0xF).to(torch.uint8)
    weight = (u[:, 0::2] | (u[:, 1::2] << 4)).contiguous()
    even_odd = torch.cat([xq[:, 0::2], xq[:, 1::2]], dim=1).to(torch.int8).contiguous()
    exact = (xq.double() @ codes.double().t()) * ws_true.double()[None, :] * sx.double()[:, None]
    return even_odd, sx.float(), weight, (ws_true / 16).float(), exact


def interpret_check() -> None:
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for n, k, m, bn, bm, split in [(256, 512, 5, 128, 16, 1), (192, 1024, 17, 64, 32, 2), (128, 768, 33, 128, 32, 3),
                                   (256, 512, 64, 256, 64, 4)]:
        xq, sx, weight, ws, exact = _case(n, k, m, "cpu", gen)
        counters = torch.zeros(64, dtype=torch.int32)
        # x through the cp.async ring (session 35); copies landing as late and as early as the hardware may land them
        for x_ring, stages in ((False, 4), (True, 3), (True, 4)):
            for copies in ("late", "early"):
                y = launch(xq, sx, weight, ws, counters, torch.float16, bn, bm, split, stages=stages, interpret=True,
                           x_ring=x_ring, copies=copies)
                err = ((y.double() - exact).norm() / exact.norm()).item()
                worst = max(worst, err)
                print(f"N {n} K {k} M {m} BN {bn} BM {bm} split {split}{' x ring' if x_ring else ''} stages {stages}, "
                      f"copies {copies}: rel. error {err:.2e}, counters left {int(counters.abs().sum())}")
    assert worst < 5e-3, worst


def compile_sm90(bm, bn, split, warps=4, stages=4, k=8192, x_ring=False):
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    sig = {"xq_ptr": "*i8", "sx_ptr": "*fp32", "w_ptr": "*i8", "ws_ptr": "*fp32", "y_ptr": "*fp16", "part_ptr": "*fp32",
           "count_ptr": "*i32", "M": "i32", "N": "i32", "stride_wn": "i32", "stride_ym": "i32", "K": "constexpr",
           "BN": "constexpr", "BM": "constexpr", "SPLIT": "constexpr", "STAGES": "constexpr", "num_warps": "constexpr",
           "X_RING": "constexpr"}
    const = {"K": k, "BN": bn, "BM": bm, "SPLIT": split, "STAGES": stages, "num_warps": warps, "X_RING": x_ring}
    div = [i for i, name in enumerate(sig) if name.endswith("_ptr") or name in ("N", "stride_wn", "stride_ym")]
    src = GluonASTSource(fn=w4a8_wgmma_kernel, signature=sig, constexprs=const,
                         attrs={(i,): [["tt.divisibility", 16]] for i in div})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 1})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--interpret", action="store_true")
    parser.add_argument("--ring", action="store_true", help="x through the cp.async ring, 3 stages (session 35)")
    args = parser.parse_args(argv)
    stages = 3 if args.ring else 4
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "next_gluon_w4a16_movs"))
    import gluon_w4a16

    if args.interpret:
        interpret_check()
        return
    if args.compile_only:
        for bm, bn, split, warps in [(16, 128, 1, 4), (32, 128, 2, 4), (64, 128, 1, 4), (64, 256, 1, 8),
                                     (64, 128, 4, 8)]:
            print(f"BM {bm} BN {bn} split {split} warps {warps}:",
                  gluon_w4a16.ptxas_report(compile_sm90(bm, bn, split, warps)), flush=True)
        return
    gluon_w4a16.check_ptxas()
    from specbench.decoding.graphs import GraphedCall
    from specbench.quantization import get_scheme, quantize_rtn
    from specbench.quantization.act_quant_kernel import quantize_per_token
    from specbench.quantization.linear import QuantLinear
    from specbench.timing.timer import time_calls

    shapes = {"70b_qkv": (10240, 8192), "70b_o": (8192, 8192), "70b_gate_up": (57344, 8192), "70b_down": (8192, 28672)}
    counters = torch.zeros(4096, dtype=torch.int32, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for name, (n, k) in shapes.items():
        xq, sx, weight, ws, exact = _case(n, k, 64, "cuda", gen)
        y = launch(xq, sx, weight, ws, counters, torch.float16, 128, 64, 1, stages=stages, x_ring=args.ring)
        print(json.dumps({"shape": name, "exact_rel_err": ((y.double() - exact).norm() / exact.norm()).item()}),
              flush=True)
        copies = max(2, min(32, -(-200_000_000 // (n * k // 2))))
        layers = [QuantLinear(quantize_rtn(torch.randn(n, k, device="cuda") * 0.02, get_scheme("w4a8"), -1, True),
                              None, "triton", torch.float16) for _ in range(copies)]
        for m in (1, 16, 64):
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            ref = layers[0](x).float()
            xq_m, sx_m = quantize_per_token(x, even_odd=True)
            row = {"shape": name, "M": m, "copies": copies}
            bm = max(16, triton.next_power_of_2(m))
            for bn, warps in ((128, 4), (128, 8), (256, 8)):
                for split in (1, 2, 4):
                    if k % (128 * split) or (n // bn) * split > 4 * 132 or (n // bn) * split < 66:
                        continue
                    label = f"gluon_bn{bn}_w{warps}_s{split}"
                    try:
                        kern = [q.kernel for q in layers]
                        got = launch(xq_m, sx_m, kern[0].weight, kern[0].ws, counters, x.dtype, bn, bm, split, warps,
                                     stages, x_ring=args.ring)
                        err = ((got.float() - ref).norm() / ref.norm()).item()

                        def fn():
                            xq_i, sx_i = quantize_per_token(x, even_odd=True)
                            return [launch(xq_i, sx_i, q.weight, q.ws, counters, x.dtype, bn, bm, split, warps,
                                           stages, x_ring=args.ring) for q in kern]
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
