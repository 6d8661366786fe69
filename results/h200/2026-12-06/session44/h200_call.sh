# Session 44, one H200 call (~8 min; carry [".whl", "base"], base/ = 27a9148, the committed H200 table's code):
# 1. the 70B W4A8 g128 entries of buckets 64 / 32 over the full grid with the scaled one-dot tiles among the
#    candidates (session 40's scaled_h200.sh; on the H100 the g128 T(64)/T(1) went x1.39 -> x1.15);
# 2. the 70B W4A8 per-channel entries of bucket 64 re-tuned around their entries (T(64)/T(1) x1.311, floor 1.3);
# 3. the W4A8 stacks of both tables in turns (same_run.sh), the W4A8 agreement with the new table.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
TABLE=specbench/quantization/tables/$GPU.json
cp $TABLE "$OUT/$GPU.json"
tune() {  # seconds, then tune's own arguments
  local s=$1; shift
  timeout $s python3 -m specbench.quantization.tune --gpu $GPU --schemes w4a8 --models llama-3-70b --workers 14 \
    --budget-s $(( s - 25 )) --dtype bfloat16 --out "$OUT/$GPU.json" "$@" >> "$OUT/tune.log" 2>&1
  echo "tune $* rc $? $(( $(date +%s) - t0 )) s"
}
tune ${TUNE_S:-170} --buckets 64 32 --groups 128
tune ${AROUND_S:-70} --buckets 64 --groups -1 --around-entry
grep -E "M=(32|64):" "$OUT/tune.log" | cut -c1-200
cp "$OUT/$GPU.json" $TABLE
ROUNDS=1 TIMEOUT_S=80 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models \
  llama-3-70b --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 65
for f in "$OUT"/a8_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
timeout 110 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 12 --budget-s 95 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -6 "$OUT/agreement/kernel_agreement.md"
rm -f "$OUT"/a8_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*1 agreement) 2>/dev/null && rm -rf "$OUT"/a8_*1 "$OUT"/agreement
echo "total $(( $(date +%s) - t0 )) s"
