# Not run in session 31 (no device time left). Applies call 10's fused-epilogue patch (rebased on 4db3658) to the copy on the device, then
# times the 70B gate/up at M = 16 plain and fused, before and after asking each build for the largest shared carveout.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
P=results/h200/2026-12-04/session31
git apply $P/next_glu_carveout_probe/silu_mul_fused_rebased.patch 2>/dev/null || patch -p1 < $P/next_glu_carveout_probe/silu_mul_fused_rebased.patch
timeout 100 python3 $P/next_glu_carveout_probe/probe_glu_carveout.py $OUT/glu_carveout.json 2>&1 | grep -v Warn | tail -6
