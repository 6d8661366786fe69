# Session 38 (an H100, ~7 min; make base/ from HEAD first, as in ../session37/next_w4a8_full_grid/call1.sh): that
# call's W4A8 full-grid tune of buckets 64/32/16, on an H100 while no H200 could be started. The tune starts from a
# copy of the H200 table written as an H100 table ($OUT/h100.json), so each H200 entry competes with the full grid;
# then the stacks with that table (tables/h100.json in the checkout) against the H200 table it runs as a sibling
# (base/), one process each. Not for committing as an H100 table: its other entries are the H200's.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cp specbench/quantization/tables/h200.json "$OUT/h100.json"
timeout 280 python3 -m specbench.quantization.tune --gpu h100 --schemes w4a8 --models llama-3-70b llama-3-8b \
  --buckets 64 32 16 --groups -1 128 --budget-s 250 --workers 14 --out "$OUT/h100.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=(16|32|64):" "$OUT/tune.log" | cut -c1-170
cp "$OUT/h100.json" specbench/quantization/tables/h100.json
ROUNDS=1 TIMEOUT_S=70 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models llama-3-70b \
  llama-3-8b --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 55
for f in "$OUT"/a8_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*1) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
