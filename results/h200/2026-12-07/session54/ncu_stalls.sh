# Session 54 (either GPU, carry [".whl"], ~3 min): where the W4A16 g128 kernels' warps wait, by stall reason, with
# this GPU's table: the 8B linears at M = 1 and 32 (the 8B floor, HierSpec's verify of 30), then the 70B's at M = 1
# and 64 (the T(64)/T(1) floor). session53/ncu_m1.sh (now asking for the per-reason metrics by name), twice.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
mkdir -p "$OUT/m8b" "$OUT/m70b"
NCU_S=110 OUT="$OUT/m8b" bash results/h200/2026-12-07/session53/ncu_m1.sh | tail -3
NCU_S=150 SHAPES="10240x8192 8192x8192 57344x8192 8192x28672" MS="1 64" OUT="$OUT/m70b" \
  bash results/h200/2026-12-07/session53/ncu_m1.sh | tail -3
