"""Count the SASS instructions of the Triton w4a16 kernel's K loop per weight, compiled for sm_90 without a GPU.

    python -m tools.int4_sass --BM 16 --BN 256 --BK 128 --warps 4 --deq 3 [--gemv] [--channel] [--zeros] [--fp16]
        [--uneven] [--scales-ahead] [--whole-k]

Triton compiles the kernel ahead of time for an H100/H200 target (its bundled ptxas); nvdisasm lists the cubin and
the largest loop (a backward branch) is counted: instructions per weight and thread = loop instructions /
(BK * BN / threads), the issue cost that bounds a kernel streaming int4 weights (docs/quantization.md). A second
line gives the build's writes to registers of wgmmas in flight (``wgmma_guard.listing_early_writes``), a third its
registers, spills and shared memory, and how many programs fit on a multiprocessor by each.
``--whole-k`` builds the kernel as a config without a K split runs it (no partial sums).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from specbench.quantization.int4_kernel import KernelConfig, odd_fma, w4a16_kernel
from specbench.wgmma_guard import listing_early_writes, loops

POINTERS = ("x_ptr", "w_ptr", "s_ptr", "z_ptr", "y_ptr", "part_ptr", "count_ptr")
INTS = ("M", "N", "K", "stride_xm", "stride_ym")


REGISTERS_PER_SM, SHARED_PER_SM, SHARED_PER_PROGRAM = 65536, 228 * 1024, 1024  # sm_90; the driver keeps 1 KB a block
MAX_WARPS_PER_SM = 64


def programs_per_sm(registers: int, shared: int, warps: int) -> dict[str, int]:
    """Programs of ``warps`` warps that fit on one sm_90 multiprocessor by registers (allocated per warp in units of
    256), by shared memory (``shared`` bytes a program, at the largest carveout) and by warp slots."""
    per_warp = -(-registers * 32 // 256) * 256
    return {"registers": REGISTERS_PER_SM // per_warp // warps,
            "shared": SHARED_PER_SM // (shared + SHARED_PER_PROGRAM),
            "warps": MAX_WARPS_PER_SM // warps}


def compile_sm90(args):
    """The compiled kernel for these constexprs; pointers and N, K, strides divisible by 16, as Triton specializes
    them."""
    act = "fp16" if args.fp16 else "bf16"
    types = [f"*{act}", "*i32", f"*{act}", f"*{act}", f"*{act}", "*fp32", "*i32"]
    sig = {**dict(zip(POINTERS, types)), **{name: "i32" for name in INTS}}
    const = dict(GROUP=args.BK if args.channel else 128, CHANNEL=args.channel, HAS_ZEROS=args.zeros,
                 SPLIT_K=not args.whole_k, GEMV=args.gemv, BM=1 if args.gemv else args.BM, BN=args.BN, BK=args.BK,
                 DEQ=args.deq, P=128, ASM=True, WB=16, UNIT=args.BK, UNEVEN=args.uneven,
                 SCALES_AHEAD=args.scales_ahead,
                 ODD_FMA=odd_fma(KernelConfig("gemv" if args.gemv else "dot", args.BN, args.BK, BM=args.BM,
                                              warps=args.warps)))
    sig.update({name: "constexpr" for name in const})
    divisible = [i for i, name in enumerate(sig) if name in POINTERS or name in INTS[1:]]
    src = ASTSource(fn=w4a16_kernel, signature=sig, constexprs=const,
                    attrs={(i,): [["tt.divisibility", 16]] for i in divisible})
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": args.warps, "num_stages": args.stages})
    return kernel


def _bundled(tool: str) -> str:
    """The path of one of Triton's bundled CUDA tools (nvdisasm, cuobjdump, ptxas)."""
    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", tool)


def on_cubin(kernel, tool: str, *flags: str) -> str:
    """What bundled ``tool`` (with ``flags``) prints for a compiled kernel's cubin."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        return subprocess.run([_bundled(tool), *flags, f.name], capture_output=True, text=True, check=True).stdout


def resources(kernel, warps: int) -> dict:
    """A compiled kernel's registers, spilled bytes a thread and shared memory, and ``programs_per_sm``."""
    usage = on_cubin(kernel, "cuobjdump", "-res-usage")
    registers, spilled = (int(re.search(rf"{key}:(\d+)", usage).group(1)) for key in ("REG", "LOCAL"))
    return {"registers": registers, "spilled": spilled, "shared": kernel.metadata.shared,
            "per_sm": programs_per_sm(registers, kernel.metadata.shared, warps)}


def largest_loop(sass: str) -> collections.Counter:
    """Opcode counts of the longest loop body."""
    best = collections.Counter()
    for body in loops(sass):
        ops = [re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line) for line in body]
        best = max(best, collections.Counter(m.group(1) for m in ops if m), key=lambda c: sum(c.values()))
    return best


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("BM", 16), ("BN", 256), ("BK", 128), ("warps", 4), ("stages", 3), ("deq", 3)):
        parser.add_argument(f"--{name}", type=int, default=default)
    # uneven: split K ranges of unequal length; scales-ahead: DEQ 4-6 load the next tile's scales a K step early
    # whole-k: one program per output tile, no partial sums (configs with split 1)
    for flag in ("gemv", "channel", "zeros", "fp16", "uneven", "scales-ahead", "whole-k"):
        parser.add_argument(f"--{flag}", action="store_true")
    parser.add_argument("--sass", help="also write the whole listing to this file")
    args = parser.parse_args(argv)
    kernel = compile_sm90(args)
    sass = on_cubin(kernel, "nvdisasm", "-c")
    if args.sass:
        with open(args.sass, "w") as out:
            out.write(sass)
    loop = largest_loop(sass)
    per_weight = sum(loop.values()) / (args.BK * args.BN / (32 * args.warps))
    print(f"{sum(loop.values())} instructions per K step, {per_weight:.2f} per weight and thread; "
          + ", ".join(f"{op} {n}" for op, n in loop.most_common(12)))
    print(f"{len(listing_early_writes(sass))} writes to the register operand of a wgmma still in flight "
          "(wgmma_guard refuses a build with any)")
    used = resources(kernel, args.warps)
    fits = used["per_sm"]
    print(f"{used['registers']} registers, {used['spilled']} bytes spilled a thread, {used['shared']} bytes of shared "
          f"memory; programs per SM by registers {fits['registers']}, by shared memory {fits['shared']}, by warps "
          f"{fits['warps']}")
    return per_weight


if __name__ == "__main__":
    main()
