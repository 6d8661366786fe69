# Prepared in session 38 (~3 min, an H200 or an H100): W4A8 grouped partials turned float by an integer add and a
# float subtraction (add_cvt.patch: exact while |partial| < 2**22, which every shipped config is; interpreter tests
# pass with it and fail with the constant off by one) in place of sm_90's I2FP, which the CUDA guide lists among the
# conversions at 16 a clock per SM. sm_90 builds (Triton 3.6): the g128 dot tile BM 64 x BN 64 x BK 256 goes from 348
# instructions a K step (64 I2FP) to 412 (no I2FP; +64 FADD, +41 IMAD), so it pays only if I2FP is the slow pipe.
# Apply the patch and make base/ from HEAD first:
#   git apply results/h200/2026-12-06/session38/next_w4a8_add_cvt/add_cvt.patch
#   mkdir base && git archive HEAD specbench benchmarks tools | tar -x -C base && rm -rf base/specbench/assets/tiny/*
# Then the W4A8 GPU tests and the W4A8 stacks, new against base/ (same table), two rounds. Adopt if the g128 stacks
# are faster at M = 16-64 and no slower at M = 1.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_triton_a8_gpu.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
ROUNDS=2 TIMEOUT_S=60 bash benchmarks/same_run.sh a8 python3 -m benchmarks.bench_quant_linear --models llama-3-70b \
  llama-3-8b --backends triton --schemes w4a8 --ms 1 16 32 64 --no-dense --budget-s 45
for f in "$OUT"/a8_*[12]; do python3 -c "import json, sys; [print(sys.argv[2], r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton' and r['group_size'] != -1]" "$f/quant_linear.json" "$(basename $f)"; done
rm -f "$OUT"/a8_*/*.png; tar czf "$OUT/res.tgz" -C "$OUT" $(cd "$OUT" && ls -d a8_*[12]) 2>/dev/null && rm -rf "$OUT"/a8_*[12]
echo "total $(( $(date +%s) - t0 )) s"
