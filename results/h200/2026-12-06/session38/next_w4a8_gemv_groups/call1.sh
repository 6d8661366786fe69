# Prepared in session 38 (an H200, ~6 min; an H100 for the shape of the answer with --gpu h100 and a copy of the
# table): the W4A8 gemv path (M = 1) with K tiles of several groups, each weight word scaled by its group's scale
# (gemv_groups.patch: interpreter tests pass with it and fail with the word-to-group index broken; sm_90 builds:
# 228 instructions a K step for BN 32 x BK 1024 (1.78 a weight and thread, the BK 128 build 1.72), the group scales
# staged through shared memory). Apply the patch and make base/ from HEAD first:
#   git apply results/h200/2026-12-06/session38/next_w4a8_gemv_groups/gemv_groups.patch
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
# Then the int8-activation GPU tests (two wide gemv configs added), the g128 M = 1 entries re-tuned with the gemv's
# wider tiles among the candidates, the stacks against base/ and the W4A8 agreement. Adopt if the g128 stacks at M = 1
# are faster (70B: 11.36 ms, per-channel 9.5; the o projection's gemv 13.7 us against 10.0 per-channel).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_triton_a8_gpu.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
TABLE=specbench/quantization/tables/h200.json
cp $TABLE "$OUT/h200.json"
timeout 130 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a8 --models llama-3-70b llama-3-8b \
  --buckets 1 --groups 128 --paths gemv --budget-s 110 --workers 14 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $? $(( $(date +%s) - t0 )) s"; grep -E "M=1:" "$OUT/tune.log" | cut -c1-200
cp "$OUT/h200.json" $TABLE
ROUNDS=1 TIMEOUT_S=60 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models llama-3-70b \
  llama-3-8b --backends triton --schemes w4a8 --ms 1 16 --no-dense --budget-s 45
for f in "$OUT"/a8_*1; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$f/quant_linear.json" "$(basename $f)"; done
timeout 110 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 12 --budget-s 95 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -6 "$OUT/agreement/kernel_agreement.md"
rm -f "$OUT"/a8_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*1 agreement) 2>/dev/null && rm -rf "$OUT"/a8_*1 "$OUT"/agreement
echo "total $(( $(date +%s) - t0 )) s"
