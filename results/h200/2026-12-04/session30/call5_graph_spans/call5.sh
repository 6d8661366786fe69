STEPS=none; . benchmarks/device_env.sh; OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
L="--model llama-3-70b-instruct --quant w4a16 --dtype float16 --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 --methods hierspec --repeats 1 --cupti"
timeout 250 python3 -m benchmarks.bench_sd_loop --out "$OUT/loop" $L > "$OUT/loop.log" 2>&1
echo "loop rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\| (hierspec)" "$OUT/loop/bench_sd_loop.md"
grep -E "^- hierspec" "$OUT/loop/bench_sd_loop.md" | cut -c1-600
grep -E "device time per step" "$OUT/loop/bench_sd_loop.md" | sed 's/.*Graphs on the device/Graphs on the device/'
