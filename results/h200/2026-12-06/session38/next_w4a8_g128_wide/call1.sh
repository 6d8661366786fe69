# Session 38 (an H200, ~4-5 min; MODELS="llama-3-70b llama-3-8b" for both, ~7 min; BUCKETS="32 64" to narrow): the
# W4A8 g128 entries of M = 1, 16, 32 and 64 re-tuned with dot-path K tiles of several groups among the candidates
# (d98a04e; on an H100 they took the 70B g128 stack from 19.08 to 15.02 ms at M = 1), then the stacks against base/
# (same code, committed table) and the W4A8 agreement with the new table. Make base/ from HEAD first:
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
# Adopt the table if the g128 stacks are faster and the agreement holds. Call 5 ran it with TUNE_S=120 (buckets 1 and
# 16 of the 70B shapes, adopted); next: MODELS=llama-3-8b BUCKETS=1 (buckets 16-64 come with session 37's full grid).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
MODELS=${MODELS:-llama-3-70b}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TABLE=specbench/quantization/tables/h200.json
cp $TABLE "$OUT/h200.json"
timeout ${TUNE_S:-150} python3 -m specbench.quantization.tune --gpu h200 --schemes w4a8 --models $MODELS \
  --buckets ${BUCKETS:-1 16 32 64} --groups 128 --budget-s $(( ${TUNE_S:-150} - 20 )) --workers 14 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=(1|16|32|64):" "$OUT/tune.log" | cut -c1-200
cp "$OUT/h200.json" $TABLE
ROUNDS=1 TIMEOUT_S=60 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models $MODELS \
  --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 45
for f in "$OUT"/a8_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
timeout 110 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 12 --budget-s 95 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -6 "$OUT/agreement/kernel_agreement.md"
rm -f "$OUT"/a8_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*1 agreement) 2>/dev/null && rm -rf "$OUT"/a8_*1 "$OUT"/agreement
echo "total $(( $(date +%s) - t0 )) s"
