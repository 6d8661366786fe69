# Session 42 (an H200 or H100, ~4 min): each 70B layer's committed config beside a kernel that only loads what its
# programs load (benchmarks/bench_tile_reads.py): is T(64) bound by the activation tiles re-read from L2 per N tile?
# W4A16 g128 and W4A8 per-channel at M = 1 / 32 / 64 (SCHEMES_GROUPS, MS change it). Carry [".whl"].
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for sg in ${SCHEMES_GROUPS:-w4a16:128 w4a8:-1}; do
  timeout ${READS_S:-150} python3 -m benchmarks.bench_tile_reads --out "$OUT/${sg/:/_g}" \
    --models ${MODELS:-llama-3-70b} --schemes ${sg%%:*} --groups ${sg##*:} --ms ${MS:-1 32 64} \
    > "$OUT/${sg/:/_g}.log" 2>&1
  echo "$sg rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=|^\| " "$OUT/${sg/:/_g}.log" | cut -c1-200
done
echo "total $(( $(date +%s) - t0 )) s"
