STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
L="--model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods eagle,hierspec --repeats 1 --trace"
timeout 300 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop" $L > "$OUT/loop.log" 2>&1
echo "loop rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| (eagle|hierspec)" "$OUT/loop/bench_sd_loop.md"
grep -E "^Device time" "$OUT/loop/bench_sd_loop.md"
ls -la "$OUT/loop"
rm -f "$OUT"/loop/trace_*.json.gz
