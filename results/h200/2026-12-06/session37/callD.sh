# Session 37 (an H200, ~2.5 min): the W4A8 stacks with the re-tuned table and call C's 8B bucket-32 entries (in the
# checkout), then the W4A8 agreement with it.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
timeout 60 python3 -m benchmarks.bench_quant_linear --models llama-3-70b llama-3-8b --backends triton --schemes w4a8 \
  --ms 1 16 32 64 --no-dense --budget-s 50 --out "$OUT/a8" > "$OUT/a8.log" 2>&1; echo "bench rc $?"
python3 -c "import json, sys; [print(r['model'], r['group_size'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$OUT/a8/quant_linear.json"
timeout 110 python3 -m benchmarks.kernel_agreement --out "$OUT/agreement" --schemes w4a8 --workers 12 --budget-s 95 \
  > "$OUT/agreement.log" 2>&1; echo "agreement rc $?"; tail -6 "$OUT/agreement/kernel_agreement.md"
echo "total $(( $(date +%s) - t0 )) s"
