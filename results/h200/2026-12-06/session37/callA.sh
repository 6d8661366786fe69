# Session 37 (an H200: the tune refuses other GPUs): the chunked W4A8 kernel (session 36's chunked.patch, applied):
# its GPU tests, then the W4A8 entries (buckets 1, 16, 64) re-tuned around their entries (timed on the two-dot
# code), then the stacks: base/ (HEAD: two-dot kernel, committed table) and base_t/ (chunked kernel, committed
# table) against the chunked kernel with the re-tuned table. Make base/ first:
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 110 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_triton_a8_gpu.py tests/test_quant_triton_a8.py \
  > "$OUT/pytest.log" 2>&1; echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
TABLE=specbench/quantization/tables/h200.json
mkdir base_t && cp -r specbench benchmarks tools base_t/
timeout 210 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a8 --models llama-3-70b llama-3-8b \
  --buckets 1 16 64 --groups 128 -1 --around-entry --budget-s 180 --workers 12 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=(1|16|64):" "$OUT/tune.log" | cut -c1-170
cp "$OUT/h200.json" $TABLE
for b in base_t base; do
  BASE=$b ROUNDS=1 TIMEOUT_S=80 bash benchmarks/same_run.sh "a8_vs_$b" python3 -m benchmarks.bench_quant_linear \
    --models llama-3-70b llama-3-8b --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 60
done
for f in "$OUT"/a8_vs_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_vs_*1 a8_vs_*.log pytest.log) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
