# Session 40 (~9 min, an H200; on an H100 the tune extends the H100 table, its own entries over the H200's since
# session 41; AROUND=1: re-tune around the entries only, ~5 min; MODELS, BUCKETS, MS: fewer entries). The W4A8 g128 entries of buckets 16/32/64 over the full
# grid with session 39's scaled one-dot tiles (A8Config.scaled) among the candidates (call 1 on an H100: the
# around-entry tune took scaled tiles for 13 of 24 entries, 70B g128 M = 64 21.49 -> 18.10 ms), then the stacks
# against base/ (HEAD before the patch, the committed table) and the W4A8 agreement with the new table. The GPU tests
# ran with this code on the H100 (58 passed). With the patch applied, make base/ from HEAD first:
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
TABLE=specbench/quantization/tables/$GPU.json
[ -f $TABLE ] && cp $TABLE "$OUT/$GPU.json"
timeout ${TUNE_S:-330} python3 -m specbench.quantization.tune --gpu $GPU --schemes w4a8 --models ${MODELS:-llama-3-70b llama-3-8b} \
  --buckets ${BUCKETS:-64 32 16} --groups 128 ${AROUND:+--around-entry} --budget-s $(( ${TUNE_S:-330} - 30 )) --workers 14 \
  --out "$OUT/$GPU.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=(16|32|64):" "$OUT/tune.log" | cut -c1-210
cp "$OUT/$GPU.json" $TABLE
python3 -c "import json; e=json.load(open('$TABLE'))['entries']; print('scaled entries', sorted((k, b) for k, r in e.items() for b, v in r.items() if v['config'].get('scaled')))"
ROUNDS=1 TIMEOUT_S=70 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models \
  ${MODELS:-llama-3-70b llama-3-8b} --backends triton --schemes w4a8 --ms ${MS:-1 16 32 64} --no-dense --budget-s 55
for f in "$OUT"/a8_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
timeout 110 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 12 --budget-s 95 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -6 "$OUT/agreement/kernel_agreement.md"
rm -f "$OUT"/a8_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*1 agreement) 2>/dev/null && rm -rf "$OUT"/a8_*1 "$OUT"/agreement
echo "total $(( $(date +%s) - t0 )) s"
