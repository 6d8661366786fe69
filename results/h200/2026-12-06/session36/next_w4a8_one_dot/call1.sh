# Prepared in session 36 (~6 min, H100 or H200): W4A8 with 4-bit codes packed per 32-input chunk and one dot per K
# step (chunked.patch) against the committed kernel. Before the call:
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
#   git apply results/h200/2026-12-06/session36/next_w4a8_one_dot/chunked.patch
# Adopt it if the GPU tests and the agreement pass and the stacks are faster; then re-tune the W4A8 entries around
# them (`tune --schemes w4a8 --around-entry`: the table was timed on the two-dot code).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_triton_a8_gpu.py tests/test_quant_triton_a8.py \
  > "$OUT/pytest.log" 2>&1; echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
timeout 130 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 8 --budget-s 110 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -6 "$OUT/agreement/kernel_agreement.md"
ROUNDS=2 TIMEOUT_S=80 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models llama-3-70b llama-3-8b \
  --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 65
for f in "$OUT"/a8_*[12]; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*[12]) 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
