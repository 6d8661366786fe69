# Session 44 (~2.5 min, an H200, carry [".whl"]): the W4A16 stacks re-timed with the committed code and table, which
# no longer writes the registers of wgmmas in flight (session 33's fix; the status row's H200 figures are from before
# it). Two processes in turn, bf16, with the bf16 cuBLAS stack in each as the same-run baseline.
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for run in 1 2; do
  timeout 75 python3 -m benchmarks.bench_quant_linear --out "$OUT/w4a16_$run" --models llama-3-70b llama-3-8b \
    --backends triton --schemes w4a16 --ms 1 16 32 64 --budget-s 65 > "$OUT/w4a16_$run.log" 2>&1
  echo "run $run rc $? $(( $(date +%s) - t0 )) s"
  python3 -c "import json, sys; [print(r['model'], r['backend'], r.get('group_size'), r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows']]" "$OUT/w4a16_$run/quant_linear.json"
done
rm -f "$OUT"/w4a16_*/*.png
echo "total $(( $(date +%s) - t0 )) s"
