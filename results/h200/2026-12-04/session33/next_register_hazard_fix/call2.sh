# Session 33 (prepared). The table's w4a16 entries whose code changed (DEQ 7 ex-8, DEQ 9, per-channel) timed again
# around their entries with the new code; then the 70B HierSpec loop against f5d6121 (base/ as in call1.sh).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
cp specbench/quantization/tables/h200.json "$OUT/h200.json"
timeout 330 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-8b llama-3-70b \
  --buckets 1 32 64 --groups 128 -1 --around-entry --budget-s 300 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; tail -5 "$OUT/tune.log"
ROUNDS=1 TIMEOUT_S=200 bash benchmarks/same_run.sh loop python3 -m benchmarks.bench_sd_loop --model llama-3-70b-instruct \
  --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 \
  --eagle-tau 3.0 --methods ar,hierspec --repeats 2
for f in "$OUT"/loop_*1; do echo "== $f"; grep -E "tok/s, tau|^- (ar|hierspec):" "$f".log | cut -c1-420; done
tar czf "$OUT/res.tgz" -C "$OUT" tune.log $(cd "$OUT" && ls -d loop_*1) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
