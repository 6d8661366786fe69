# Session 36, call 6 (~8 min): the re-tuned table (call 2) against the committed one, 70B and 8B W4A16 stacks, each
# table in its own process in turn; then the W4A16 kernels with the re-tuned table against the reference at every
# shipped shape, layout, dtype and M = 1..128.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
D=results/h200/2026-12-06/session36/call2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
STEPS=tables BENCH_TABLES="$D/h200_committed.json $D/h200_retuned.json" BENCH_ROUNDS=1 BENCH_TIMEOUT_S=110 \
  BENCH_MODELS="llama-3-70b llama-3-8b" BENCH_MS="1 8 16 32 64" bash benchmarks/quant_h200.sh 2>&1 | grep -v "^tar"
echo "tables $(( $(date +%s) - t0 )) s"
if [ "${AGREE:-1}" = 1 ]; then  # AGREE=0: the benchmark only
cp $D/h200_retuned.json specbench/quantization/tables/h200.json
timeout 290 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a16 --workers ${AGREE_WORKERS:-10} \
  --budget-s 260 > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -25 "$OUT/agreement/kernel_agreement.md"
cp $D/h200_committed.json specbench/quantization/tables/h200.json
fi
echo "total $(( $(date +%s) - t0 )) s"
