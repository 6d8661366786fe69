"""Every dot-path entry of a Triton table built for sm_90 without a GPU, and its writes to the register operand of
a wgmma still in flight (``specbench.wgmma_guard`` reads the SASS).

    python -m tools.wgmma_hazards [--gpu h200]

In Triton 3.6's pipelined loops (an added product folded into the dot's accumulator) its ptxas 12.8 let the next K
step write the registers of up to seven wgmmas in flight (docs/quantization.md). The guard refuses such a build when
it is launched; this lists them for a whole table ahead of a GPU.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from specbench.quantization import kernel_table
from specbench.quantization.int8_kernel import A8Config, a8_kernel, kernel_constants
from specbench.wgmma_guard import listing_early_writes
from tools.int4_sass import compile_sm90, on_cubin

DIVISIBLE = ("N", "K", "stride_wn", "stride_ym")  # as Triton specializes them at the table's shapes


def table_builds(gpu: str) -> Iterator[tuple[str, str, object]]:
    """(entry key, M bucket, compiled kernel) for each dot-path entry of a Triton table, built for sm_90 once per
    distinct build."""
    built = {}
    for key, row in kernel_table.load(gpu)["entries"].items():
        scheme, _, k, group, zero_points = kernel_table.parse_key(key)
        a8 = scheme != "w4a16"
        for bucket, entry in row.items():
            c = entry["config"]
            if c["path"] != "dot":
                continue
            if a8:  # grouped 4-bit weights with QQQ's integer group scales (uint8), as the tune times them
                bits = 8 if scheme == "w8a8_int8" else 4
                const = {**kernel_constants(k, group, bits, A8Config(**c), True), "ASM": True, "PDL": False}
            else:
                const = dict(fp16=True, channel=group == k, zeros=zero_points,
                             whole_k=c.get("split", 1) == 1, gemv=False, BM=c["BM"], BN=c["BN"], BK=c["BK"],
                             deq=c["DEQ"], uneven=bool(c.get("uneven")), scales_ahead=bool(c.get("scales_ahead")))
            build = (a8, c["warps"], c["stages"], *sorted(const.items()))
            if build not in built:
                built[build] = (a8_sm90(const, c["warps"], c["stages"]) if a8 else
                                compile_sm90(argparse.Namespace(warps=c["warps"], stages=c["stages"], **const)))
            yield key, bucket, built[build]


def a8_sm90(const: dict, warps: int, stages: int):
    """``a8_kernel`` built for sm_90 with these compile-time arguments (uint8 group scales for grouped weights)."""
    sig = {"xq_ptr": "*i8", "sx_ptr": "*fp32", "w_ptr": "*i8", "ws_ptr": "*fp32",
           "gs_ptr": "*fp32" if const["CHANNEL"] else "*u8", "y_ptr": "*fp16", "part_ptr": "*fp32", "count_ptr": "*i32",
           **{name: "i32" for name in ("M", "N", "K", "stride_wn", "stride_ym")},
           **{name: "constexpr" for name in const}}
    divisible = [i for i, name in enumerate(sig) if name.endswith("_ptr") or name in DIVISIBLE]
    src = ASTSource(fn=a8_kernel, signature=sig, constexprs=const,
                    attrs={(i,): [["tt.divisibility", 16]] for i in divisible})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="h200", help="the table to build (specbench/quantization/tables/<gpu>.json)")
    args = parser.parse_args(argv)
    print(f"triton {triton.__version__}")
    bad = 0
    for key, bucket, kernel in table_builds(args.gpu):
        writes = listing_early_writes(on_cubin(kernel, "nvdisasm", "-c"))
        bad += bool(writes)
        print(f"{key} M={bucket}: {len(writes)} early writes" + (f", first: {writes[0][0]}" if writes else ""),
              flush=True)
    print(f"{bad} builds with early writes")
    return int(bad > 0)


if __name__ == "__main__":
    raise SystemExit(main())
