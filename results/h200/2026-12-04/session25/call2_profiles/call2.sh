STEPS=none; . benchmarks/device_env.sh
t0=$(date +%s)
timeout 300 python3 -m benchmarks.profile_sd_step --out "$OUT/prof70" --model llama-3-70b-instruct --quant w4a16 \
   --dtype float16 --compile --compile-scope layer --tokens 8 --steps 10 > "$OUT/prof70.log" 2>&1
echo "prof70 rc $? $(( $(date +%s) - t0 )) s"; grep -A8 -E "^(decode|verify):" "$OUT/prof70.log" | cut -c1-150
timeout 200 python3 -m benchmarks.profile_sd_step --out "$OUT/prof8" --model llama-3-8b-instruct --quant w4a16 \
   --dtype float16 --compile --compile-scope layer --tokens 31 --steps 10 > "$OUT/prof8.log" 2>&1
echo "prof8 rc $? $(( $(date +%s) - t0 )) s"; grep -A8 -E "^(decode|verify):" "$OUT/prof8.log" | cut -c1-150
