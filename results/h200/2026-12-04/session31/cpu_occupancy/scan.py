"""One-off (CPU, Triton 3.9 sm_90 compiler; the device runs 3.6): registers, shared memory and programs per SM of every committed w4a16 g128
table entry of the Llama-3 8B/70B shapes, with each entry's grid size."""
import json, math, sys
from types import SimpleNamespace
from tools.int4_sass import compile_sm90, resources

table = json.load(open("specbench/quantization/tables/h200.json"))["entries"]
rows = []
for key, buckets in table.items():
    shape, kind = key.split(":")[0], key.split(":", 1)[1]
    if kind != "g128":
        continue
    n, k = map(int, shape.split("x"))  # table keys are N x K
    for m, e in sorted(buckets.items(), key=lambda t: int(t[0])):
        c = e["config"]
        args = SimpleNamespace(BM=c.get("BM", 16), BN=c["BN"], BK=c["BK"], warps=c.get("warps", 4), stages=c.get("stages", 2),
                               deq=c.get("DEQ", 0), gemv=c["path"] == "gemv", channel=False, zeros=False, fp16=True,
                               uneven=bool(c.get("uneven")), scales_ahead=bool(c.get("scales_ahead")),
                               whole_k=c.get("split", 1) == 1)
        try:
            kern = compile_sm90(args)
        except Exception as err:
            print(key, m, "compile failed", type(err).__name__, flush=True)
            continue
        used = resources(kern, args.warps)
        regs, fits = used["registers"], used["per_sm"]
        per_sm = min(fits.values())
        bm = 1 if args.gemv or c.get("DEQ") in (7, 8) else args.BM
        programs = math.ceil(n / args.BN) * math.ceil(int(m) / bm) * c.get("split", 1)
        row = {"shape": shape, "M": int(m), "config": c, "registers": regs, "shared": kern.metadata.shared,
               "per_sm": fits, "programs": programs, "waves": programs / (132 * per_sm),
               "full_register_file": fits["registers"] * args.warps * (-(-regs * 32 // 256) * 256) == 65536}
        rows.append(row)
        print(shape, m, f"BN {args.BN} BM {args.BM} split {c.get('split', 1)} warps {args.warps} DEQ {c.get('DEQ')}:",
              f"{regs} regs, {kern.metadata.shared} B shared -> {per_sm}/SM ({fits}), {programs} programs,",
              f"{row['waves']:.2f} waves", "FULL RF" if row["full_register_file"] else "", flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
