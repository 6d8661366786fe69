"""Per w4a16 dot entry of the H200 table: K-loop SASS instructions, registers and programs per SM, built for sm_90
with the Triton first on the path (session 33: Triton 3.6 beside the CPU build). `python sass_resources.py OUT.json`."""
import argparse, json, sys
sys.path.insert(0, ".")
from specbench.quantization import kernel_table
from tools.int4_sass import compile_sm90, on_cubin, largest_loop, resources
out = {}
for key, row in kernel_table.load("h200")["entries"].items():
    parts = key.split(":")
    if parts[0] in ("w8a8_int8", "w4a8"):
        continue
    kind = parts[1]
    for bucket, entry in row.items():
        c = entry["config"]
        if c["path"] != "dot":
            continue
        a = argparse.Namespace(fp16=True, channel=kind == "channel", zeros=parts[-1] == "zp",
                               whole_k=c.get("split", 1) == 1, gemv=False, BM=c["BM"], BN=c["BN"], BK=c["BK"],
                               deq=c["DEQ"], uneven=bool(c.get("uneven")), scales_ahead=bool(c.get("scales_ahead")),
                               warps=c["warps"], stages=c["stages"])
        k = compile_sm90(a)
        r = resources(k, c["warps"])
        out[f"{key} M={bucket}"] = {"DEQ": c["DEQ"], "loop": sum(largest_loop(on_cubin(k, "nvdisasm", "-c")).values()),
                                    "registers": r["registers"], "spilled": r["spilled"], "shared": r["shared"],
                                    "per_sm": min(r["per_sm"].values())}
json.dump(out, open(sys.argv[1], "w"), indent=1)
