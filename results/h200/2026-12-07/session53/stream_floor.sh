# Session 53 (either GPU, carry [".whl"], ~2 min): the fastest one launch reads each 8B and 70B 4-bit weight
# (benchmarks/bench_stream_floor.py), the floor under any per-linear kernel, beside the W4A16 kernel's stack.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${FLOOR_S:-240} python3 -m benchmarks.bench_stream_floor --out "$OUT/floor" --models ${MODELS:-llama-3-8b llama-3-70b} \
  > "$OUT/floor.log" 2>&1
echo "floor rc $? $(( $(date +%s) - t0 )) s"; cat "$OUT/floor.log" | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
