# Session 35, second call (H100 or H200): call 0's agreement items that ran out of memory beside 13 other workers, again
# with 6 (benchmarks/kernel_agreement.py now retries them alone), then the sm_90 W4A16 heuristic against the generic one
# (base_heur/ = 6c66b1e) on Qwen3-8B's W4A16 shapes, then session 33's W4A16 GPU tests. Carry [".whl"].
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p "$OUT/agreement" && cp results/h200/2026-12-06/session35/call0_h100.json "$OUT/agreement/kernel_agreement.json"
STEPS=agreement AGREE_TIMEOUT_S=150 AGREE_WORKERS=6 bash benchmarks/quant_h200.sh
grep -c OutOfMemoryError "$OUT/agreement.log"; tail -3 "$OUT/agreement.log" | cut -c1-200
BASE=base_heur ROUNDS=1 TIMEOUT_S=140 bash benchmarks/same_run.sh heur python3 -m benchmarks.bench_quant_linear \
  --models qwen3-8b --backends triton torch --schemes w4a16 --ms 1 16 32 64 --dtype float16 --budget-s 120
for side in new old; do echo "== heur $side"; grep -E "^\| qwen3-8b|stack|M=" "$OUT/heur_${side}1/quant_linear.md" | head -12; done
timeout 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_int4_convert.py tests/test_quant_gpu.py \
  tests/test_wgmma_hazards.py > "$OUT/pytest.log" 2>&1
echo "pytest rc $? $(( $(date +%s) - t0 )) s"; tail -5 "$OUT/pytest.log"
tar czf "$OUT/all.tgz" -C "$OUT" --exclude all.tgz . 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
