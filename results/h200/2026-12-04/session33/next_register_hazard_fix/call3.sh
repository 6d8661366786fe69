# Session 33 (prepared). The table's w4a16 entries whose code changed (DEQ 7 ex-8, DEQ 9, per-channel) timed again
# around their entries with the new code (~6 min). The new table is $OUT/h200.json.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
cp specbench/quantization/tables/h200.json "$OUT/h200.json"
timeout 330 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-8b llama-3-70b \
  --buckets 1 32 64 --groups 128 -1 --around-entry --budget-s 300 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; tail -5 "$OUT/tune.log"
tar czf "$OUT/res.tgz" -C "$OUT" tune.log 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
