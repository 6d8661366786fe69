STEPS=none; . benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for dt in bfloat16 float16; do
  timeout 200 python3 -m benchmarks.bench_quant_linear --out "$OUT/bql_$dt" --models llama-3-70b llama-3-8b \
     --backends triton --schemes w4a16 --ms 1 8 16 32 64 --no-dense --dtype $dt --budget-s 180 > "$OUT/bql_$dt.log" 2>&1
  echo "$dt rc $?"; grep -E "M=|agreement" "$OUT/bql_$dt.log"
done
