STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
timeout 150 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a8 --models llama-3-70b --buckets 64 --groups -1 --around-entry --budget-s 130 --out $OUT/h200.json > "$OUT/tune_a8.log" 2>&1; echo "tune a8 rc $? $(( $(date +%s) - t0 )) s"
grep -E "^\[" "$OUT/tune_a8.log" | cut -c1-300
cp specbench/quantization/tables/h200.json $OUT/h200_old.json
for r in 1 2; do for side in old new; do
  if [ $side = new ]; then cp $OUT/h200.json specbench/quantization/tables/h200.json; else cp $OUT/h200_old.json specbench/quantization/tables/h200.json; fi
  timeout 60 python3 -m benchmarks.bench_quant_linear --models llama-3-70b --backends triton --schemes w4a8 --ms 1 64 --no-dense --budget-s 40 --out $OUT/stack_$side$r > $OUT/stack_$side$r.log 2>&1
  echo "stack $side$r rc $? $(( $(date +%s) - t0 )) s"; grep "| triton" $OUT/stack_$side$r/*.md | head -2
done; done
tar czf $OUT/stacks.tgz -C $OUT stack_old1 stack_new1 stack_old2 stack_new2
