# Session 41 (~8 min, an H100): the committed H100 table (session 40 call 2's 14 W4A8 g128 entries, buckets 32/64)
# completed by tuning the g128 entries it lacks (bucket 16 of both models, the 8B gate_up and down at 32; the H200's
# entries compete, kernel_table layers the H100's own entries over them), then the W4A8 stacks of this checkout (the
# H100 table over the H200's) against base/ (HEAD before the H100 table: the H200 table for the H100), and the W4A8
# agreement with the new table. Make base/ first:
#   mkdir base && git archive 27a9148 specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100 || { echo "not an H100"; exit 1; }
TABLE=specbench/quantization/tables/h100.json
cp $TABLE "$OUT/h100.json"
tune() { timeout $1 python3 -m specbench.quantization.tune --gpu h100 --schemes w4a8 --groups 128 --budget-s $(( $1 - 30 )) \
  --workers 14 --out "$OUT/h100.json" "${@:2}" >> "$OUT/tune.log" 2>&1; echo "tune rc $? $(( $(date +%s) - t0 )) s"; }
tune ${TUNE16_S:-190} --models llama-3-70b llama-3-8b --buckets 16
tune ${TUNE32_S:-80} --models llama-3-8b --shapes gate_up down --buckets 32
grep -E "M=(16|32|64):" "$OUT/tune.log" | cut -c1-210
cp "$OUT/h100.json" $TABLE
python3 -c "import json; e=json.load(open('$TABLE'))['entries']; print('own entries', sum(map(len, e.values())), 'scaled', sorted((k, b) for k, r in e.items() for b, v in r.items() if v['config'].get('scaled')))"
ROUNDS=1 TIMEOUT_S=70 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models \
  llama-3-70b llama-3-8b --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 55
for f in "$OUT"/a8_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
timeout 110 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 12 --budget-s 95 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -6 "$OUT/agreement/kernel_agreement.md"
python3 -c "from specbench.quantization import kernel_table as t; print(t.describe_source('h100', 8192, 8192, 128, 'w4a8'), '|', t.choose('h100', 8192, 8192, 128, 16, 'w4a8'))"
rm -f "$OUT"/a8_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*1 agreement) 2>/dev/null && rm -rf "$OUT"/a8_*1 "$OUT"/agreement
echo "total $(( $(date +%s) - t0 )) s"
