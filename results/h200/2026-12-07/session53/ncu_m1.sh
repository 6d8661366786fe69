# Queued by session 53 (either GPU, ~2 min, carry [".whl"]): where the 8B W4A16 kernels wait at M = 1 and 32 with this
# GPU's table configs (issue #15's 8B floor; docs/benchmarks.md, session 53: latency-bound, about 0.3 instructions a
# cycle). ncu's warp-state, scheduler and speed-of-light sections of each kernel (profile_int4 --ncu runs each twice),
# with the clocks left alone (--clock-control none, device METHOD.md). Session 54 ran it on an H100 without the stall
# metrics (session54/ncu_m1/); they are asked for by name now.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${NCU_S:-240} ncu --clock-control none --kernel-name regex:w4a16 --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section Occupancy --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
  python3 -m benchmarks.profile_int4 --ncu \
  --shapes ${SHAPES:-6144x4096 4096x4096 28672x4096 4096x14336} --ms ${MS:-1 32} > "$OUT/ncu.txt" 2>&1
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -E "w4a16_kernel|Duration|Issued Warp Per Scheduler|stalled|Achieved Occupancy|Memory Throughput|No Eligible" \
  "$OUT/ncu.txt" | cut -c1-160 | head -120
echo "total $(( $(date +%s) - t0 )) s"
