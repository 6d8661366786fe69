# Session 45 (~6 min, an H200, carry [".whl"]): session 44's h200_call.sh cut to fit this session's device time: the
# 70B W4A8 g128 entries of buckets 64 / 32 over the full grid with the scaled one-dot tiles, the 70B W4A8 per-channel
# bucket-64 entries re-tuned around their entries, the W4A8 stacks with the new table (T(M)/T(1) is the floor, a ratio
# within one run; the old table's stacks are session 39's), and the W4A8 agreement with the new table.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
TABLE=specbench/quantization/tables/$GPU.json
cp $TABLE "$OUT/$GPU.json"
tune() {  # seconds, then tune's own arguments
  local s=$1; shift
  timeout $s python3 -m specbench.quantization.tune --gpu $GPU --schemes w4a8 --models llama-3-70b --workers 14 \
    --budget-s $(( s - 25 )) --out "$OUT/$GPU.json" "$@" >> "$OUT/tune.log" 2>&1
  echo "tune $* rc $? $(( $(date +%s) - t0 )) s"
}
tune ${TUNE_S:-150} --buckets 64 32 --groups 128
tune ${AROUND_S:-55} --buckets 64 --groups -1 --around-entry
grep -E "M=(32|64):" "$OUT/tune.log" | cut -c1-200
cp "$OUT/$GPU.json" $TABLE
timeout 80 python3 -m benchmarks.bench_quant_linear --out "$OUT/a8" --models llama-3-70b --backends triton \
  --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 65 > "$OUT/a8.log" 2>&1; echo "stacks rc $?"
python3 -c "import json, sys; [print(r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$OUT/a8/quant_linear.json"
timeout 100 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 12 --budget-s 85 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -6 "$OUT/agreement/kernel_agreement.md"
rm -f "$OUT"/a8/*.png; tar czf "$OUT/res.tgz" -C "$OUT" a8 agreement 2>/dev/null && rm -rf "$OUT"/a8 "$OUT"/agreement
echo "total $(( $(date +%s) - t0 )) s"
