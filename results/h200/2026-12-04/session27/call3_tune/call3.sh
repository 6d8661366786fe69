STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
cp specbench/quantization/tables/h200.json "$OUT/h200_before.json"
timeout 290 python3 -m specbench.quantization.tune --gpu h200 --schemes w4a16 --models llama-3-8b llama-3-70b \
  --buckets 16 4 --groups 128 --around-entry --budget-s 260 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
echo "tune rc $?"; grep -E "M=[0-9]+:|budget|compil" "$OUT/tune.log" | cut -c1-260
B="--models llama-3-70b llama-3-8b --backends triton --schemes w4a16 --ms 1 8 16 32 64 --no-dense --dtype float16 --budget-s 120"
for r in tuned before tuned2 before2; do
  case $r in tuned*) cp "$OUT/h200.json" specbench/quantization/tables/h200.json ;; before*) cp "$OUT/h200_before.json" specbench/quantization/tables/h200.json ;; esac
  timeout 130 python3 -m benchmarks.bench_quant_linear --out "$OUT/s_$r" $B > "$OUT/s_$r.log" 2>&1
  echo "stack $r rc $?"; grep -E "M=" "$OUT/s_$r.log" | head -12
done
cp "$OUT/h200.json" specbench/quantization/tables/h200.json
tar czf "$OUT/stacks.tgz" -C "$OUT" s_tuned s_before s_tuned2 s_before2
