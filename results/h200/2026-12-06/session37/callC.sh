# Session 37 (an H200, ~2 min): W4A8 bucket-32 entries for the 8B g128 shapes (call A's re-tuned table, committed in
# the checkout, gave them entries at 1, 16 and 64 where they had none, so M = 32 took the bucket-64 entries: 2.88 ms
# for the stack against 2.57 on the heuristic).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
cp specbench/quantization/tables/h200.json "$OUT/h200.json"
timeout 150 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a8 --models llama-3-8b --buckets 32 \
  --groups 128 --budget-s 120 --workers 14 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=32:" "$OUT/tune.log" | cut -c1-220
