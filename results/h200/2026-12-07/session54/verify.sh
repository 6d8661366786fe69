# Session 54 (either GPU, carry [".whl"], ~5 min): session 53's launch grid refactor (1554df6, splitk.grid) checked on
# a GPU: the quantized GPU tests, then every kernel against the reference at every shipped shape and M.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${TESTS_S:-200} python3 -m pytest -q tests/test_quant_gpu.py tests/test_quant_triton.py tests/test_quant_triton_a8.py \
  > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
timeout ${AGREE_S:-200} python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --workers 14 \
  --budget-s $(( ${AGREE_S:-200} - 20 )) > "$OUT/agreement.log" 2>&1
echo "agreement rc $? $(( $(date +%s) - t0 )) s"; cut -c1-150 "$OUT/agreement/kernel_agreement.md" | tail -12
