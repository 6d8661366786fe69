STEPS=none; . benchmarks/device_env.sh
timeout 280 python3 diag3.py --out "$OUT/prof70" --model llama-3-70b-instruct --quant w4a16 \
   --dtype float16 --compile --compile-scope layer --tokens 8 --steps 3 > "$OUT/diag3.log" 2>&1
echo "rc $?"; sed -n '/--- verify/,$p' "$OUT/diag3.log" | cut -c1-150
