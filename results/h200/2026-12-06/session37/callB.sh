# Session 37 (H100 or H200, ~2 min): the int8-activation GPU tests with the one-dot W4A8 kernel (the new test of the
# activation codes at near ties among them) and bench_act_quant in input order.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${PYTEST_S:-150} python3 -m pytest -q -rfE -p no:cacheprovider tests/test_quant_triton_a8_gpu.py tests/test_quant_triton_a8.py ${MORE_TESTS:-} \
  > "$OUT/pytest.log" 2>&1; echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/pytest.log"
timeout 100 python3 -m benchmarks.bench_act_quant --ms 1 16 64 --ks 4096 14336 28672 --blocks 0 --out "$OUT/act_quant" \
  > "$OUT/act_quant.log" 2>&1; echo "act_quant rc $?"; tail -12 "$OUT/act_quant.log"; ls "$OUT/act_quant"
echo "total $(( $(date +%s) - t0 )) s"
