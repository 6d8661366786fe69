# Session 38 (an H100, ~2 min): kernel_agreement --schemes w4a8 with call 3's H100 table (its g128 entries with K
# tiles of several groups), copied to specbench/quantization/tables/h100.json for the call (not committed).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 140 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 12 --budget-s 120 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -8 "$OUT/agreement/kernel_agreement.md"
echo "total $(( $(date +%s) - t0 )) s"
