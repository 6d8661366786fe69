import re
import sys
sys.path.insert(0, "results/h200/2026-12-04/session32/next_gluon_w4a16")
import gluon_w4a16 as g
from tools.int4_sass import largest_loop, on_cubin
for bm, bn, split, warps, k in [(32, 256, 4, 8, 28672), (64, 256, 1, 8, 8192), (32, 128, 4, 4, 14336), (64, 128, 1, 4, 4096)]:
    kern = g.compile_sm90(bm, bn, split, warps=warps, k=k)
    sass = on_cubin(kern, "nvdisasm", "-c")
    loop = largest_loop(sass)
    dep = sorted(set(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", sass)))
    print(f"BM {bm} BN {bn} split {split} warps {warps} K {k}: {g.ptxas_report(kern)}; loop {sum(loop.values())} instr, "
          f"{sum(loop.values()) / (bn * 128 / (32 * warps)):.2f} per weight and thread; wgmma waits {dep}")
