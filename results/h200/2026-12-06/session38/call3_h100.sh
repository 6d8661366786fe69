# Session 38 (an H100, ~6 min): W4A8 dot-path K tiles of several groups (a dot and a group scale per group of 128).
# Make base/ first: the working tree's code with call 2's H100 table (its g128 entries of M = 16-64 full-grid tuned on
# the H100 with K tiles of at most one group):
#   rm -rf base && mkdir base && git ls-files -z specbench benchmarks tools | xargs -0 cp --parents -t base \
#     && rm -rf base/specbench/assets/tiny/* && cp results/h200/2026-12-06/session38/call2_h100/h100.json base/specbench/quantization/tables/
# The tune re-times the g128 entries of M = 1, 16, 32, 64 with the wider tiles among the candidates (each entry
# competes again); then the stacks with that table against base/ (same code), and the int8-activation GPU tests.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cp base/specbench/quantization/tables/h100.json "$OUT/h100.json"
timeout 250 python3 -m specbench.quantization.tune --gpu h100 --schemes w4a8 --models llama-3-70b llama-3-8b \
  --buckets 1 16 32 64 --groups 128 --budget-s 220 --workers 14 --out "$OUT/h100.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=(1|16|32|64):" "$OUT/tune.log" | cut -c1-200
cp "$OUT/h100.json" specbench/quantization/tables/h100.json
ROUNDS=1 TIMEOUT_S=70 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models llama-3-70b \
  llama-3-8b --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 55
for f in "$OUT"/a8_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
timeout 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_triton_a8_gpu.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
rm -f "$OUT"/a8_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*1) 2>/dev/null && rm -rf "$OUT"/a8_*1
echo "total $(( $(date +%s) - t0 )) s"
