# Session 54 (carry [".whl"], ~9.5 min, asked as nvidia-h200; on any other GPU it stops at once): where HEAD stands on
# the H200, the floors' GPU, last timed there in session 47 (W4A16 verify only) and session 39 (stacks, HierSpec).
# 1. the W4A16 g128 and W4A8 (g128, per-channel) stacks, fp16, 70B and 8B, M = 1 / 16 / 32 / 64, committed table;
# 2. the 70B HierSpec loop (AR and HierSpec in one process, replayed tau), committed table;
# 3. with what is left of TOTAL_S (default 540 s): the W4A8 entries of bucket 64 (70B and 8B, both group kinds)
#    tuned around the committed ones into a copy of the table, then the W4A8 stacks at M = 1 and 64 on the copy (the H100's own tune
#    took 70B g128 T(64)/T(1) from x1.39 to x1.15; the H200's g128 entries predate session 40's kernel).
STEPS=none; . benchmarks/device_env.sh >/dev/null 2>&1; OUT=$(cd "$OUT" && pwd)
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
name=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); echo "$name"
case $name in *H200*) ;; *) echo "no H200: nothing run"; exit 0 ;; esac
rows() { python3 -c "import json, sys; [print(r['scheme'], r['group_size'], r['model'], r['M'], round(r['stack_ms'], 3), round(r['ratio_to_M1'], 3)) for r in json.load(open(sys.argv[1]))['rows'] if r['backend'] == 'triton']" "$1"; }
timeout 150 python3 -m benchmarks.bench_quant_linear --models llama-3-70b llama-3-8b --backends triton \
  --schemes w4a16 w4a8 --dtype float16 --ms 1 16 32 64 --no-dense --budget-s 130 --out "$OUT/stack" > "$OUT/stack.log" 2>&1
echo "stack rc $? $(el) s"; rows "$OUT/stack/quant_linear.json"; rm -f "$OUT"/stack/*.png
timeout ${LOOP_S:-200} python3 -m benchmarks.bench_sd_loop --model llama-3-70b-instruct --quant w4a16 --dtype float16 \
  --compile --compile-scope layer --intermediate llama-3-8b-instruct --eagle 10,3,24 --eagle-tau 3.0 \
  --methods ar,hierspec --repeats 2 --out "$OUT/loop" > "$OUT/loop.log" 2>&1
echo "loop rc $? $(el) s"; grep -E "^\| (ar|hierspec) " "$OUT"/loop/bench_sd_loop.md; grep -E "^- hierspec:" "$OUT/loop.log" | cut -c1-300
left=$(( ${TOTAL_S:-540} - $(el) - 70 ))
if [ $left -gt 60 ]; then
  timeout $(( left + 20 )) python3 -m specbench.quantization.tune --gpu h200 --schemes w4a8 --models llama-3-70b llama-3-8b \
    --buckets 64 --groups 128 -1 --around-entry --budget-s $left --workers 14 --out "$OUT/h200.json" > "$OUT/tune.log" 2>&1
  echo "tune rc $? $(el) s"; grep -E "^\[" "$OUT/tune.log" | cut -c1-160
  cp specbench/quantization/tables/h200.json /tmp/committed.json && cp "$OUT/h200.json" specbench/quantization/tables/h200.json
  timeout 60 python3 -m benchmarks.bench_quant_linear --models llama-3-70b llama-3-8b --backends triton --schemes w4a8 \
    --dtype float16 --ms 1 64 --no-dense --budget-s 50 --out "$OUT/stack_tuned" > "$OUT/stack_tuned.log" 2>&1
  echo "stack_tuned rc $? $(el) s"; rows "$OUT/stack_tuned/quant_linear.json"; rm -f "$OUT"/stack_tuned/*.png
  cp /tmp/committed.json specbench/quantization/tables/h200.json
fi
cd "$OUT" && tar czf res.tgz $(ls -d stack* loop 2>/dev/null) && rm -rf $(ls -d stack* loop 2>/dev/null); ls
echo "total $(el) s"
