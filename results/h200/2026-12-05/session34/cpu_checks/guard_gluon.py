import sys
sys.path.insert(0, "results/h200/2026-12-04/session33/next_gluon_w4a16_movs")
from gluon_w4a16 import compile_sm90
from specbench import wgmma_guard
from triton import knobs
k = compile_sm90(32, 128, 2, warps=4, zeros=False)
try:
    wgmma_guard.check(k, lambda: "Gluon W4A16 BM 32 BN 128")
    print(knobs.nvidia.ptxas.version, "passed")
except wgmma_guard.UnsafeBuildError as e:
    print(knobs.nvidia.ptxas.version, "refused:", str(e)[:260])
