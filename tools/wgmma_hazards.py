"""Find writes to a wgmma's register operand before the wgmma is known to be done, in sm_90 SASS.

    python -m tools.wgmma_hazards [--gpu h200]     # every Triton table entry, built for sm_90 without a GPU

A wgmma whose A operand is in registers may read them after it issues; PTX makes writing them before a
``wgmma.wait_group`` that covers the wgmma undefined. ptxas before CUDA 13.3 does not always keep such registers
apart: in Triton 3.6's pipelined loops (an added product folded into the dot's accumulator) the next K step wrote
the registers of up to seven wgmmas still in flight. This reads the SASS of each loop (a backward branch) twice
over, tracking the wgmma groups in flight (an ``HGMMA``/``IGMMA`` ending in ``gsb0`` closes one, ``WARPGROUP.DEPBAR.LE
gsb0, n`` leaves at most n), and reports every instruction of the second pass whose destination is an A register
of a group still in flight.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from specbench.quantization import kernel_table
from specbench.quantization.int8_kernel import a8_kernel
from tools.int4_sass import compile_sm90, loops, on_cubin

INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
A_REGISTERS = 4  # a warpgroup MMA's A fragment: 64 rows of 32 bytes over 128 threads, whatever the type
DIVISIBLE = ("N", "K", "stride_wn", "stride_ym")  # as Triton specializes them at the table's shapes


def destinations(opcode: str, operand: str) -> list[int]:
    """The registers an instruction writes, from its opcode and first operand ([] for stores, branches, waits)."""
    reg = re.fullmatch(r"R(\d+)(?:\.reuse)?", operand.strip())
    if not reg:
        return []
    width = 1
    if opcode.startswith("LDSM"):
        width = 4 if opcode.endswith(".4") else 2 if opcode.endswith(".2") else 1
    elif opcode.startswith(("LD", "ATOM")):
        width = 4 if ".128" in opcode else 2 if ".64" in opcode else 1
    elif ".WIDE" in opcode:
        width = 2
    return [int(reg.group(1)) + i for i in range(width)]


def early_writes(body: list[str]) -> list[tuple[str, list[int], int]]:
    """(instruction, registers, groups in flight) for each write, in a loop's steady state, to an A register of a
    wgmma group that may still be in flight."""
    in_flight: list[set[int]] = []
    open_group: set[int] = set()
    found = []
    for second in (False, True):
        for line in body:
            m = INSTRUCTION.search(line)
            if not m:
                continue
            opcode, operands = m.group(1), [o.strip() for o in m.group(2).split(",")]
            if opcode.startswith(("HGMMA", "IGMMA", "QGMMA")):
                a = re.fullmatch(r"R(\d+)", operands[1])
                if a:
                    open_group |= set(range(int(a.group(1)), int(a.group(1)) + A_REGISTERS))
                if "gsb0" in operands:
                    in_flight.append(open_group)
                    open_group = set()
                continue
            if opcode.startswith("WARPGROUP.DEPBAR"):
                del in_flight[:max(0, len(in_flight) - int(operands[-1], 16))]
                continue
            hit = sorted(set(destinations(opcode, operands[0])) & set().union(*in_flight))
            if hit and second:
                found.append((line.strip(), hit, len(in_flight)))
    return found


def table_builds(gpu: str) -> Iterator[tuple[str, str, object]]:
    """(entry key, M bucket, compiled kernel) for each dot-path entry of a Triton table, built for sm_90 once per
    distinct build."""
    built = {}
    for key, row in kernel_table.load(gpu)["entries"].items():
        parts = key.split(":")
        a8 = parts[0] in ("w8a8_int8", "w4a8")
        shape, kind = parts[int(a8)], parts[int(a8) + 1]
        for bucket, entry in row.items():
            c = entry["config"]
            if c["path"] != "dot":
                continue
            if a8:
                const = dict(BITS=8 if parts[0] == "w8a8_int8" else 4, GROUP=c["BK"] if kind == "channel" else 128,
                             CHANNEL=kind == "channel", SPLIT_K=c.get("split", 1) > 1, GEMV=False, BM=c["BM"],
                             BN=c["BN"], BK=c["BK"], ASM=True, PDL=False, UNEVEN=bool(c.get("uneven")))
            else:
                const = dict(fp16=True, channel=kind == "channel", zeros=parts[-1] == "zp",
                             whole_k=c.get("split", 1) == 1, gemv=False, BM=c["BM"], BN=c["BN"], BK=c["BK"],
                             deq=c["DEQ"], uneven=bool(c.get("uneven")), scales_ahead=bool(c.get("scales_ahead")))
            build = (a8, c["warps"], c["stages"], *sorted(const.items()))
            if build not in built:
                if a8:
                    sig = {"xq_ptr": "*i8", "sx_ptr": "*fp32", "w_ptr": "*i8", "ws_ptr": "*fp32", "gs_ptr": "*fp32",
                           "y_ptr": "*fp16", "part_ptr": "*fp32", "count_ptr": "*i32",
                           **{name: "i32" for name in ("M", "N", "K", "stride_wn", "stride_ym")},
                           **{name: "constexpr" for name in const}}
                    divisible = [i for i, name in enumerate(sig) if name.endswith("_ptr") or name in DIVISIBLE]
                    src = ASTSource(fn=a8_kernel, signature=sig, constexprs=const,
                                    attrs={(i,): [["tt.divisibility", 16]] for i in divisible})
                    built[build] = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                                  options={"num_warps": c["warps"], "num_stages": c["stages"]})
                else:
                    built[build] = compile_sm90(argparse.Namespace(warps=c["warps"], stages=c["stages"], **const))
            yield key, bucket, built[build]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="h200", help="the table to build (specbench/quantization/tables/<gpu>.json)")
    args = parser.parse_args(argv)
    print(f"triton {triton.__version__}")
    bad = 0
    for key, bucket, kernel in table_builds(args.gpu):
        writes = [w for body in loops(on_cubin(kernel, "nvdisasm", "-c")) for w in early_writes(body)]
        bad += bool(writes)
        print(f"{key} M={bucket}: {len(writes)} early writes" + (f", first: {writes[0][0]}" if writes else ""),
              flush=True)
    print(f"{bad} builds with early writes")
    return int(bad > 0)


if __name__ == "__main__":
    raise SystemExit(main())
