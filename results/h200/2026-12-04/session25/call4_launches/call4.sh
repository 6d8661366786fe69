STEPS=none; . benchmarks/device_env.sh
timeout 280 python3 diag2.py --out "$OUT/prof70" --model llama-3-70b-instruct --quant w4a16 \
   --dtype float16 --compile --compile-scope layer --tokens 8 --steps 5 > "$OUT/diag2.log" 2>&1
echo "rc $?"; grep -E "^[0-9]+ \(|linears" "$OUT/diag2.log" | cut -c1-400
